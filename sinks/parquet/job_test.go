package parquet_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/sinks/parquet"
	"github.com/weirflow/weir/sources/datagen"
)

// A real job: two datagen subtasks, a filter (so the sink sees selection
// vectors), a rebalance into three sink subtasks, checkpoints every few
// milliseconds. The table must hold exactly datagen's kept rows, each
// once, over several committed epochs.
func TestJobOutputMatchesDatagenOracle(t *testing.T) {
	mem := newMem(t)
	const rows = 12000
	src, err := datagen.New(datagen.Config{
		Seed: 7, Rows: rows, BatchSize: 97, Splits: 5, RowsPerSecond: 60000,
		Fields: []datagen.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64, Kind: datagen.Sequence},
			{Name: "category", Type: arrow.BinaryTypes.String, Values: []string{"books", "toys", "a/b", "x=y", "100%"}, NullRate: 0.1},
			{Name: "price", Type: arrow.PrimitiveTypes.Float64, Min: 1, Max: 1000, Decimals: 2, NullRate: 0.05},
			{Name: "day", Type: arrow.FixedWidthTypes.Date32, Min: 20454, Max: 20456},
			{Name: "word", Type: arrow.BinaryTypes.String, Length: 6, NullRate: 0.1},
			{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
		},
		EventTime: datagen.EventTimeConfig{Column: "ts"},
	})
	if err != nil {
		t.Fatal(err)
	}
	keep := func(id int64) bool { return id%3 != 1 }
	sink := newSink(t, parquet.Options{PartitionBy: []string{"day", "category"}, TargetFileSize: 8 << 10, RowGroupSize: 500})
	root := sink.Options().Path

	g := arrowflow.NewGraph("parquet-oracle")
	gen := g.Source("gen", src, 2)
	f := g.Operator("keep", ops.Filter(func(rec arrow.RecordBatch, i int) bool {
		return keep(rec.Column(0).(*array.Int64).Value(i))
	}), 2, arrowflow.Forward(gen))
	g.Sink("out", sink, 3, arrowflow.Rebalance(f))
	j, err := g.Plan(arrowflow.Options{Allocator: mem, CheckpointInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Run(ctx); err != nil {
		t.Fatal(err)
	}

	entries, err := os.ReadDir(filepath.Join(root, "_weir", "commits", "parquet-oracle"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 2 {
		t.Fatalf("%d epochs committed; the test needs several", len(entries))
	}
	// The last epoch may have had no rows, and then it has no entry.
	last, err := sink.LastCommittedEpoch(ctx, "parquet-oracle")
	if err != nil || last != j.LatestCheckpoint().Epoch && last+1 != j.LatestCheckpoint().Epoch ||
		entries[len(entries)-1].Name() != fmt.Sprintf("%020d.json", last) {
		t.Fatalf("LastCommittedEpoch = %d, %v; the job's last epoch is %d, the log's last entry %s",
			last, err, j.LatestCheckpoint().Epoch, entries[len(entries)-1].Name())
	}

	var want [][]any
	for id := int64(0); id < rows; id++ {
		if !keep(id) {
			continue
		}
		row := src.Row(id)
		for c, v := range row {
			switch x := v.(type) {
			case arrow.Date32:
				row[c] = x.ToTime()
			case arrow.Timestamp:
				row[c] = time.UnixMilli(int64(x)).UTC()
			}
		}
		want = append(want, row)
	}
	checkTableOf(t, root, src.Schema(), mem, want)
}
