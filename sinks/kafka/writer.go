package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
	"github.com/weirflow/weir/internal/failpoint"
)

// writer is one subtask's writer.
type writer struct {
	s      *Sink
	info   *arrowflow.TaskInfo
	prefix string
	epoch  uint64 // the open epoch
	cur    *slot  // the slot whose transaction holds the open epoch
	alo    *kgo.Client
	n      int64 // records produced in the open epoch

	mu     sync.Mutex
	perr   error // first produce error
	schema *arrow.Schema
	keyIdx []int
	// valIdx are the columns of the value (Options.ValueColumns), nil for
	// every column; valSchema is their schema.
	valIdx    []int
	valSchema *arrow.Schema
	tsIdx     int
	unit      arrow.TimeUnit
	kinds     []arrowflow.RowKind // scratch: the row kinds of a batch's selected rows

	// buf is an upsert sink's buffer of the latest change per key
	// (Options.BufferFlushMaxRows), nil when buffering is off.
	buf *upsertBuffer
}

func (w *writer) client() *kgo.Client {
	if w.alo != nil {
		return w.alo
	}
	return w.cur.client
}

func (w *writer) bind(schema *arrow.Schema) error {
	if w.schema != nil && w.schema.Equal(schema) {
		return nil
	}
	w.keyIdx = w.keyIdx[:0]
	for _, k := range w.s.opts.KeyColumns {
		i, err := columnIndex(schema, k, "key")
		if err != nil {
			return err
		}
		if w.s.opts.KeyEncoder == nil {
			switch schema.Field(i).Type.ID() {
			case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY,
				arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
			default:
				return fmt.Errorf("kafka sink: key column %q of type %s needs a key format (key.format)", k, schema.Field(i).Type)
			}
		}
		w.keyIdx = append(w.keyIdx, i)
	}
	w.valIdx, w.valSchema = nil, nil
	if cols := w.s.opts.ValueColumns; cols != nil {
		fields := make([]arrow.Field, len(cols))
		for j, c := range cols {
			i, err := columnIndex(schema, c, "value")
			if err != nil {
				return err
			}
			w.valIdx = append(w.valIdx, i)
			fields[j] = schema.Field(i)
		}
		w.valSchema = arrow.NewSchema(fields, nil)
	}
	w.tsIdx = -1
	if c := w.s.opts.TimestampColumn; c != "" {
		i, err := columnIndex(schema, c, "timestamp")
		if err != nil {
			return err
		}
		ts, ok := schema.Field(i).Type.(*arrow.TimestampType)
		if !ok {
			return fmt.Errorf("kafka sink: timestamp column %q has type %s, not a timestamp", c, schema.Field(i).Type)
		}
		w.tsIdx, w.unit = i, ts.Unit
	}
	w.schema = schema
	return nil
}

func (w *writer) promise(_ *kgo.Record, err error) {
	if err == nil {
		w.s.produced.Add(1)
		return
	}
	{
		w.mu.Lock()
		if w.perr == nil {
			w.perr = err
		}
		w.mu.Unlock()
	}
}

func (w *writer) produceErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.perr
}

// Write implements arrowflow.SinkWriter.
func (w *writer) Write(ctx context.Context, b arrowflow.Batch) error {
	defer b.Release()
	if b.NumRows() == 0 {
		return nil
	}
	if err := w.produceErr(); err != nil {
		return fmt.Errorf("kafka sink: produce to %s: %w", w.s.opts.Topic, err)
	}
	rec := b.Record
	if b.Sel != nil {
		m, err := b.Materialize(w.info.Allocator)
		if err != nil {
			return err
		}
		defer m.Release()
		rec = m
	}
	if err := w.bind(rec.Schema()); err != nil {
		return err
	}
	if w.alo == nil && w.cur == nil {
		sl, err := w.s.acquire(ctx, w)
		if err != nil {
			return err
		}
		if err := sl.client.BeginTransaction(); err != nil {
			return fmt.Errorf("kafka sink: begin transaction %s: %w", sl.txnID, err)
		}
		w.cur = sl
		w.n = 0
	}
	var (
		n   int
		err error
	)
	if w.s.opts.Upsert {
		n, err = w.writeUpsert(ctx, b, rec)
	} else {
		n, err = w.writeRows(ctx, b, rec)
	}
	if err != nil {
		return err
	}
	w.n += int64(n)
	if w.alo == nil && w.epoch > w.info.FirstEpoch && failpoint.Armed(failpoint.NextEpochWritten) {
		// Crash tests: the records must be in the broker's open
		// transaction when the process dies.
		if err := w.client().Flush(ctx); err == nil {
			failpoint.Inject(failpoint.NextEpochWritten)
		}
	}
	return nil
}

