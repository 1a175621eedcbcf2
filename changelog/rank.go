package changelog

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/kernels"
	"github.com/weirflow/weir/state"
	"github.com/weirflow/weir/state/rowstore"
	"github.com/weirflow/weir/window"
)

// RankFunc is the ranking function of a Rank.
type RankFunc int

const (
	// RowNumber numbers the rows of a partition 1, 2, 3, ... in rank
	// order; rows tied on every ORDER BY column are numbered in arrival
	// order (earlier first, or later first with Rank.LaterFirstOnTies).
	// SQL's ROW_NUMBER().
	RowNumber RankFunc = iota
	// RankWithGaps gives tied rows the same rank, 1 + the number of rows
	// ranked strictly before them, leaving gaps after ties: SQL's RANK().
	// (The name RANK is the operator's, Rank.)
	RankWithGaps
	// DenseRank gives tied rows the same rank, 1 + the number of distinct
	// ORDER BY values ranked before them, without gaps: SQL's
	// DENSE_RANK().
	DenseRank
)

// String is the SQL name: ROW_NUMBER, RANK, DENSE_RANK.
func (f RankFunc) String() string {
	switch f {
	case RowNumber:
		return "ROW_NUMBER"
	case RankWithGaps:
		return "RANK"
	case DenseRank:
		return "DENSE_RANK"
	}
	return fmt.Sprintf("RankFunc(%d)", int(f))
}

// ParseRankFunc returns the function of a SQL name (ROW_NUMBER, RANK or
// DENSE_RANK, in upper case, as String gives them).
func ParseRankFunc(name string) (RankFunc, error) {
	for _, f := range []RankFunc{RowNumber, RankWithGaps, DenseRank} {
		if f.String() == name {
			return f, nil
		}
	}
	return 0, fmt.Errorf("rank: unknown ranking function %q (want ROW_NUMBER, RANK or DENSE_RANK)", name)
}

// Rank configures Flink SQL's Top-N and deduplication over a changelog,
// not within windows:
//
//	SELECT ... FROM (SELECT *, <Func>() OVER (PARTITION BY PartitionBy ORDER BY OrderBy) AS rn FROM t)
//	WHERE rn <= N
//
// The output is a retract changelog of each partition's top N, folded per
// epoch: when an epoch closes (FlushEpoch) and at Finish, every partition
// changed since the last flush emits the difference between the rows it
// emitted last and its current top N (removed rows as -U, or -D when
// nothing replaces them; added rows as +U, or +I when they replace
// nothing), and unchanged rows emit nothing. More than 64K changed
// partitions flush early. With RankColumn, a row whose rank changed is a
// removed and an added row.
//
// When KeepFirst holds (deduplication keeping the first row to arrive),
// the operator keeps only a seen flag per partition and emits each
// partition's first row once, as an insert, from the batch it arrives
// in: the output is append-only. Deduplication keeping the earliest row
// by an event time is a Top-1 ORDER BY t ASC, and keeping the last row
// (ROW_NUMBER ... ORDER BY t DESC, N = 1) is a Top-1 with
// LaterFirstOnTies: of rows tied on t the later stays, as in Flink's
// deduplication.
//
// Put the operator behind arrowflow.KeyBy on PartitionBy (in that order),
// or run it at parallelism 1 without partitions. Rows are kept in a
// state/rowstore.Store, snapshotted by key group of PartitionBy.
type Rank struct {
	// Input is the schema of the batches the operator receives.
	Input *arrow.Schema
	// PartitionBy names the columns that split the rows into partitions
	// ranked separately (none: one partition).
	PartitionBy []string
	// OrderBy is the ranking, most significant column first. Integers,
	// floats (NaN below every number, -0 equal to +0), decimals,
	// booleans, strings, binaries, timestamps, dates, times and durations
	// can be ranked. Rows tied on every column rank in arrival order
	// (earlier first, unless LaterFirstOnTies); with no OrderBy every row
	// is tied, which is the order of a processing-time attribute
	// (ROW_NUMBER numbers rows as they arrive).
	OrderBy []window.OrderKey
	// LaterFirstOnTies makes rows tied on every OrderBy column rank by
	// arrival, the later first (by default the earlier ranks first). The
	// planner sets it for deduplication keeping the last row, ROW_NUMBER
	// with N = 1 and a single descending ORDER BY column, as Flink's
	// deduplication replaces the kept row by a later one of an equal
	// time. Arrival order survives snapshots and restores. With no
	// OrderBy, ROW_NUMBER ... N = 1 and LaterFirstOnTies keep each
	// partition's last row to arrive (on the updating path: KeepFirst
	// does not hold).
	LaterFirstOnTies bool
	// Func is the ranking function.
	Func RankFunc
	// N keeps the rows whose rank (row number) is at most N, N >= 1.
	N int64
	// RankColumn, when set, names an int64 column appended to the output
	// with each row's rank.
	RankColumn string
	// Retracting says the input may carry retractions: every row of each
	// partition is kept (Flink's RetractableTopNFunction), so that a row
	// below the top N can move up when a row above it is retracted. When
	// false only the candidates (the top N plus ties) are kept and a
	// retraction in the input is an error.
	Retracting bool
	// StateTTL, when positive, drops a partition that no row reached for
	// StateTTL of processing time (TaskInfo.Clock), as Flink's
	// table.exec.state.ttl: the rows it emitted stay downstream, and a
	// later row of the partition starts it afresh. A retraction that
	// finds no row is then ignored and counted. Access times are
	// snapshotted, so a restore does not extend a partition's life.
	StateTTL time.Duration

	// compactMin, when set, compacts the row store whenever it holds
	// that many deleted rows (tests compact often, to exercise the
	// renumbering).
	compactMin int
	// chunkMax overrides rankChunkMax (tests split partitions into many
	// chunks).
	chunkMax int
}

