package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
)

type kafkaOptions struct {
	port       int
	dataDir    string
	partitions int
	topics     []string
	sync       bool
}

func newKafkaCommand() *cobra.Command {
	o := kafkaOptions{}
	cmd := &cobra.Command{
		Use:   "kafka",
		Short: "Run an embedded Kafka-protocol broker on a loopback address",
		Long: `Runs kfake, a Kafka-protocol broker written in Go (transactions,
read_committed, consumer groups), on 127.0.0.1, for development, demos and
tests. Any Kafka client connects to the printed address.

With --data-dir (the default) topics, offsets, groups and transactions
are kept in that folder and a restart picks them up; open transactions
survive only a clean stop (SIGINT or SIGTERM), as with a controlled
shutdown. --data-dir "" keeps everything in memory.

This is not a production broker: one node, no replication, no
authentication. Point weir at a real cluster for production.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runKafka(cmd, o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.port, "port", 9092, "TCP port on 127.0.0.1 (0: any free port)")
	f.StringVar(&o.dataDir, "data-dir", "weir-kafka", "folder that persists the broker's data (empty: memory only)")
	f.IntVar(&o.partitions, "partitions", 4, "partitions of topics created automatically")
	f.StringSliceVar(&o.topics, "topic", nil, "topic to create at start, as name or name:partitions (repeatable)")
	f.BoolVar(&o.sync, "sync", false, "fsync every write to --data-dir (slower; survives power loss)")
	return cmd
}

// kfakeOptions turns the flags into broker options.
func kfakeOptions(o kafkaOptions) ([]kfake.Opt, error) {
	if o.port < 0 || o.port > 65535 {
		return nil, fmt.Errorf("--port %d: want 0-65535", o.port)
	}
	if o.partitions < 1 {
		return nil, fmt.Errorf("--partitions %d: want at least 1", o.partitions)
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1), kfake.Ports(o.port), kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(o.partitions), kfake.ClusterID("weir"),
	}
	for _, t := range o.topics {
		name, parts, ok := strings.Cut(t, ":")
		n := o.partitions
		if ok {
			var err error
			if n, err = strconv.Atoi(parts); err != nil || n < 1 {
				return nil, fmt.Errorf("--topic %q: partitions must be a positive number", t)
			}
		}
		if name == "" {
			return nil, fmt.Errorf("--topic %q: empty topic name", t)
		}
		opts = append(opts, kfake.SeedTopics(int32(n), name))
	}
	if o.dataDir != "" {
		abs, err := filepath.Abs(o.dataDir)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return nil, fmt.Errorf("--data-dir: %w", err)
		}
		opts = append(opts, kfake.DataDir(abs))
		if o.sync {
			opts = append(opts, kfake.SyncWrites())
		}
	} else if o.sync {
		return nil, errors.New("--sync needs --data-dir")
	}
	return opts, nil
}

func runKafka(cmd *cobra.Command, o kafkaOptions) error {
	opts, err := kfakeOptions(o)
	if err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("kafka: start broker: %w", err)
	}
	out := cmd.OutOrStdout()
	addrs := c.ListenAddrs()
	fmt.Fprintf(out, "kafka: listening on %s\n", strings.Join(addrs, ","))
	if o.dataDir != "" {
		fmt.Fprintf(out, "kafka: data in %s\n", o.dataDir)
	} else {
		fmt.Fprintln(out, "kafka: data in memory only")
	}
	fmt.Fprintf(out, "connect with --brokers %s (properties.bootstrap.servers); stop with Ctrl-C\n", strings.Join(addrs, ","))
	<-cmd.Context().Done()
	// A clean stop persists open transactions and offsets.
	c.Close()
	fmt.Fprintln(out, "kafka: stopped")
	return nil
}
