package window

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
)

// LookupJoin configures a lookup join, Flink's processing-time temporal
// join of a stream with a bounded table:
//
//	SELECT ... FROM bids b
//	JOIN side_input FOR SYSTEM_TIME AS OF b.p_time AS s
//	  ON b.k = s.key
//
// Each subtask reads the whole table (Table, a bounded source: every
// split to its end) into memory when it first needs it, indexes its rows
// by the equi-join key, and joins every probe row, as it arrives, with
// the table rows of equal keys (no key column NULL): JoinInner emits one
// row per match and drops probe rows without one; JoinLeftOuter also
// emits each probe row without a match once, with NULL table columns.
// Keys compare as in grouping (floating-point -0 equals +0, NaN equals
// NaN).
//
// The table is read again when processing time (TaskInfo.Clock) reaches
// its load time plus TTL, before the next probe batch is joined (Flink's
// 'lookup.join.cache.ttl' of the filesystem connector); TTL 0 reads it
// once. A probe row meets the table as loaded when the row arrives;
// results emitted earlier are not revised.
//
// The operator has one input, the probe stream, and keeps no checkpointed
// state: a restored job reads the table again, as Flink's lookup
// functions do. Watermarks pass through. Put it behind the probe side
// with a forward edge: no key partitioning is needed, since every subtask
// has the whole table.
//
// The output has the probe output columns (ProbeColumns, each named
// ProbePrefix+name), then the table's (TableColumns, TablePrefix+name;
// nullable with JoinLeftOuter). Every output name must be unique. Output
// rows of one probe batch keep the batch's order among the matched rows;
// padded rows follow in a batch of their own.
type LookupJoin struct {
	// Probe is the schema of the probe input's batches.
	Probe *arrow.Schema
	// ProbeKeys and TableKeys name the equi-join key columns: at least
	// one, as many on each side and pairwise of equal types (compute a
	// key expression into a probe column first).
	ProbeKeys, TableKeys []string
	// Table is the bounded table. Its Schema is the table's; its splits
	// are all read by every subtask.
	Table arrowflow.Source
	// Kind is JoinInner (the default) or JoinLeftOuter.
	Kind JoinKind
	// TTL is how long a loaded table is used before it is read again; 0
	// reads it once.
	TTL time.Duration
	// ProbeColumns and TableColumns name the columns to output, in that
	// order; nil outputs every column of that side, an empty non-nil
	// slice none.
	ProbeColumns, TableColumns []string
	// ProbePrefix and TablePrefix are prepended to the names of the
	// output columns of that side.
	ProbePrefix, TablePrefix string
}

// LookupJoinStats are a lookup join subtask's counters.
type LookupJoinStats struct {
	// ProbeRows counts the probe rows received; NullKeyRows those with a
	// NULL key column (they match nothing).
	ProbeRows, NullKeyRows int64
	// Pairs counts the probe rows emitted with a table row (a probe row
	// matching several is counted once per match); PaddedRows probe rows
	// emitted with NULL table columns (JoinLeftOuter); OutputRows both.
	Pairs, PaddedRows, OutputRows int64
	// Loads counts the times the table was read; TableRows is the number
	// of rows of the table as last loaded (rows with a NULL key dropped).
	Loads, TableRows int64
	// TableBytes approximates the memory the loaded table holds.
	TableBytes int64
}

// LookupJoinStatsReporter is implemented by the operator instances a
// LookupJoin makes.
type LookupJoinStatsReporter interface {
	LookupJoinStats() LookupJoinStats
}

// lookupCompiled is what Validate derives from a LookupJoin.
type lookupCompiled struct {
	probeKeys, tableKeys []int
	probeOut, tableOut   []int
	keyEq                []joinKeyEq
	out                  *arrow.Schema
}

// Factory returns the operator factory. Each instance checks the
// configuration when it opens; call Validate to check it earlier. The
// instances of one factory read the table one at a time (a source's
// listing is shared by its readers).
func (j LookupJoin) Factory() arrowflow.OperatorFactory {
	mu := &sync.Mutex{}
	return func() arrowflow.Operator { return &lookupOp{cfg: j, loadMu: mu} }
}

// OutputSchema is the schema of the rows the join emits.
func (j LookupJoin) OutputSchema() (*arrow.Schema, error) {
	c, err := j.compile()
	if err != nil {
		return nil, err
	}
	return c.out, nil
}

// Validate checks the configuration against the schemas. Its errors name
// the field at fault.
func (j LookupJoin) Validate() error {
	_, err := j.compile()
	return err
}

