package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
	"github.com/weirflow/weir/window"
)

// pollWait is the longest Next waits for records before returning a zero
// batch, so that barriers are not held up.
const pollWait = 100 * time.Millisecond

// split is a reader's progress in one partition.
type split struct {
	id   string
	tp   Partition
	idx  int   // index in reader.splits
	next int64 // the next offset to read: after the last record taken
	end  int64 // exclusive end offset; -1 when unbounded
	done bool
}

// reader reads one subtask's partitions through its own client. It is
// used from one goroutine, except for the partition-discovery goroutine,
// which only talks to it through the found channel.
type reader struct {
	src     *Source
	logger  *slog.Logger
	clock   arrowflow.Clock
	subtask int
	par     int
	cl      *kgo.Client
	mem     memory.Allocator

	splits []*split // ordered by partition
	byTP   map[Partition]*split
	active int // splits not done

	vb format.BatchBuilder
	// cb is vb as a change builder when the decoder is a
	// format.ChangeDecoder: one record gives 0..n rows with row kinds.
	cb       format.ChangeBatchBuilder
	metas    []metaBuilder
	rowSplit []int32 // split index of each row of the batch being built
	// queue holds polled records not taken yet: a batch is full.
	queue []chunk
	// keys is the key side with a key decoder (nil without); pickIdx is
	// scratch of assemble.
	keys    *keyRows
	pickIdx []int32
	// ids are the split ids by split index, lastSplit the rowSplit of
	// the last batch returned, activeIDs scratch for ActiveSplits (see
	// arrowflow.SplitReporter).
	ids       []string
	lastSplit []int32
	activeIDs []string
	arrs      []arrow.Array
	// etMax and etSeen are scratch per split index for a batch's largest
	// event time.
	etMax  []arrowflow.EventTime
	etSeen []bool

	wm  *window.SplitWatermarks // nil without event time
	dlq *deadLetters            // nil unless OnError is dlq

	disc   *discovery // nil when discovery is off
	closed bool
}

var (
	_ arrowflow.SourceReader  = (*reader)(nil)
	_ arrowflow.IdleReporter  = (*reader)(nil)
	_ arrowflow.SplitReporter = (*reader)(nil)
)

func newReader(src *Source, info *arrowflow.TaskInfo, cl *kgo.Client) *reader {
	rd := &reader{
		src: src, logger: info.Logger, clock: info.Clock,
		subtask: info.Subtask, par: info.Parallelism, cl: cl,
		byTP: map[Partition]*split{},
		arrs: make([]arrow.Array, src.schema.NumFields()),
	}
	if cd, ok := src.opts.Decoder.(format.ChangeDecoder); ok {
		rd.cb = cd.NewChangeBuilder(info.Allocator)
		rd.vb = rd.cb
	} else {
		rd.vb = src.opts.Decoder.NewBuilder(info.Allocator)
	}
	if kd := src.opts.KeyDecoder; kd != nil {
		rd.keys = &keyRows{kb: kd.NewBuilder(info.Allocator)}
	}
	rd.mem = info.Allocator
	for _, m := range src.opts.Metadata {
		rd.metas = append(rd.metas, newMetaBuilder(info.Allocator, m.Key))
	}
	if src.etCol >= 0 {
		rd.wm = window.NewSplitWatermarks(src.opts.MaxOutOfOrderness, src.opts.IdleTimeout)
	}
	return rd
}

// newSplit describes a partition to start reading.
type newSplit struct {
	id  string
	tp  Partition
	pos position
}

