package iceberg

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/weirflow/weir/arrowflow"
)

// flakyCatalog answers a commit with an error that does not say whether
// it landed (as a REST catalog's 502 or a timeout does): after applying it
// (landed) or without applying it.
type flakyCatalog struct {
	catalog.Catalog
	landed  bool
	fail    atomic.Int32 // commits still to fail
	commits atomic.Int32 // CommitTable calls
}

var errGateway = errors.New("502 Bad Gateway")

func (c *flakyCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	t, err := c.Catalog.LoadTable(ctx, id)
	if err != nil {
		return nil, err
	}
	return table.New(t.Identifier(), t.Metadata(), t.MetadataLocation(), t.FS, c), nil
}

func (c *flakyCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	c.commits.Add(1)
	if c.fail.Add(-1) < 0 {
		return c.Catalog.CommitTable(ctx, id, reqs, ups)
	}
	if c.landed {
		if _, _, err := c.Catalog.CommitTable(ctx, id, reqs, ups); err != nil {
			return nil, "", err
		}
	}
	return nil, "", errGateway
}

func TestAmbiguousCommitErrorsAreResolvedByLookingNotRetrying(t *testing.T) {
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for _, landed := range []bool{true, false} {
		name := map[bool]string{true: "landed", false: "lost"}[landed]
		t.Run(name, func(t *testing.T) {
			s, err := New(ctx, Options{Catalog: CatalogOptions{Warehouse: t.TempDir()}, Table: "db.t"}, schema)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			flaky := &flakyCatalog{Catalog: s.cat, landed: landed}
			flaky.fail.Store(1)
			s.cat = flaky
			w, err := s.Open(&arrowflow.TaskInfo{Job: "job", FirstEpoch: 1, Allocator: memory.DefaultAllocator})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			b := array.NewInt64Builder(memory.DefaultAllocator)
			b.AppendValues([]int64{1, 2, 3}, nil)
			col := b.NewArray()
			b.Release()
			if err := w.Write(ctx, arrowflow.NewBatch(array.NewRecordBatch(schema, []arrow.Array{col}, 3))); err != nil {
				t.Fatal(err)
			}
			col.Release()
			p, err := w.PreCommit(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Commit(ctx, 1, [][]byte{p})
			if landed && err != nil {
				t.Fatalf("the commit landed behind an ambiguous error and the sink did not find it: %v", err)
			}
			if !landed {
				if err == nil || !errors.Is(err, errGateway) || !strings.Contains(err.Error(), "commit id") {
					t.Fatalf("a lost commit behind an ambiguous error: %v, want the error with the commit id", err)
				}
				if n := flaky.commits.Load(); n != 1 {
					t.Fatalf("%d catalog commits: an ambiguous error was retried blindly", n)
				}
				// Recovery commits the epoch again, after looking.
				if err := s.Commit(ctx, 1, [][]byte{p}); err != nil {
					t.Fatal(err)
				}
			}
			tbl, err := s.cat.LoadTable(ctx, s.ident)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(tbl.Metadata().Snapshots()); n != 1 {
				t.Fatalf("%d snapshots, want the epoch once", n)
			}
			if got := lastCommitted(tbl, "job"); got != 1 {
				t.Fatalf("last committed epoch %d, want 1", got)
			}
		})
	}
}