func (j LookupJoin) compile() (*lookupCompiled, error) {
	if j.Kind != JoinInner && j.Kind != JoinLeftOuter {
		return nil, fmt.Errorf("lookup join: Kind %s is not supported; use JoinInner or JoinLeftOuter", j.Kind)
	}
	if j.Probe == nil {
		return nil, fmt.Errorf("lookup join: Probe: no probe input schema")
	}
	if j.Table == nil {
		return nil, fmt.Errorf("lookup join: Table: no table source")
	}
	if j.TTL < 0 {
		return nil, fmt.Errorf("lookup join: TTL %s is negative", j.TTL)
	}
	if len(j.ProbeKeys) == 0 || len(j.ProbeKeys) != len(j.TableKeys) {
		return nil, fmt.Errorf("lookup join: ProbeKeys has %d columns and TableKeys %d; a table is looked up by at least one key pair", len(j.ProbeKeys), len(j.TableKeys))
	}
	table := j.Table.Schema()
	c := &lookupCompiled{}
	col := func(s *arrow.Schema, field, side, name string) (int, error) {
		idx := s.FieldIndices(name)
		if len(idx) != 1 {
			return 0, fmt.Errorf("lookup join: %s: column %q not found (or ambiguous) in the %s schema %s", field, name, side, s)
		}
		return idx[0], nil
	}
	for k := range j.ProbeKeys {
		pi, err := col(j.Probe, "ProbeKeys", "probe", j.ProbeKeys[k])
		if err != nil {
			return nil, err
		}
		ti, err := col(table, "TableKeys", "table", j.TableKeys[k])
		if err != nil {
			return nil, err
		}
		pt, tt := j.Probe.Field(pi).Type, table.Field(ti).Type
		if !arrow.TypeEqual(pt, tt) {
			return nil, fmt.Errorf("lookup join: key %d: probe column %q is %s, table column %q is %s; cast one to the other's type", k, j.ProbeKeys[k], pt, j.TableKeys[k], tt)
		}
		eq, err := joinKeyEqOf(pt)
		if err != nil {
			return nil, fmt.Errorf("lookup join: key %d (%q): %w", k, j.ProbeKeys[k], err)
		}
		c.probeKeys, c.tableKeys, c.keyEq = append(c.probeKeys, pi), append(c.tableKeys, ti), append(c.keyEq, eq)
	}
	names := map[string]bool{}
	var fields []arrow.Field
	for _, sd := range []struct {
		field, side, prefix string
		schema              *arrow.Schema
		cols                []string
		out                 *[]int
		nullable            bool
	}{
		{"ProbeColumns", "probe", j.ProbePrefix, j.Probe, j.ProbeColumns, &c.probeOut, false},
		{"TableColumns", "table", j.TablePrefix, table, j.TableColumns, &c.tableOut, j.Kind == JoinLeftOuter},
	} {
		idx := []int{}
		if sd.cols == nil {
			for i := range sd.schema.NumFields() {
				idx = append(idx, i)
			}
		}
		for _, name := range sd.cols {
			i, err := col(sd.schema, sd.field, sd.side, name)
			if err != nil {
				return nil, err
			}
			idx = append(idx, i)
		}
		for _, i := range idx {
			f := sd.schema.Field(i)
			f.Name = sd.prefix + f.Name
			f.Nullable = f.Nullable || sd.nullable
			f.Metadata = arrow.Metadata{}
			if names[f.Name] {
				return nil, fmt.Errorf("lookup join: %s: output column %q is not unique", sd.field, f.Name)
			}
			names[f.Name] = true
			fields = append(fields, f)
		}
		*sd.out = idx
	}
	c.out = arrow.NewSchema(fields, nil)
	return c, nil
}

// lookupOp is one subtask of a lookup join.
type lookupOp struct {
	cfg    LookupJoin
	loadMu *sync.Mutex
	c      *lookupCompiled
	info   *arrowflow.TaskInfo
	mem    memory.Allocator
	clock  arrowflow.Clock

	table    arrow.RecordBatch  // the loaded rows, NULL keys dropped; nil before the first load
	byHash   map[uint64][]int32 // key hash -> table rows
	loadedAt time.Time          // when the table was read, on the task's clock
	stats    LookupJoinStats    // the subtask's counters
	hashes   []uint64           // scratch
	pi, ti   []int32            // scratch: candidate pairs (probe row, table row)
	ok       []bool             // scratch
	pad      []int32            // scratch: unmatched probe rows
	matched  []bool             // scratch: per selected probe row
	keyCols  []arrow.Array      // scratch
	probeRow []int32            // scratch: the selected probe row (index k) per candidate
}