// addSplits starts reading partitions (before the reader runs, or when
// discovery found them).
func (rd *reader) addSplits(add []newSplit) {
	rd.src.noteStarts(add)
	consume := map[string]map[int32]kgo.Offset{}
	now := rd.clock.Now()
	for _, a := range add {
		sp := &split{id: a.id, tp: a.tp, next: a.pos.next, end: a.pos.end}
		rd.splits = append(rd.splits, sp)
		rd.etMax = append(rd.etMax, 0)
		rd.etSeen = append(rd.etSeen, false)
		rd.byTP[a.tp] = sp
		if rd.wm != nil {
			rd.wm.AddSplit(a.id, now)
		}
		if sp.end >= 0 && sp.next >= sp.end {
			sp.done = true
			if rd.wm != nil {
				rd.wm.EndSplit(a.id)
			}
			continue
		}
		rd.active++
		if consume[a.tp.Topic] == nil {
			consume[a.tp.Topic] = map[int32]kgo.Offset{}
		}
		consume[a.tp.Topic][a.tp.Partition] = kgo.NewOffset().At(sp.next)
	}
	slices.SortFunc(rd.splits, func(a, b *split) int {
		return cmp.Or(cmp.Compare(a.tp.Topic, b.tp.Topic), cmp.Compare(a.tp.Partition, b.tp.Partition))
	})
	rd.ids = rd.ids[:0]
	for i, s := range rd.splits {
		s.idx = i
		rd.ids = append(rd.ids, s.id)
	}
	if len(consume) > 0 {
		rd.cl.AddConsumePartitions(consume)
	}
}

// start begins partition discovery, if enabled; known are the partitions
// owned through the split list (this reader's or another subtask's).
func (rd *reader) start(known map[string]bool) {
	if iv := rd.src.discoveryInterval(); iv > 0 {
		rd.disc = startDiscovery(rd, iv, known)
	}
}

// finish marks a split done: it reached its end offset.
func (rd *reader) finish(sp *split) {
	sp.done = true
	sp.next = max(sp.next, sp.end) // offsets up to the end hold no more records
	rd.active--
	rd.cl.RemoveConsumePartitions(map[string][]int32{sp.tp.Topic: {sp.tp.Partition}})
	if rd.wm != nil {
		rd.wm.EndSplit(sp.id)
	}
}

// Next returns the next batch: up to BatchSize rows from the records the
// client has fetched, across the reader's partitions. It waits at most
// about 100 ms for records and then returns a zero batch. It returns
// io.EOF once every partition of a bounded source reached its end offset
// (at once when the reader has no partition and does not discover any).
func (rd *reader) Next(ctx context.Context) (arrowflow.Batch, error) {
	if rd.closed {
		return arrowflow.Batch{}, errors.New("kafka source: Next on a closed reader")
	}
	if err := ctx.Err(); err != nil {
		return arrowflow.Batch{}, err
	}
	if err := rd.dlqErr(); err != nil {
		return arrowflow.Batch{}, err
	}
	if rd.disc != nil {
		rd.adopt(rd.disc.poll())
	}
	if rd.active == 0 {
		if rd.disc == nil {
			return arrowflow.Batch{}, io.EOF
		}
		// Nothing to read until discovery finds a partition for us.
		t := time.NewTimer(pollWait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return arrowflow.Batch{}, ctx.Err()
		case found := <-rd.disc.found:
			rd.adopt(found)
		case <-t.C:
		}
		return arrowflow.Batch{}, nil
	}

	batchSize := rd.src.opts.BatchSize
	var err error
	if len(rd.queue) == 0 {
		pctx, cancel := context.WithTimeout(ctx, pollWait)
		fs := rd.cl.PollRecords(pctx, batchSize)
		cancel()
		_, err = rd.enqueue(ctx, fs)
	}
	if err == nil {
		err = rd.drain(batchSize)
	}
	// Top up from what the client already buffered, without waiting.
	for err == nil && len(rd.queue) == 0 && len(rd.rowSplit) < batchSize && rd.active > 0 {
		var took int
		if took, err = rd.enqueue(ctx, rd.cl.PollRecords(nil, batchSize-len(rd.rowSplit))); err != nil || took == 0 {
			break
		}
		err = rd.drain(batchSize)
	}
	if err != nil {
		return arrowflow.Batch{}, err
	}
	if len(rd.rowSplit) == 0 {
		if rd.active == 0 && rd.disc == nil {
			return arrowflow.Batch{}, io.EOF
		}
		return arrowflow.Batch{}, nil
	}
	return rd.flush()
}