// RankStats are a Rank subtask's counters.
type RankStats struct {
	// InputRows counts the rows received; OutputRows the rows emitted.
	InputRows, OutputRows int64
	// PerRowOutputRows counts the rows the operator would have emitted
	// without folding, flushing after every input row as Flink's Top-N
	// does without mini-batch: OutputRows against it shows what folding
	// saved. KeepFirst emits no updates: it equals OutputRows.
	PerRowOutputRows int64
	// Partitions is the number of partitions held; StateRows the number of
	// rows held (for KeepFirst, of partitions seen).
	Partitions, StateRows int64
	// StateBytes approximates the memory the state takes.
	StateBytes int64
	// IgnoredRetractions counts retractions of rows the partition did not
	// hold, ignored because StateTTL may have dropped them.
	IgnoredRetractions int64
	// ExpiredPartitions counts partitions dropped by StateTTL.
	ExpiredPartitions int64
}

// RankStatsReporter is implemented by the operator instances a Rank
// makes.
type RankStatsReporter interface {
	RankStats() RankStats
}

// KeepFirst reports whether the configuration is a deduplication keeping
// the first row of each partition: ROW_NUMBER, N = 1, no RankColumn, not
// Retracting, not LaterFirstOnTies, and no ORDER BY column: the order is
// arrival order (processing time). Its output is append-only. With an ORDER BY column
// (an event time ascending) a row arriving later may rank before the one
// emitted (rows of several splits interleave), so that deduplication
// takes the general, updating path, as Flink's event-time deduplication
// updates its result.
func (r Rank) KeepFirst() bool {
	return r.Func == RowNumber && r.N == 1 && r.RankColumn == "" && !r.Retracting && !r.LaterFirstOnTies && len(r.OrderBy) == 0
}

// Validate checks the configuration against its input schema.
func (r Rank) Validate() error {
	_, err := r.compile()
	return err
}

// OutputSchema is the schema of the rows the operator emits: the input's
// columns, then RankColumn if set.
func (r Rank) OutputSchema() (*arrow.Schema, error) {
	c, err := r.compile()
	if err != nil {
		return nil, err
	}
	return c.out, nil
}

// Factory returns the operator factory. Each instance checks the
// configuration when it opens; call Validate to check it earlier.
func (r Rank) Factory() arrowflow.OperatorFactory {
	if r.KeepFirst() {
		return func() arrowflow.Operator { return &rankFirstOp{rankBase: rankBase{cfg: r}} }
	}
	return func() arrowflow.Operator { return &rankOp{rankBase: rankBase{cfg: r}} }
}

// rankCompiled is what Validate derives from the configuration.
type rankCompiled struct {
	partIdx  []int
	partType []arrow.DataType
	order    []rankKeyCol
	eq       []rankEqFunc // per input column
	out      *arrow.Schema
	n        int // N, capped to an int
}

