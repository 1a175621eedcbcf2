package arrowflow

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/kernels"
)

// target is one consumer channel: a gate and the channel index in it.
type target struct {
	gate *gate
	ch   int
}

// edgeWriter is the producer side of one edge for one producer subtask: it
// distributes batches to the consumer subtasks as the edge kind says and
// broadcasts control messages to all of them.
type edgeWriter struct {
	edge    string // "producer -> consumer", for errors
	kind    EdgeKind
	keys    []string
	side    string   // the producer's side output this edge carries; "" for the main output
	targets []target // indexed by consumer subtask (one target for pointwise forward)
	maxPar  int
	next    int // round-robin position for rebalance

	// keyed exchange: the key column indices resolved against the last
	// schema seen, and scratch reused across batches.
	schema *arrow.Schema
	keyIdx []int
	cols   []arrow.Array
	part   *kernels.Partitioner
	sels   [][]int32
}

func (w *edgeWriter) emit(b Batch) error {
	switch {
	case w.kind == KeyedEdge:
		return w.emitKeyed(b)
	case len(w.targets) == 1:
		return w.targets[0].gate.push(w.targets[0].ch, Message{Kind: KindBatch, Batch: b})
	case w.kind == RebalanceEdge:
		t := w.targets[w.next]
		w.next = (w.next + 1) % len(w.targets)
		return t.gate.push(t.ch, Message{Kind: KindBatch, Batch: b})
	case w.kind == BroadcastEdge:
		for i, t := range w.targets {
			m := b
			if i < len(w.targets)-1 {
				m = b.Share()
			}
			if err := t.gate.push(t.ch, Message{Kind: KindBatch, Batch: m}); err != nil {
				if i < len(w.targets)-1 {
					b.Release()
				}
				return err
			}
		}
		return nil
	}
	b.Release()
	return fmt.Errorf("BUG: edge %s of kind %s has %d targets", w.edge, w.kind, len(w.targets))
}

// emitKeyed sends each selected row to the subtask owning its key group.
// The record is not copied: every consumer gets a reference to the same
// record with a selection vector of its own rows (an in-process exchange
// needs no materialisation; the consumer materialises if and when it has
// to).
func (w *edgeWriter) emitKeyed(b Batch) error {
	if err := w.resolveKeys(b.Record); err != nil {
		b.Release()
		return err
	}
	if len(w.targets) == 1 {
		return w.targets[0].gate.push(w.targets[0].ch, Message{Kind: KindBatch, Batch: b})
	}
	defer b.Release()
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	for i, k := range w.keyIdx {
		w.cols[i] = b.Record.Column(k)
	}
	if w.part == nil {
		part, err := kernels.NewPartitioner(w.maxPar, len(w.targets))
		if err != nil {
			return fmt.Errorf("edge %s: %w", w.edge, err)
		}
		w.part = part
	}
	_, counts, err := w.part.Assign(w.cols, b.Sel)
	if err != nil {
		return fmt.Errorf("edge %s: %w", w.edge, err)
	}
	// Each consumer takes ownership of its selection vector, so those are
	// new per batch, sized exactly; the slice of them is scratch.
	sels := w.sels
	for d, c := range counts {
		sels[d] = nil
		if c > 0 {
			sels[d] = make([]int32, 0, c)
		}
	}
	w.part.Split(b.Sel, sels)
	for d, sel := range sels {
		if sel == nil {
			continue
		}
		sels[d] = nil // the consumer owns it now
		b.Record.Retain()
		t := w.targets[d]
		if err := t.gate.push(t.ch, Message{Kind: KindBatch, Batch: Batch{Record: b.Record, Sel: sel, Kinds: b.Kinds}}); err != nil {
			return err
		}
	}
	return nil
}

func (w *edgeWriter) resolveKeys(rec arrow.RecordBatch) error {
	schema := rec.Schema()
	if schema == w.schema {
		return nil
	}
	if w.schema != nil && schema.Equal(w.schema) {
		w.schema = schema
		return nil
	}
	idx := make([]int, len(w.keys))
	for i, name := range w.keys {
		found := schema.FieldIndices(name)
		if len(found) != 1 {
			return fmt.Errorf("edge %s: key column %q not found (or ambiguous) in %s", w.edge, name, schema)
		}
		idx[i] = found[0]
	}
	w.schema, w.keyIdx = schema, idx
	w.cols = make([]arrow.Array, len(idx))
	w.sels = make([][]int32, len(w.targets))
	return nil
}

// broadcast sends a control message to every consumer subtask.
func (w *edgeWriter) broadcast(m Message) error {
	for _, t := range w.targets {
		if err := t.gate.push(t.ch, m); err != nil {
			return err
		}
	}
	return nil
}