// writeRows produces one record per row of rec (b's selected rows) and
// returns how many.
func (w *writer) writeRows(ctx context.Context, b arrowflow.Batch, rec arrow.RecordBatch) (int, error) {
	rows := int(rec.NumRows())
	keys, err := w.keys(rec)
	if err != nil {
		return 0, err
	}
	recs := make([]kgo.Record, rows)
	var values slabWriter
	vrec := w.valueRecord(rec)
	err = w.encode(b, vrec, &values)
	vrec.Release()
	if err != nil {
		return 0, err
	}
	for i, v := range values.slices(rows) {
		recs[i].Value = v
	}
	var ts *array.Timestamp
	if w.tsIdx >= 0 {
		ts = rec.Column(w.tsIdx).(*array.Timestamp)
	}
	cl := w.client()
	for i := range recs {
		r := &recs[i]
		if keys != nil {
			r.Key = keys[i]
		}
		if ts != nil && ts.IsValid(i) {
			r.Timestamp = ts.Value(i).ToTime(w.unit)
		}
		cl.Produce(ctx, r, w.promise)
	}
	return rows, nil
}

// valueRecord returns the columns of rec the value encoder takes
// (Options.ValueColumns), with a reference the caller releases.
func (w *writer) valueRecord(rec arrow.RecordBatch) arrow.RecordBatch {
	if w.valIdx == nil {
		rec.Retain()
		return rec
	}
	cols := make([]arrow.Array, len(w.valIdx))
	for j, i := range w.valIdx {
		cols[j] = rec.Column(i)
	}
	return array.NewRecordBatch(w.valSchema, cols, rec.NumRows())
}

// encode serializes the values of rec, the rows of b in order: with
// their row kinds through a format.ChangeEncoder (debezium-json); an
// encoder of rows only refuses a batch that retracts rows, which it could
// only write as if they were added.
func (w *writer) encode(b arrowflow.Batch, rec arrow.RecordBatch, values *slabWriter) error {
	enc := w.s.opts.Encoder
	if b.Kinds != nil {
		if ce, ok := enc.(format.ChangeEncoder); ok {
			w.kinds = arrowflow.GatherKinds(w.kinds, b)
			if err := ce.EncodeChanges(rec, w.kinds, values.emit); err != nil {
				return fmt.Errorf("kafka sink: encode: %w", err)
			}
			return nil
		}
		for k := range b.NumRows() {
			if kind := b.Kind(k); kind.IsRetraction() {
				return fmt.Errorf("kafka sink: topic %s: a %v row (a retraction) reached a value format that writes rows only; write changes with 'format' = 'debezium-json'", w.s.opts.Topic, kind)
			}
		}
	}
	if err := enc.Encode(rec, values.emit); err != nil {
		return fmt.Errorf("kafka sink: encode: %w", err)
	}
	return nil
}

// keys returns each row's record key, or nil without key columns.
func (w *writer) keys(rec arrow.RecordBatch) ([][]byte, error) {
	if len(w.keyIdx) == 0 {
		return nil, nil
	}
	rows := int(rec.NumRows())
	if enc := w.s.opts.KeyEncoder; enc != nil {
		cols := make([]arrow.Array, len(w.keyIdx))
		fields := make([]arrow.Field, len(w.keyIdx))
		for i, c := range w.keyIdx {
			cols[i], fields[i] = rec.Column(c), rec.Schema().Field(c)
		}
		proj := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(rows))
		defer proj.Release()
		var keys slabWriter
		if err := enc.Encode(proj, keys.emit); err != nil {
			return nil, fmt.Errorf("kafka sink: encode key: %w", err)
		}
		return keys.slices(rows), nil
	}
	// One key column written as it is: every row's key goes into one
	// buffer; a null key stays nil.
	col := rec.Column(w.keyIdx[0])
	var keys slabWriter
	var null []bool
	if col.NullN() > 0 {
		null = make([]bool, rows)
	}
	for i := 0; i < rows; i++ {
		if col.IsNull(i) {
			null[i] = true
			keys.end()
			continue
		}
		switch a := col.(type) {
		case *array.String:
			keys.buf = append(keys.buf, a.Value(i)...)
		case *array.LargeString:
			keys.buf = append(keys.buf, a.Value(i)...)
		case *array.Binary:
			keys.buf = append(keys.buf, a.Value(i)...)
		case *array.LargeBinary:
			keys.buf = append(keys.buf, a.Value(i)...)
		case *array.Int8:
			keys.buf = strconv.AppendInt(keys.buf, int64(a.Value(i)), 10)
		case *array.Int16:
			keys.buf = strconv.AppendInt(keys.buf, int64(a.Value(i)), 10)
		case *array.Int32:
			keys.buf = strconv.AppendInt(keys.buf, int64(a.Value(i)), 10)
		case *array.Int64:
			keys.buf = strconv.AppendInt(keys.buf, a.Value(i), 10)
		case *array.Uint8:
			keys.buf = strconv.AppendUint(keys.buf, uint64(a.Value(i)), 10)
		case *array.Uint16:
			keys.buf = strconv.AppendUint(keys.buf, uint64(a.Value(i)), 10)
		case *array.Uint32:
			keys.buf = strconv.AppendUint(keys.buf, uint64(a.Value(i)), 10)
		case *array.Uint64:
			keys.buf = strconv.AppendUint(keys.buf, a.Value(i), 10)
		default:
			return nil, fmt.Errorf("kafka sink: key column of type %s needs a key format", col.DataType())
		}
		keys.end()
	}
	out := keys.slices(rows)
	for i, isNull := range null {
		if isNull {
			out[i] = nil
		}
	}
	return out, nil
}

