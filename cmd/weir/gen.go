package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/spf13/cobra"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
	kafkasink "github.com/weirflow/weir/sinks/kafka"
	"github.com/weirflow/weir/sources/datagen"
)

type genOptions struct {
	brokers     []string
	topic       string
	format      string
	registry    string
	rows        int64
	rate        float64
	seed        uint64
	parallelism int
}

func newGenCommand() *cobra.Command {
	o := genOptions{}
	cmd := &cobra.Command{
		Use:   "gen --brokers HOST:PORT --topic NAME",
		Short: "Produce generated events into a Kafka topic",
		Long: `Produces datagen rows (id, key, category, price, ts: the rows of
'weir job' and the demo) into a Kafka topic, keyed by key, as JSON,
CSV, Avro or Avro with the Confluent Schema Registry wire format.
Rows are a pure function of --seed and their number, so two runs with the
same flags produce the same records.

Each row's event time (ts) advances with its number; with one producer
(the default --parallelism 1) every partition receives its rows in order,
at most 100 ms out of order.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGen(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.brokers, "brokers", []string{"127.0.0.1:9092"}, "bootstrap brokers (properties.bootstrap.servers)")
	f.StringVar(&o.topic, "topic", "events", "topic to produce to (created when missing, if the broker allows)")
	f.StringVar(&o.format, "format", "json", "value format: json, csv, avro, avro-confluent")
	f.StringVar(&o.registry, "registry", "", "schema registry URL for avro-confluent (e.g. the one `weir kafka` prints)")
	f.Int64Var(&o.rows, "count", 100_000, "rows to produce (0: until interrupted)")
	f.Float64Var(&o.rate, "rate", 0, "rows per second (0: as fast as possible)")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the generated rows")
	f.IntVar(&o.parallelism, "parallelism", 1, "producers")
	return cmd
}

// genSource is the datagen source of the built-in jobs and `weir gen`:
// default columns, event times at most 100 ms out of order within a
// split.
func genSource(seed uint64, rows int64, rate float64, splits int) (*datagen.Source, error) {
	return datagen.New(datagen.Config{
		Seed: seed, Rows: rows, RowsPerSecond: rate, Splits: splits,
		EventTime: datagen.EventTimeConfig{MaxOutOfOrderness: 100 * time.Millisecond},
	})
}

func runGen(cmd *cobra.Command, o genOptions) error {
	if o.parallelism < 1 {
		return fmt.Errorf("gen: --parallelism %d: want at least 1", o.parallelism)
	}
	if o.topic == "" || len(o.brokers) == 0 {
		return errors.New("gen: --brokers and --topic are required")
	}
	// One split per producer: each producer, and so each partition,
	// gets rows in event-time order (up to the generator's jitter).
	src, err := genSource(o.seed, o.rows, o.rate, o.parallelism)
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	fc := format.Config{Name: o.format, Schema: src.Schema(), Options: map[string]string{}}
	if o.registry != "" {
		if o.format != "avro-confluent" {
			return fmt.Errorf("gen: --registry is for --format avro-confluent")
		}
		fc.Options["avro-confluent.url"] = o.registry
		fc.Options["avro-confluent.subject"] = o.topic + "-value"
	}
	enc, err := format.NewEncoder(cmd.Context(), fc)
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	sink, err := kafkasink.New(kafkasink.Options{
		Brokers: o.brokers, Topic: o.topic, Encoder: enc, KeyColumns: []string{"key"},
		DeliveryGuarantee: kafkasink.AtLeastOnce,
	})
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	defer sink.Close()
	g := arrowflow.NewGraph("weir-gen")
	rows := g.Source("generate", src, o.parallelism)
	g.Sink("kafka", sink, o.parallelism, arrowflow.Forward(rows))
	job, err := g.Plan(arrowflow.Options{Allocator: memory.DefaultAllocator, CheckpointInterval: time.Second})
	if err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	start := time.Now()
	err = job.Run(cmd.Context())
	out := cmd.OutOrStdout()
	if err != nil && cmd.Context().Err() == nil {
		return fmt.Errorf("gen: %w", err)
	}
	fmt.Fprintf(out, "gen: produced %d rows to %s on %s as %s in %.2fs\n",
		sink.Produced(), o.topic, strings.Join(o.brokers, ","), o.format, time.Since(start).Seconds())
	return nil
}