// chunk is polled records of one partition not taken yet, in offset
// order.
type chunk struct {
	sp   *split
	recs []*kgo.Record
}

// enqueue queues polled records and returns how many records (including
// control records) it queued. A partition's fetch error is handled here.
func (rd *reader) enqueue(ctx context.Context, fs kgo.Fetches) (int, error) {
	took := 0
	for _, f := range fs {
		for ti := range f.Topics {
			t := &f.Topics[ti]
			for pi := range t.Partitions {
				p := &t.Partitions[pi]
				if p.Err != nil {
					if err := rd.fetchErr(ctx, t.Topic, p.Partition, p.Err); err != nil {
						return took, err
					}
				}
				if len(p.Records) == 0 {
					continue
				}
				sp := rd.byTP[Partition{Topic: t.Topic, Partition: p.Partition}]
				if sp == nil || sp.done {
					continue // finished; the client may still have had records buffered
				}
				took += len(p.Records)
				rd.queue = append(rd.queue, chunk{sp: sp, recs: p.Records})
			}
		}
	}
	return took, nil
}

// drain takes queued records into the batch being built until it holds
// batchSize rows or more (a change event may add several rows at once);
// records not taken stay queued for the next batch.
func (rd *reader) drain(batchSize int) error {
	for len(rd.queue) > 0 && len(rd.rowSplit) < batchSize {
		c := &rd.queue[0]
		if c.sp.done {
			rd.queue = rd.queue[1:]
			continue
		}
		n, err := rd.takePartition(c.sp, c.recs, batchSize)
		c.recs = c.recs[n:]
		if len(c.recs) == 0 || c.sp.done {
			rd.queue[0] = chunk{}
			rd.queue = rd.queue[1:]
		}
		if err != nil {
			return err
		}
	}
	if len(rd.queue) == 0 {
		rd.queue = rd.queue[:0:0] // let the records go
	}
	return nil
}

// takePartition consumes one partition's records in offset order until
// the batch holds batchSize rows, and returns how many records it
// consumed.
func (rd *reader) takePartition(sp *split, recs []*kgo.Record, batchSize int) (int, error) {
	for i, rec := range recs {
		if len(rd.rowSplit) >= batchSize {
			return i, nil
		}
		if rec.Offset < sp.next {
			continue // not ours to read again
		}
		if sp.end >= 0 && rec.Offset >= sp.end {
			rd.finish(sp)
			return len(recs), nil
		}
		sp.next = rec.Offset + 1
		if rec.Attrs.IsControl() {
			continue // a transaction marker: no data, but the position moves past it
		}
		if rec.Value == nil {
			rd.src.stats.tombstones.Add(1)
			if !rd.src.opts.Upsert {
				continue
			}
		}
		var (
			rows int
			err  error
		)
		if rd.keys != nil {
			rows, err = rd.takeKeyed(rec)
		} else {
			rows, err = rd.appendValue(rec.Value)
		}
		if err != nil {
			if err := rd.reject(rec, err); err != nil {
				return i + 1, err
			}
			continue
		}
		// Metadata and the split index go with every row the record
		// produced (a change event may produce none, or two).
		for range rows {
			for _, m := range rd.metas {
				m.append(rec)
			}
			rd.rowSplit = append(rd.rowSplit, int32(sp.idx))
		}
	}
	if sp.end >= 0 && sp.next >= sp.end {
		rd.finish(sp)
	}
	return len(recs), nil
}

// appendValue decodes a record value into the batch being built and
// returns how many rows it added: one for a row format, 0..n for a
// change format.
func (rd *reader) appendValue(v []byte) (int, error) {
	if rd.cb != nil {
		return rd.cb.AppendChange(v)
	}
	if err := rd.vb.Append(v); err != nil {
		return 0, err
	}
	return 1, nil
}

