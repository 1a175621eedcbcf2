package kafka_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/kafkatest"
)

// newCluster starts a kfake broker on a loopback port, stopped when the
// test ends.
func newCluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	opts = append([]kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(3)}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// textEncoder writes a row as its columns' values joined by commas; the
// tests only need an encoder whose output they can compare.
type textEncoder struct{}

func (textEncoder) Encode(rec arrow.RecordBatch, emit func(int, []byte) error) error {
	var buf []byte
	for i := 0; i < int(rec.NumRows()); i++ {
		buf = buf[:0]
		for c := 0; c < int(rec.NumCols()); c++ {
			if c > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, rec.Column(c).ValueStr(i)...)
		}
		if err := emit(i, buf); err != nil {
			return err
		}
	}
	return nil
}

// readCommitted reads topic with an independent read_committed consumer
// and returns the values sorted, and each value's key.
func readCommitted(t *testing.T, brokers []string, topic string) (values []string, keys map[string]string) {
	t.Helper()
	recs := kafkatest.ReadCommitted(t, brokers, topic)
	keys = map[string]string{}
	for _, r := range recs {
		keys[r.Value] = r.Key
	}
	return kafkatest.Values(recs), keys
}

func sameValues(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d records, want %d", what, len(got), len(want))
	}
	for i := 0; i < len(got) && i < len(want); i++ {
		if got[i] != want[i] {
			t.Fatalf("%s: record %d (sorted) = %q, want %q", what, i, got[i], want[i])
		}
	}
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	var dup []string
	for v, n := range seen {
		if n > 1 {
			dup = append(dup, fmt.Sprintf("%s x%d", v, n))
		}
	}
	if len(dup) > 0 {
		t.Errorf("%s: duplicates: %s", what, strings.Join(dup[:min(5, len(dup))], "; "))
	}
}

func sortStrings(s []string) []string {
	sort.Strings(s)
	return s
}

// stringBatch is a one-row batch with a string column "v".
func stringBatch(mem memory.Allocator, v string) arrowflow.Batch {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Append(v)
	col := b.NewArray()
	defer col.Release()
	sc := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.String}}, nil)
	return arrowflow.NewBatch(array.NewRecordBatch(sc, []arrow.Array{col}, 1))
}
