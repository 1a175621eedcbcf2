package iceberg_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/sinks/iceberg"
)

// Upsert mode frees every buffer it allocates: the equality delete
// records were retained once more than released (WriteEqualityDeletes,
// unlike WriteRecords, does not take the caller's reference), leaking the
// gathered key column at every pre-commit.
func TestUpsertReleasesEveryBuffer(t *testing.T) {
	for name, part := range map[string][]string{"unpartitioned": nil, "bucket(k)": {"bucket(4, k)"}} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			wh := t.TempDir()
			s := newSink(t, wh, func(o *iceberg.Options) { o.UpsertKeys = []string{"k"}; o.PartitionBy = part })
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			w, err := s.Open(&arrowflow.TaskInfo{Job: "job", Name: "sink", Subtask: 0, Parallelism: 1, FirstEpoch: 1, Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			for e := uint64(1); e <= 3; e++ {
				if err := w.Write(ctx, batch(mem, 0, 100)); err != nil {
					t.Fatal(err)
				}
				p, err := w.PreCommit(ctx, e)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Commit(ctx, e, [][]byte{p}); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Write(ctx, batch(mem, 0, 10)); err != nil { // an open epoch at Close
				t.Fatal(err)
			}
			w.Close()
			mem.AssertSize(t, 0)
			if got := scanKeys(t, wh); len(got) != 100 {
				t.Fatalf("%d rows, want 100", len(got))
			}
		})
	}
}