// slabWriter gathers a batch's serialized values in one buffer: one
// allocation per batch rather than per record. The records handed to the
// producer keep their slices until acknowledged; every batch has its own
// slab.
type slabWriter struct {
	buf  []byte
	ends []int
}

// emit is a format.Encoder callback: it copies row's value.
func (s *slabWriter) emit(_ int, v []byte) error {
	s.buf = append(s.buf, v...)
	s.end()
	return nil
}

// end closes the current value.
func (s *slabWriter) end() { s.ends = append(s.ends, len(s.buf)) }

// slices returns the n values, each capped so that appends cannot spill
// into the next.
func (s *slabWriter) slices(n int) [][]byte {
	out := make([][]byte, n)
	start := 0
	for i := 0; i < n && i < len(s.ends); i++ {
		end := s.ends[i]
		out[i] = s.buf[start:end:end]
		start = end
	}
	return out
}

// PreCommit implements arrowflow.SinkWriter: it flushes the epoch's
// records and, with ExactlyOnce, returns the open transaction's id,
// producer id and producer epoch.
func (w *writer) PreCommit(ctx context.Context, epoch uint64) ([]byte, error) {
	if epoch != w.epoch {
		return nil, fmt.Errorf("BUG: kafka sink: pre-commit of epoch %d while epoch %d is open", epoch, w.epoch)
	}
	w.epoch++
	if err := w.flushBuffer(ctx); err != nil {
		return nil, err
	}
	if w.alo != nil {
		if err := w.alo.Flush(ctx); err != nil {
			return nil, fmt.Errorf("kafka sink: flush: %w", err)
		}
		if err := w.produceErr(); err != nil {
			return nil, fmt.Errorf("kafka sink: produce to %s: %w", w.s.opts.Topic, err)
		}
		return nil, nil
	}
	sl := w.cur
	if sl == nil {
		return nil, nil
	}
	w.cur = nil
	if err := sl.client.Flush(ctx); err != nil {
		return nil, fmt.Errorf("kafka sink: flush transaction %s: %w", sl.txnID, err)
	}
	if err := w.produceErr(); err != nil {
		return nil, fmt.Errorf("kafka sink: produce to %s in transaction %s: %w", w.s.opts.Topic, sl.txnID, err)
	}
	pid, pepoch, err := sl.client.ProducerID(ctx)
	if err != nil {
		return nil, fmt.Errorf("kafka sink: producer id of transaction %s: %w", sl.txnID, err)
	}
	w.s.mu.Lock()
	sl.pending, sl.pid, sl.pepoch = epoch, pid, pepoch
	w.s.mu.Unlock()
	return json.Marshal(txnRecord{TxnID: sl.txnID, ProducerID: pid, ProducerEpoch: pepoch, Records: w.n})
}

// Close implements arrowflow.SinkWriter: it aborts the open epoch's
// transaction (output not pre-committed is discarded) and, when it is the
// last writer, closes the producers without pending transactions.
func (w *writer) Close() error {
	var err error
	if w.buf != nil {
		clear(w.buf.byKey)
		w.buf.recs = nil // changes of an epoch never pre-committed
	}
	if w.alo != nil {
		w.alo.Close()
	}
	if sl := w.cur; sl != nil {
		w.cur = nil
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if aerr := sl.client.AbortBufferedRecords(ctx); aerr == nil {
			if eerr := sl.client.EndTransaction(ctx, kgo.TryAbort); eerr != nil && !abortedAnswer(eerr) {
				err = fmt.Errorf("kafka sink: abort transaction %s: %w", sl.txnID, eerr)
			}
		}
		cancel()
	}
	s := w.s
	s.mu.Lock()
	s.writers--
	if s.writers == 0 {
		for _, sl := range s.slots {
			if sl.pending == 0 && sl.client != nil {
				sl.client.Close()
				sl.client = nil
			}
		}
	}
	s.mu.Unlock()
	return err
}