// Snapshot tables.
const (
	rankRowsTable   = "rank_rows"   // the row store (general path)
	rankFirstTable  = "rank_first"  // KeepFirst: the partitions seen (partitionSchema)
	rankAccessTable = "rank_access" // general path with a TTL: access times (partitionSchema)
)

// rankMaxDirty is the number of changed partitions past which the
// operator flushes without waiting for the epoch to close.
const rankMaxDirty = 64 << 10

func (r Rank) compile() (*rankCompiled, error) {
	if r.Input == nil {
		return nil, fmt.Errorf("rank: no input schema")
	}
	if r.Func < RowNumber || r.Func > DenseRank {
		return nil, fmt.Errorf("rank: unknown ranking function %s", r.Func)
	}
	if r.N < 1 {
		return nil, fmt.Errorf("rank: N must be at least 1, got %d", r.N)
	}
	if r.StateTTL < 0 {
		return nil, fmt.Errorf("rank: state TTL %s is negative", r.StateTTL)
	}
	col := func(what, name string) (int, error) {
		idx := r.Input.FieldIndices(name)
		if len(idx) != 1 {
			return 0, fmt.Errorf("rank: %s column %q not found (or ambiguous) in the input (%s)", what, name, r.Input)
		}
		return idx[0], nil
	}
	c := &rankCompiled{n: int(min(r.N, math.MaxInt32))}
	for _, f := range r.Input.Fields() {
		if f.Name == state.KeyGroupColumn || f.Name == rowstore.HashColumn {
			return nil, fmt.Errorf("rank: input column %q has a name snapshots reserve", f.Name)
		}
		eq, ok := rankEqFor(f.Type)
		if !ok || !rowstore.Storable(f.Type) {
			return nil, fmt.Errorf("rank: input column %q has type %s, which the operator cannot hold", f.Name, f.Type)
		}
		c.eq = append(c.eq, eq)
	}
	for _, p := range r.PartitionBy {
		i, err := col("partition", p)
		if err != nil {
			return nil, err
		}
		c.partIdx = append(c.partIdx, i)
		c.partType = append(c.partType, r.Input.Field(i).Type)
	}
	if len(c.partType) > 0 {
		if _, err := kernels.NewGroupTable(c.partType); err != nil {
			return nil, fmt.Errorf("rank: partition columns: %w", err)
		}
	}
	for _, o := range r.OrderBy {
		i, err := col("order", o.Column)
		if err != nil {
			return nil, err
		}
		k, ok := rankKeyColFor(r.Input.Field(i).Type, i, o.Desc, o.NullsFirst)
		if !ok {
			return nil, fmt.Errorf("rank: order column %q has type %s, which cannot be ranked", o.Column, r.Input.Field(i).Type)
		}
		c.order = append(c.order, k)
	}
	c.out = r.Input
	if r.RankColumn != "" {
		if len(r.Input.FieldIndices(r.RankColumn)) > 0 {
			return nil, fmt.Errorf("rank: rank column %q is already an input column", r.RankColumn)
		}
		fields := append(slices.Clone(r.Input.Fields()), arrow.Field{Name: r.RankColumn, Type: arrow.PrimitiveTypes.Int64})
		c.out = arrow.NewSchema(fields, nil)
	}
	return c, nil
}

// rankBase is what both operators share: configuration, partition ids,
// key encoding and scratch.
type rankBase struct {
	cfg   Rank
	what  string // the operator's name in errors: "rank" when empty
	c     *rankCompiled
	info  *arrowflow.TaskInfo
	mem   memory.Allocator
	clock arrowflow.Clock
	ttl   int64 // StateTTL in nanoseconds, 0 without

	// parts numbers the partitions (nil without PartitionBy: one
	// partition, 0).
	parts *kernels.GroupTable
	stats RankStats

	// scratch, reused across batches
	rows    []int32  // physical rows of the selected rows
	pids    []uint32 // partition id of each selected row
	hashes  []uint64 // partition key hash of each selected row
	bkeys   []byte   // order key of the k-th row: bkeys[bkeyOff[k]:bkeyOff[k+1]]
	bkeyOff []int
	cur     []int
	keyCols []arrow.Array
}

