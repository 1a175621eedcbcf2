package arrowflow_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/blackhole"
	"github.com/weirflow/weir/sources/datagen"
)

// BenchmarkPassThrough measures the runtime's per-batch overhead: a source
// feeding a blackhole sink, one subtask each, one op = one batch.
//
//   - source=replay re-emits one prepared record, so the figure is the
//     runtime alone; source=datagen adds generating the rows.
//   - edge=forward chains source and sink into one goroutine (plain calls);
//     edge=rebalance puts a bounded queue between two goroutines;
//     edge=keyed hashes the key column and splits every batch by key group
//     into two sink subtasks (with one consumer a keyed edge passes whole
//     batches on without hashing).
func BenchmarkPassThrough(b *testing.B) {
	for _, src := range []string{"replay", "datagen"} {
		for _, edge := range []string{"forward", "rebalance", "keyed"} {
			for _, size := range []int{1024, 8192, 65536} {
				b.Run(fmt.Sprintf("source=%s/edge=%s/batch=%d", src, edge, size), func(b *testing.B) {
					benchPassThrough(b, src, edge, size)
				})
			}
		}
	}
}

func benchPassThrough(b *testing.B, srcKind, edge string, size int) {
	mem := memory.DefaultAllocator
	var src arrowflow.Source
	switch srcKind {
	case "replay":
		rec := int64Record(mem, size, 1000)
		defer rec.Release()
		src = &replaySource{rec: rec, splits: 1, per: int64(b.N)}
	case "datagen":
		gen, err := datagen.New(datagen.Config{Seed: 1, Rows: int64(b.N) * int64(size), BatchSize: size, Splits: 1})
		if err != nil {
			b.Fatal(err)
		}
		src = gen
	}
	sink := blackhole.New()
	g := arrowflow.NewGraph("bench")
	s := g.Source("src", src, 1)
	var in arrowflow.Input
	switch edge {
	case "forward":
		in = arrowflow.Forward(s)
	case "rebalance":
		in = arrowflow.Rebalance(s)
	case "keyed":
		in = arrowflow.KeyBy(s, "key")
	}
	par := 1
	if edge == "keyed" {
		par = 2
	}
	g.Sink("blackhole", sink, par, in)
	job, err := g.Plan(arrowflow.Options{Allocator: mem})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	if err := job.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if sink.Rows() != int64(b.N)*int64(size) {
		b.Fatalf("sink got %d rows, want %d", sink.Rows(), int64(b.N)*int64(size))
	}
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)*float64(size)/secs, "rows/s")
	b.ReportMetric(float64(b.N)/secs, "batches/s")
}