// Open checks the configuration; the table is read on the first probe
// batch.
func (o *lookupOp) Open(info *arrowflow.TaskInfo) error {
	c, err := o.cfg.compile()
	if err != nil {
		return err
	}
	o.c, o.info, o.mem, o.clock = c, info, info.Allocator, info.Clock
	if o.mem == nil {
		o.mem = memory.DefaultAllocator
	}
	if o.clock == nil {
		o.clock = arrowflow.SystemClock
	}
	return nil
}

// LookupJoinStats returns the subtask's counters.
func (o *lookupOp) LookupJoinStats() LookupJoinStats { return o.stats }

// load reads the whole table (every split of the source, to its end)
// into one record batch and indexes it by key hash.
func (o *lookupOp) load() error {
	o.loadMu.Lock()
	defer o.loadMu.Unlock()
	ctx := context.Background()
	src := o.cfg.Table
	splits, err := src.Splits(ctx)
	if err != nil {
		return fmt.Errorf("lookup join %s: listing the table: %w", o.info.Name, err)
	}
	states := make([]arrowflow.SplitState, len(splits))
	for i, s := range splits {
		states[i] = arrowflow.SplitState{Split: s}
	}
	ti := *o.info
	ti.Name, ti.Subtask, ti.Parallelism, ti.Allocator = o.info.Name+"/table", 0, 1, o.mem
	rd, err := src.Open(&ti, states)
	if err != nil {
		return fmt.Errorf("lookup join %s: opening the table: %w", o.info.Name, err)
	}
	var recs []arrow.RecordBatch
	var idx [][]int32
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	schema := src.Schema()
	for {
		b, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			rd.Close()
			return fmt.Errorf("lookup join %s: reading the table: %w", o.info.Name, err)
		}
		if b.IsZero() {
			continue
		}
		// The rows to keep: selected, no key column NULL.
		var keep []int32
		for k := range b.NumRows() {
			r := b.Row(k)
			null := false
			for _, ki := range o.c.tableKeys {
				null = null || b.Record.Column(ki).IsNull(r)
			}
			if !null {
				keep = append(keep, int32(r))
			}
		}
		recs, idx = append(recs, b.Record), append(idx, keep)
	}
	if err := rd.Close(); err != nil {
		return fmt.Errorf("lookup join %s: closing the table reader: %w", o.info.Name, err)
	}
	var table arrow.RecordBatch
	if len(recs) == 0 {
		cols := make([]arrow.Array, schema.NumFields())
		for i, f := range schema.Fields() {
			cols[i] = array.MakeArrayOfNull(o.mem, f.Type, 0)
		}
		table = array.NewRecordBatch(schema, cols, 0)
		for _, a := range cols {
			a.Release()
		}
	} else if table, err = kernels.GatherRecords(o.mem, schema, recs, idx); err != nil {
		return fmt.Errorf("lookup join %s: collecting the table: %w", o.info.Name, err)
	}
	n := int(table.NumRows())
	hashes := make([]uint64, n)
	byHash := make(map[uint64][]int32, n)
	if n > 0 {
		keys := make([]arrow.Array, len(o.c.tableKeys))
		for k, ki := range o.c.tableKeys {
			keys[k] = table.Column(ki)
		}
		if err := kernels.HashColumns(keys, nil, hashes); err != nil {
			table.Release()
			return fmt.Errorf("lookup join %s: %w", o.info.Name, err)
		}
		for r, h := range hashes {
			byHash[h] = append(byHash[h], int32(r))
		}
	}
	if o.table != nil {
		o.table.Release()
	}
	o.table, o.byHash, o.loadedAt = table, byHash, o.clock.Now()
	o.stats.Loads++
	o.stats.TableRows = int64(n)
	o.stats.TableBytes = 0
	for _, c := range table.Columns() {
		o.stats.TableBytes += joinDataBytes(c.Data())
	}
	return nil
}