// fetchErr handles an error the client reported for a partition (or, with
// an empty topic, for the poll).
func (rd *reader) fetchErr(ctx context.Context, topic string, partition int32, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return ctx.Err() // nil when only the poll's own wait ran out
	}
	var loss *kgo.ErrDataLoss
	if errors.As(err, &loss) {
		rd.src.stats.dataLoss.Add(1)
		rd.logger.Warn("kafka source: offsets lost, reading resumes at the log start", "topic", topic, "partition", partition, "err", err)
		return nil
	}
	if topic == "" {
		return fmt.Errorf("kafka source: fetch: %w", err)
	}
	return fmt.Errorf("kafka source: fetch topic %q partition %d: %w", topic, partition, err)
}

// reject applies the error policy to a record the decoder rejected.
func (rd *reader) reject(rec *kgo.Record, reason error) error {
	var re *format.RecordError
	if !errors.As(reason, &re) {
		// Not the record's fault (a schema registry that cannot be
		// reached): skipping or dead-lettering would drop good records
		// for as long as it lasts. Fail whatever the policy; the job
		// resumes from its checkpoint when restarted.
		return fmt.Errorf("kafka source: record of topic %q partition %d at offset %d: %w "+
			"(not a malformed record: the job stops whatever the error policy, and resumes at this record when started again)",
			rec.Topic, rec.Partition, rec.Offset, reason)
	}
	switch rd.src.opts.OnError {
	case SkipOnError:
		rd.src.stats.skipped.Add(1)
		return nil
	case DeadLetterOnError:
		rd.dlq.send(rec, reason)
		return nil
	}
	return fmt.Errorf("kafka source: record of topic %q partition %d at offset %d: %w "+
		"(error policy fail; the skip or dlq policy would go on past bad records)", rec.Topic, rec.Partition, rec.Offset, reason)
}

// flush turns the rows taken into a batch and feeds the watermarks.
func (rd *reader) flush() (arrowflow.Batch, error) {
	n := len(rd.rowSplit)
	var (
		vals  arrow.RecordBatch
		kinds []arrowflow.RowKind
	)
	if rd.cb != nil {
		vals, kinds = rd.cb.NewChangeRecord()
	} else {
		vals = rd.vb.NewRecord()
	}
	defer vals.Release()
	nv := rd.src.nValue
	if rd.keys != nil {
		keys := rd.keys.kb.NewRecord()
		if kinds != nil && len(kinds) != int(vals.NumRows()) || len(rd.keys.kIdx) != n {
			keys.Release()
			panic(fmt.Sprintf("BUG: kafka source: %d rows accepted, %d assembled, %d row kinds of %d value rows", n, len(rd.keys.kIdx), len(kinds), vals.NumRows()))
		}
		var err error
		kinds, err = rd.assemble(rd.mem, keys, vals, kinds, n)
		keys.Release()
		if err != nil {
			rd.rowSplit = rd.rowSplit[:0]
			for _, m := range rd.metas {
				m.newArray().Release()
			}
			return arrowflow.Batch{}, err
		}
	} else {
		if int(vals.NumRows()) != n {
			panic(fmt.Sprintf("BUG: kafka source: decoder built %d rows, %d accepted", vals.NumRows(), n))
		}
		if kinds != nil && len(kinds) != n {
			panic(fmt.Sprintf("BUG: kafka source: change decoder built %d row kinds, %d rows accepted", len(kinds), n))
		}
		for i := 0; i < nv; i++ {
			rd.arrs[i] = vals.Column(i)
			rd.arrs[i].Retain()
		}
	}
	for i, m := range rd.metas {
		rd.arrs[nv+i] = m.newArray()
	}
	rec := array.NewRecordBatch(rd.src.schema, rd.arrs, int64(n))
	for i := range rd.arrs {
		rd.arrs[i].Release()
		rd.arrs[i] = nil
	}
	if rd.wm != nil {
		rd.observe(rec)
	}
	rd.lastSplit, rd.rowSplit = rd.rowSplit, rd.lastSplit[:0]
	rd.src.stats.records.Add(int64(n))
	if kinds != nil || rd.cb != nil || rd.src.opts.Upsert {
		return arrowflow.NewChangeBatch(rec, kinds), nil
	}
	return arrowflow.NewBatch(rec), nil
}

