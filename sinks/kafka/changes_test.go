package kafka_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
	"github.com/weirflow/weir/internal/kafkatest"
	"github.com/weirflow/weir/sinks/kafka"
)

// changeBatch is a batch of rows (k, n) with row kinds and, when sel is
// not nil, a selection.
func changeBatch(mem memory.Allocator, ks []string, ns []int64, kinds []arrowflow.RowKind, sel []int32) arrowflow.Batch {
	kb := array.NewStringBuilder(mem)
	defer kb.Release()
	kb.AppendValues(ks, nil)
	nb := array.NewInt64Builder(mem)
	defer nb.Release()
	nb.AppendValues(ns, nil)
	kc, nc := kb.NewArray(), nb.NewArray()
	defer kc.Release()
	defer nc.Release()
	b := arrowflow.NewChangeBatch(array.NewRecordBatch(changeSchema, []arrow.Array{kc, nc}, int64(len(ks))), kinds)
	b.Sel = sel
	return b
}

var changeSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.BinaryTypes.String},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// A change encoder (debezium-json) gets each batch's row kinds, of the
// selected rows only and in their order: a read_committed consumer applying
// the events finds the table the changelog describes. A rows-only encoder
// refuses a batch that retracts rows.
func TestChangeBatchesThroughChangeEncoder(t *testing.T) {
	c := newCluster(t)
	brokers := c.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	enc, err := format.NewEncoder(ctx, format.Config{Name: format.DebeziumJSON, Schema: changeSchema})
	if err != nil {
		t.Fatal(err)
	}
	sink, err := kafka.New(kafka.Options{Brokers: brokers, Topic: "changes", Encoder: enc, KeyColumns: []string{"k"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	w, err := sink.Open(&arrowflow.TaskInfo{Job: "changes", Name: "kafka", Subtask: 0, Parallelism: 1, Allocator: mem, FirstEpoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	I, UB, UA, D := arrowflow.Insert, arrowflow.UpdateBefore, arrowflow.UpdateAfter, arrowflow.Delete
	batches := []arrowflow.Batch{
		changeBatch(mem, []string{"a", "b", "x"}, []int64{1, 1, 99}, []arrowflow.RowKind{I, I, I}, []int32{0, 1}),
		changeBatch(mem, []string{"x", "a", "a", "y"}, []int64{5, 1, 2, 7}, []arrowflow.RowKind{D, UB, UA, I}, []int32{1, 2}),
		changeBatch(mem, []string{"b", "c"}, []int64{1, 4}, []arrowflow.RowKind{D, I}, nil),
		arrowflow.NewBatch(changeBatch(mem, []string{"d"}, []int64{8}, nil, nil).Record), // append-only
	}
	for i, b := range batches {
		if err := w.Write(ctx, b); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	p, err := w.PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Commit(ctx, 1, [][]byte{p}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	table := map[string]int{}
	for _, r := range kafkatest.ReadCommitted(t, brokers, "changes") {
		var ev struct {
			Before, After *struct {
				K string `json:"k"`
				N int64  `json:"n"`
			}
			Op string
		}
		if err := json.Unmarshal([]byte(r.Value), &ev); err != nil {
			t.Fatalf("%s: %v", r.Value, err)
		}
		switch {
		case ev.Op == "c" && ev.After != nil && ev.Before == nil:
			table[fmt.Sprintf("%s=%d", ev.After.K, ev.After.N)]++
		case ev.Op == "d" && ev.Before != nil && ev.After == nil:
			row := fmt.Sprintf("%s=%d", ev.Before.K, ev.Before.N)
			if table[row] == 0 {
				t.Fatalf("a delete of %s, which the table does not hold", row)
			}
			table[row]--
		default:
			t.Fatalf("event %s", r.Value)
		}
		if ev.Before != nil && r.Key != ev.Before.K || ev.After != nil && r.Key != ev.After.K {
			t.Errorf("event %s has key %q", r.Value, r.Key)
		}
	}
	var got []string
	for row, n := range table {
		for range n {
			got = append(got, row)
		}
	}
	sameValues(t, "the materialized table", sortStrings(got), []string{"a=2", "c=4", "d=8"})

	// A rows-only encoder: inserts pass, a retraction is refused.
	plain, err := kafka.New(kafka.Options{Brokers: brokers, Topic: "plain", Encoder: textEncoder{}})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	pw, err := plain.Open(&arrowflow.TaskInfo{Job: "plain", Name: "kafka", Subtask: 0, Parallelism: 1, Allocator: mem, FirstEpoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	if err := pw.Write(ctx, changeBatch(mem, []string{"a"}, []int64{1}, []arrowflow.RowKind{I}, nil)); err != nil {
		t.Fatalf("inserts through a rows-only encoder: %v", err)
	}
	err = pw.Write(ctx, changeBatch(mem, []string{"a", "a"}, []int64{1, 2}, []arrowflow.RowKind{UB, UA}, nil))
	if err == nil || !strings.Contains(err.Error(), "-U row (a retraction)") || !strings.Contains(err.Error(), "debezium-json") {
		t.Fatalf("a retraction through a rows-only encoder: %v", err)
	}
}