// ProcessBatch joins a probe batch with the table, loading it first if
// it is not loaded or its TTL has passed.
func (o *lookupOp) ProcessBatch(_ int, b arrowflow.Batch, out arrowflow.Emitter) error {
	defer b.Release()
	n := b.NumRows()
	if n == 0 {
		return nil
	}
	if o.table == nil || o.cfg.TTL > 0 && !o.clock.Now().Before(o.loadedAt.Add(o.cfg.TTL)) {
		if err := o.load(); err != nil {
			return err
		}
	}
	o.stats.ProbeRows += int64(n)
	rec := b.Record
	o.keyCols = o.keyCols[:0]
	for _, ki := range o.c.probeKeys {
		o.keyCols = append(o.keyCols, rec.Column(ki))
	}
	o.hashes = lookupGrow(o.hashes, n)
	if err := kernels.HashColumns(o.keyCols, b.Sel, o.hashes); err != nil {
		return fmt.Errorf("lookup join %s: %w", o.info.Name, err)
	}
	// Candidate pairs by hash, then one vectorized comparison of the keys.
	o.pi, o.ti = o.pi[:0], o.ti[:0]
	o.probeRow = o.probeRow[:0]
	o.matched = lookupGrow(o.matched, n)
	clear(o.matched)
	for k := range n {
		r := b.Row(k)
		null := false
		for _, c := range o.keyCols {
			null = null || c.IsNull(r)
		}
		if null {
			o.stats.NullKeyRows++
			continue
		}
		for _, t := range o.byHash[o.hashes[k]] {
			o.pi, o.ti, o.probeRow = append(o.pi, int32(r)), append(o.ti, t), append(o.probeRow, int32(k))
		}
	}
	o.ok = lookupGrow(o.ok, len(o.pi))
	for i := range o.ok {
		o.ok[i] = true
	}
	for k, eq := range o.c.keyEq {
		eq(o.keyCols[k], o.table.Column(o.c.tableKeys[k]), o.pi, o.ti, o.ok)
	}
	w := 0
	for i, ok := range o.ok {
		if ok {
			o.pi[w], o.ti[w] = o.pi[i], o.ti[i]
			o.matched[o.probeRow[i]] = true
			w++
		}
	}
	o.pi, o.ti = o.pi[:w], o.ti[:w]
	if w > 0 {
		if err := o.emit(rec, o.pi, o.ti, out); err != nil {
			return err
		}
		o.stats.Pairs += int64(w)
	}
	if o.cfg.Kind == JoinLeftOuter {
		o.pad = o.pad[:0]
		for k := range n {
			if !o.matched[k] {
				o.pad = append(o.pad, int32(b.Row(k)))
			}
		}
		if len(o.pad) > 0 {
			if err := o.emit(rec, o.pad, nil, out); err != nil {
				return err
			}
			o.stats.PaddedRows += int64(len(o.pad))
		}
	}
	return nil
}

// emit emits probe rows prows of rec with table rows trows (NULL table
// columns when trows is nil).
func (o *lookupOp) emit(rec arrow.RecordBatch, prows, trows []int32, out arrowflow.Emitter) error {
	n := len(prows)
	cols := make([]arrow.Array, 0, o.c.out.NumFields())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for _, i := range o.c.probeOut {
		col, err := kernels.Take(o.mem, rec.Column(i), prows)
		if err != nil {
			return fmt.Errorf("lookup join %s: output column %q: %w", o.info.Name, o.c.out.Field(len(cols)).Name, err)
		}
		cols = append(cols, col)
	}
	for _, i := range o.c.tableOut {
		f := o.c.out.Field(len(cols))
		if trows == nil {
			cols = append(cols, array.MakeArrayOfNull(o.mem, f.Type, n))
			continue
		}
		col, err := kernels.Take(o.mem, o.table.Column(i), trows)
		if err != nil {
			return fmt.Errorf("lookup join %s: output column %q: %w", o.info.Name, f.Name, err)
		}
		cols = append(cols, col)
	}
	o.stats.OutputRows += int64(n)
	return out.Emit(arrowflow.NewBatch(array.NewRecordBatch(o.c.out, cols, int64(n))))
}

// ProcessWatermark forwards wm: the join holds no rows.
func (o *lookupOp) ProcessWatermark(wm arrowflow.EventTime, out arrowflow.Emitter) error {
	return out.EmitWatermark(wm)
}

// SnapshotState writes nothing: the table is read again after a restore.
func (o *lookupOp) SnapshotState(uint64, state.SnapshotWriter) error { return nil }

// RestoreState reads nothing.
func (o *lookupOp) RestoreState(state.SnapshotReader) error { return nil }

// Finish emits nothing: every probe row was joined when it came.
func (o *lookupOp) Finish(arrowflow.Emitter) error { return nil }

// Close releases the loaded table.
func (o *lookupOp) Close() error {
	if o.table != nil {
		o.table.Release()
		o.table = nil
	}
	o.byHash = nil
	return nil
}

// lookupGrow returns s resized to n elements, reusing its array when it can.
func lookupGrow[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}
