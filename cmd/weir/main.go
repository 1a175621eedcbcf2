// Command weir runs weir's stream processing jobs.
//
// Usage:
//
//	weir demo       Nexmark bids through an embedded Kafka into Iceberg tables (auction stats, hot auctions), exactly once
//	weir run        run a streaming SQL job (Flink SQL dialect), exactly once
//	weir bench      run the Nexmark queries and report throughput per core
//	weir job        run a built-in job into a Parquet folder, an Iceberg table or Kafka, exactly once
//	weir table      inspect and maintain an Iceberg table or a Parquet sink folder
//	weir kafka      run an embedded Kafka-protocol broker on 127.0.0.1
//	weir gen        produce generated events into a Kafka topic
//	weir savepoint  take a savepoint of a running job
//	weir version    print version information
//
// Every subcommand has --help.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "weir:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "weir",
		Short: "weir is a stream processing engine over Apache Arrow",
		Long: `weir runs streaming pipelines (read streams, transform and aggregate them
over event-time windows, write the results exactly once) as one Go binary.
Data moves as Apache Arrow record batches through vectorized kernels, and
every epoch closes with an aligned checkpoint.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newDemoCommand(), newRunCommand(), newBenchCommand(), newJobCommand(), newKafkaCommand(), newGenCommand(), newSavepointCommand(), newTableCommand(), newVersionCommand())
	return root
}
