package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
	"github.com/weirflow/weir/kernels"
)

// checkUpsert checks the options of the upsert mode (Options.Upsert).
func checkUpsert(o *Options) error {
	if o.BufferFlushMaxRows < 0 || o.BufferFlushInterval < 0 {
		return fmt.Errorf("kafka sink: 'sink.buffer-flush.max-rows' %d and 'sink.buffer-flush.interval' %s must not be negative",
			o.BufferFlushMaxRows, o.BufferFlushInterval)
	}
	if (o.BufferFlushMaxRows > 0) != (o.BufferFlushInterval > 0) {
		// As Flink: one without the other is a mistake, not "off".
		return fmt.Errorf("kafka sink: 'sink.buffer-flush.max-rows' (%d) and 'sink.buffer-flush.interval' (%s) must both be greater than zero to buffer, or both zero",
			o.BufferFlushMaxRows, o.BufferFlushInterval)
	}
	if !o.Upsert {
		if o.BufferFlushMaxRows > 0 {
			return errors.New("kafka sink: 'sink.buffer-flush.*' buffers the changes of an upsert sink (upsert-kafka) only")
		}
		return nil
	}
	if len(o.KeyColumns) == 0 {
		return errors.New("kafka sink: an upsert sink needs key columns (the table's PRIMARY KEY)")
	}
	if _, ok := o.Encoder.(format.ChangeEncoder); ok {
		return errors.New("kafka sink: an upsert sink writes each key's latest row; its value format must write rows (json, avro, csv, raw...), not changes")
	}
	if o.Partitioner != "" && o.Partitioner != PartitionDefault {
		return fmt.Errorf("kafka sink: an upsert sink partitions by the key, so that a key's changes stay in order; partitioner %q does not", o.Partitioner)
	}
	return nil
}

// writeUpsert writes the rows of rec (b's selected rows) as upserts:
// inserts and update-afters as key and value, deletes as tombstones,
// update-befores not at all. With a buffer, the records wait in it,
// latest per key. It returns how many records it produced.
func (w *writer) writeUpsert(ctx context.Context, b arrowflow.Batch, rec arrow.RecordBatch) (int, error) {
	rows := int(rec.NumRows())
	w.kinds = arrowflow.GatherKinds(w.kinds, b)
	kind := func(i int) arrowflow.RowKind {
		if w.kinds == nil {
			return arrowflow.Insert
		}
		return w.kinds[i]
	}
	keys, err := w.keys(rec)
	if err != nil {
		return 0, err
	}
	var vidx []int32 // the rows with a value: inserts and update-afters
	for i := range rows {
		if k := kind(i); k == arrowflow.Insert || k == arrowflow.UpdateAfter {
			vidx = append(vidx, int32(i))
		}
		if keys[i] == nil {
			return 0, fmt.Errorf("kafka sink: topic %s: a %v row with a NULL key (key columns %v); an upsert sink's key is the PRIMARY KEY, which is NOT NULL",
				w.s.opts.Topic, kind(i), w.s.opts.KeyColumns)
		}
	}
	vals, err := w.encodeRows(rec, vidx, len(vidx) == rows)
	if err != nil {
		return 0, err
	}
	var ts *array.Timestamp
	if w.tsIdx >= 0 {
		ts = rec.Column(w.tsIdx).(*array.Timestamp)
	}
	recs := make([]kgo.Record, rows)
	cl := w.client()
	produced, j := 0, 0
	for i := range rows {
		r := &recs[i]
		switch kind(i) {
		case arrowflow.UpdateBefore:
			w.s.droppedUB.Add(1)
			continue
		case arrowflow.Delete:
			// A tombstone: the key with a null value.
		default:
			r.Value = vals[j]
			if r.Value == nil {
				r.Value = []byte{} // an empty value is not a tombstone
			}
			j++
		}
		r.Key = keys[i]
		if ts != nil && ts.IsValid(i) {
			r.Timestamp = ts.Value(i).ToTime(w.unit)
		}
		if w.buf != nil {
			w.buf.put(w.s, r)
			continue
		}
		cl.Produce(ctx, r, w.promise)
		produced++
	}
	if w.buf != nil && (len(w.buf.recs) >= w.s.opts.BufferFlushMaxRows || w.now().Sub(w.buf.last) >= w.s.opts.BufferFlushInterval) {
		if err := w.flushBuffer(ctx); err != nil { // counts what it produces in w.n
			return produced, err
		}
	}
	return produced, nil
}

// encodeRows encodes the values of the rows idx of rec (all of them when
// all is set) and returns them in order.
func (w *writer) encodeRows(rec arrow.RecordBatch, idx []int32, all bool) ([][]byte, error) {
	if len(idx) == 0 {
		return nil, nil
	}
	vrec := w.valueRecord(rec)
	if !all {
		mem := w.info.Allocator
		if mem == nil {
			mem = memory.DefaultAllocator
		}
		taken, err := kernels.TakeRecord(mem, vrec, idx)
		vrec.Release()
		if err != nil {
			return nil, fmt.Errorf("kafka sink: %w", err)
		}
		vrec = taken
	}
	defer vrec.Release()
	var values slabWriter
	if err := w.s.opts.Encoder.Encode(vrec, values.emit); err != nil {
		return nil, fmt.Errorf("kafka sink: encode: %w", err)
	}
	return values.slices(len(idx)), nil
}

func (w *writer) now() time.Time {
	if w.info.Clock != nil {
		return w.info.Clock.Now()
	}
	return time.Now()
}

// upsertBuffer holds the latest change of each key not yet produced
// (Flink's reducing buffer of upsert-kafka).
type upsertBuffer struct {
	byKey map[string]int // index in recs
	recs  []*kgo.Record  // in the order keys first came
	last  time.Time      // the last flush
}

// put keeps r as its key's latest change.
func (b *upsertBuffer) put(s *Sink, r *kgo.Record) {
	if i, ok := b.byKey[string(r.Key)]; ok {
		b.recs[i] = r
		s.folded.Add(1)
		return
	}
	b.byKey[string(r.Key)] = len(b.recs)
	b.recs = append(b.recs, r)
}

// flushBuffer produces the buffered changes, if any, into the open
// epoch's transaction.
func (w *writer) flushBuffer(ctx context.Context) error {
	b := w.buf
	if b == nil {
		return nil
	}
	b.last = w.now()
	if len(b.recs) == 0 {
		return nil
	}
	cl := w.client()
	for _, r := range b.recs {
		cl.Produce(ctx, r, w.promise)
	}
	w.n += int64(len(b.recs))
	clear(b.byKey)
	clear(b.recs)
	b.recs = b.recs[:0]
	return nil
}