func (o *rankBase) open(info *arrowflow.TaskInfo) error {
	c, err := o.cfg.compile()
	if err != nil {
		return err
	}
	o.c, o.info, o.mem = c, info, info.Allocator
	if o.mem == nil {
		o.mem = memory.DefaultAllocator
	}
	o.clock = info.Clock
	if o.clock == nil {
		o.clock = arrowflow.SystemClock
	}
	o.ttl = int64(o.cfg.StateTTL)
	if len(c.partType) > 0 {
		if o.parts, err = kernels.NewGroupTable(c.partType); err != nil {
			return err
		}
	}
	return nil
}

func (o *rankBase) errorf(format string, args ...any) error {
	what := o.what
	if what == "" {
		what = "rank"
	}
	return fmt.Errorf("%s %s: "+format, append([]any{what, o.info.Name}, args...)...)
}

// now is the processing time in nanoseconds, read only with a TTL.
func (o *rankBase) now() int64 {
	if o.ttl == 0 {
		return 0
	}
	return o.clock.Now().UnixNano()
}

func (o *rankBase) checkSchema(b arrowflow.Batch) error {
	if s := b.Record.Schema(); s != o.cfg.Input && !s.Equal(o.cfg.Input) {
		return o.errorf("batch schema %s differs from the configured input %s", s, o.cfg.Input)
	}
	return nil
}

// prepare fills rows, pids, hashes and the order keys for the selected
// rows of b (rec and sel).
func (o *rankBase) prepare(rec arrow.RecordBatch, sel []int32) error {
	n := int(rec.NumRows())
	if sel != nil {
		n = len(sel)
	}
	o.rows = rankGrow(o.rows, n)
	if sel != nil {
		copy(o.rows, sel)
	} else {
		for i := range o.rows {
			o.rows[i] = int32(i)
		}
	}
	o.pids = rankGrow(o.pids, n)
	o.hashes = rankGrow(o.hashes, n)
	if o.parts == nil {
		clear(o.pids)
		clear(o.hashes)
	} else {
		o.keyCols = o.keyCols[:0]
		for _, i := range o.c.partIdx {
			o.keyCols = append(o.keyCols, rec.Column(i))
		}
		if err := o.parts.FindOrInsert(o.keyCols, sel, o.pids); err != nil {
			return o.errorf("partition columns: %w", err)
		}
		if err := kernels.HashColumns(o.keyCols, sel, o.hashes); err != nil {
			return o.errorf("partition columns: %w", err)
		}
	}
	o.bkeys, o.bkeyOff, o.cur = rankEncodeKeys(o.c.order, rec, o.rows, o.bkeys, o.bkeyOff, o.cur)
	return nil
}

// bkey is the order key of the k-th prepared row.
func (o *rankBase) bkey(k int) []byte { return o.bkeys[o.bkeyOff[k]:o.bkeyOff[k+1]] }

// partitionsLen is the number of partition ids handed out.
func (o *rankBase) partitionsLen() int {
	if o.parts == nil {
		return 1
	}
	return o.parts.Len()
}

// rankCompactPartitionsMin is the least number of partition ids held for
// no rows (dropped by the TTL) for which the partition table is rebuilt.
const rankCompactPartitionsMin = 1024

// compactPartitions rebuilds the partition table with only the partitions
// keep (old ids, increasing): the k-th gets id k. A GroupTable cannot
// forget a key, so without this every partition the TTL dropped would
// keep its key forever. It runs between batches.
func (o *rankBase) compactPartitions(keep []int32) error {
	if o.parts == nil {
		return nil
	}
	all := o.parts.Keys(o.mem)
	keys := make([]arrow.Array, 0, len(all))
	defer func() {
		for _, a := range keys {
			a.Release()
		}
	}()
	var err error
	for _, a := range all {
		var t arrow.Array
		if err == nil {
			t, err = kernels.Take(o.mem, a, keep)
		}
		a.Release()
		if t != nil {
			keys = append(keys, t)
		}
	}
	if err != nil {
		return o.errorf("compact partitions: %w", err)
	}
	parts, err := kernels.NewGroupTable(o.c.partType)
	if err != nil {
		return o.errorf("compact partitions: %w", err)
	}
	gids := make([]uint32, len(keep))
	if len(keep) > 0 {
		if err := parts.FindOrInsert(keys, nil, gids); err != nil {
			return o.errorf("compact partitions: %w", err)
		}
	}
	for i, g := range gids {
		if int(g) != i {
			panic("BUG: rank: partition keys not distinct when the partition table was rebuilt")
		}
	}
	o.parts = parts
	return nil
}