// observe feeds each split's largest event time in rec to the watermarks.
func (rd *reader) observe(rec arrow.RecordBatch) {
	col := rec.Column(rd.src.etCol).(*array.Timestamp)
	unit := rd.src.etUnit
	vals := col.TimestampValues()
	for i, s := range rd.rowSplit {
		if col.IsNull(i) {
			if !rd.etSeen[s] {
				rd.etSeen[s], rd.etMax[s] = true, arrowflow.MinEventTime
			}
			continue
		}
		et := arrowflow.TimestampToEventTime(vals[i], unit)
		if !rd.etSeen[s] || et > rd.etMax[s] {
			rd.etSeen[s], rd.etMax[s] = true, et
		}
	}
	now := rd.clock.Now()
	for s, seen := range rd.etSeen {
		if seen {
			rd.wm.Observe(rd.splits[s].id, rd.etMax[s], now)
			rd.etSeen[s] = false
		}
	}
}

// Watermark is the minimum over the active partitions of each one's
// largest event time minus MaxOutOfOrderness (see window.SplitWatermarks);
// MinEventTime without an event-time column.
func (rd *reader) Watermark() arrowflow.EventTime {
	if rd.wm == nil {
		return arrowflow.MinEventTime
	}
	return rd.wm.Watermark(rd.clock.Now())
}

// Idle reports whether the reader has no partition left to read, or all
// of them have been quiet for IdleTimeout.
func (rd *reader) Idle() bool {
	if rd.active == 0 {
		return true
	}
	return rd.wm != nil && rd.wm.Idle(rd.clock.Now())
}

// Positions returns each partition's next offset (and end offset when
// bounded), after the last record of the last batch Next returned. Under
// DeadLetterOnError it first waits until every dead-letter record sent so
// far is acknowledged, so that a checkpoint never covers a bad record
// whose dead letter could still be lost.
func (rd *reader) Positions() ([]arrowflow.SplitState, error) {
	if rd.dlq != nil {
		if err := rd.dlq.flush(); err != nil {
			return nil, err
		}
	}
	out := make([]arrowflow.SplitState, len(rd.splits))
	for i, sp := range rd.splits {
		out[i] = arrowflow.SplitState{Split: sp.id, Position: position{next: sp.next, end: sp.end}.encode()}
	}
	return out, nil
}

// adopt starts reading partitions discovery found.
func (rd *reader) adopt(found []discovered) {
	var add []newSplit
	for _, d := range found {
		if _, ok := rd.byTP[d.tp]; ok {
			continue
		}
		rd.logger.Info("kafka source: reading new partition", "partition", d.tp.String(), "from", d.start)
		add = append(add, newSplit{id: d.tp.String(), tp: d.tp, pos: position{next: d.start, end: -1}})
		rd.src.stats.discovered.Add(1)
	}
	if len(add) > 0 {
		rd.addSplits(add)
	}
}

func (rd *reader) dlqErr() error {
	if rd.dlq == nil {
		return nil
	}
	return rd.dlq.failed()
}

// Close stops discovery, closes the client and releases the builders. It
// may be called more than once.
func (rd *reader) Close() error {
	if rd.closed {
		return nil
	}
	rd.closed = true
	if rd.disc != nil {
		rd.disc.stop()
	}
	rd.src.forget(rd.cl)
	rd.cl.Close()
	if rd.dlq != nil {
		rd.dlq.close()
	}
	rd.vb.Release()
	if rd.keys != nil {
		rd.keys.kb.Release()
	}
	for _, m := range rd.metas {
		m.release()
	}
	return nil
}

// BatchSplits returns the partitions' split ids and, for each row of the
// last batch, the index of the partition it came from.
func (rd *reader) BatchSplits() ([]string, []int32) { return rd.ids, rd.lastSplit }

// ActiveSplits lists the partitions not read to their end.
func (rd *reader) ActiveSplits() []string {
	rd.activeIDs = rd.activeIDs[:0]
	for _, s := range rd.splits {
		if !s.done {
			rd.activeIDs = append(rd.activeIDs, s.id)
		}
	}
	return rd.activeIDs
}
