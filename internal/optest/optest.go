// Package optest is weir's operator test harness, after CockroachDB
// colexec's RunTests: Run feeds one test case to an operator in many
// configurations (parallelism 1, 2 and 4 with rows routed by key group as
// the runtime routes them, batch sizes 1, 7 and 1000, random selection
// vectors over filler rows, snapshot and restore with rescaling) and checks
// after every epoch that the materialized output changelog equals what
// the case wants.
//
// A case describes its input as rows of Go values, each in an epoch, and
// its expected output as a function from an epoch to the materialized
// table (a multiset of rows) after that epoch: usually a plain
// row-at-a-time reference evaluated over the rows of epochs 0..e.
//
// What each configuration does, per epoch: the rows of every input are cut
// into batches of the configuration's size (inputs interleaved batch by
// batch) and each batch is split among the subtasks by the key group of
// its KeyBy columns (kernels.HashColumns, kernels.KeyGroupOf,
// state.SubtaskOf); then the case's watermark, if any, is processed; then
// the epoch closes as a checkpoint barrier closes it (FlushEpoch on every
// subtask that implements arrowflow.EpochFlusher, then SnapshotState into
// a state.MemoryStore). After the last epoch's rows come the final
// watermark (arrowflow.MaxEventTime) and Finish, before that epoch closes.
// Restore configurations close every instance after some epochs and open
// new ones at another parallelism, each restored through
// state.MultiReader from every old snapshot whose key groups overlap its
// own. The snapshots are opened whole (not filtered by key group as
// FileStore would): an operator must keep only the rows of its own key
// groups, as arrowflow.Operator requires; and every snapshot table with a
// state.KeyGroupColumn must hold only key groups of the subtask that wrote
// it, which catches a restore that kept other subtasks' rows.
//
// Every output batch is checked (selection vector valid, one row kind per
// physical row, no kinds for AppendOnly cases) and applied to one
// materialized multiset: Insert and UpdateAfter add a row, UpdateBefore
// and Delete remove one equal row, and removing a row that is not there
// fails the test naming the row. Watermarks must not go backwards. Memory
// comes from a checked allocator that must be empty once every instance is
// closed.
//
// A test reads:
//
//	rows := []optest.Row{{Values: []any{"a", 1.5}, Epoch: 0}, {Kind: arrowflow.Delete, Values: []any{"a", 1.5}, Epoch: 1}}
//	optest.Run(t, optest.Case{
//		Name:    "sum",
//		Factory: func() arrowflow.Operator { return newSum() },
//		Inputs:  []optest.Input{{Schema: schema, KeyBy: []string{"k"}, Rows: rows}},
//		Want:    func(e int) [][]any { return referenceSum(optest.UpTo(rows, e)) },
//	})
package optest

import (
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/state"
)

// Row is one input row: its kind, its values (Go values as Value returns
// them: int64, float64, string, bool, time.Time for timestamps and dates,
// a string for decimals, nil for NULL; int is accepted for integers) and
// the epoch it belongs to.
type Row struct {
	Kind   arrowflow.RowKind
	Values []any
	Epoch  int
}

// Input is one input of the operator under test, in the order of the
// input indices ProcessBatch sees.
type Input struct {
	// Schema is the schema of the input's batches.
	Schema *arrow.Schema
	// KeyBy names the columns the runtime routes this input by. Nil means
	// every row goes to subtask 0, and the case runs at parallelism 1
	// only (a case is keyed when every input has KeyBy).
	KeyBy []string
	// Rows are the input's rows in arrival order; epochs must not
	// decrease. An input whose rows are all inserts is sent append-only
	// (batches without Kinds).
	Rows []Row
}

// Case is one operator test.
type Case struct {
	// Name names the case in messages and snapshot ids.
	Name string
	// Factory makes the operator instances, one per subtask.
	Factory arrowflow.OperatorFactory
	// Inputs are the operator's inputs.
	Inputs []Input
	// Want is the expected materialized output table after each epoch
	// (0 up to the last), as rows of Go values (Row.Values' conventions),
	// compared as multisets with floats within FloatTolerance. Nil checks
	// only that the output is a consistent changelog.
	Want func(epoch int) [][]any
	// AppendOnly requires output batches to carry no Kinds.
	AppendOnly bool
	// MaxParallelism is the number of key groups; 128 when zero.
	MaxParallelism int
	// Epochs is the number of epochs; when zero, one more than the
	// highest Row.Epoch. Epochs without rows still close (and get their
	// watermark).
	Epochs int
	// Watermark, when not nil, gives the watermark every subtask
	// processes after the rows of an epoch and before the epoch closes
	// (ok false: none for that epoch).
	Watermark func(epoch int) (wm arrowflow.EventTime, ok bool)
	// WantWatermark, when not nil, is the watermark every subtask must
	// have emitted last when epoch closes (ok false: not checked for that
	// epoch). The final watermark is arrowflow.MaxEventTime, processed
	// before the last epoch closes.
	WantWatermark func(epoch int) (wm arrowflow.EventTime, ok bool)
	// Clock is TaskInfo.Clock (nil: the system clock).
	Clock arrowflow.Clock
	// Configs replaces DefaultConfigs when not nil.
	Configs []Config
	// Seed seeds the random selections (each configuration derives its
	// own stream from it and its name, so a failure replays).
	Seed uint64
}

// Config is one way Run runs a case.
type Config struct {
	// Parallelism is the parallelism of each run of the operator: one
	// entry runs it once; [2, 4] runs it at 2, then, after the middle
	// epoch closes, restores its snapshots at 4; more entries spread the
	// rescales evenly over the epochs (several after one epoch when there
	// are more rescales than epochs).
	Parallelism []int
	// BatchSize is the number of rows of an input cut into one batch
	// (before routing to subtasks).
	BatchSize int
	// RandomSel adds unselected filler rows (copies of random rows of the
	// input, with random kinds on changelog inputs) around the selected
	// ones and sends a selection vector.
	RandomSel bool
}

// String names the configuration as its subtest: par=2to4/batch=7/sel=random.
func (c Config) String() string {
	pars := make([]string, len(c.Parallelism))
	for i, p := range c.Parallelism {
		pars[i] = strconv.Itoa(p)
	}
	sel := "all"
	if c.RandomSel {
		sel = "random"
	}
	return fmt.Sprintf("par=%s/batch=%d/sel=%s", strings.Join(pars, "to"), c.BatchSize, sel)
}

// DefaultConfigs are the configurations Run uses: for keyed cases,
// parallelism 1, 2 and 4 and the restores 2 -> 1, 2 -> 4, 4 -> 2,
// 1 -> 1 and 2 -> 4 -> 1, each with batch sizes 1, 7 and 1000, with and without random
// selections; for unkeyed cases, parallelism 1 and the restore 1 -> 1.
func DefaultConfigs(keyed bool) []Config {
	pars := [][]int{{1}, {1, 1}}
	if keyed {
		pars = [][]int{{1}, {2}, {4}, {2, 1}, {2, 4}, {4, 2}, {1, 1}, {2, 4, 1}}
	}
	var out []Config
	for _, p := range pars {
		for _, bs := range []int{1, 7, 1000} {
			for _, sel := range []bool{false, true} {
				out = append(out, Config{Parallelism: p, BatchSize: bs, RandomSel: sel})
			}
		}
	}
	return out
}

// Run runs c in every configuration, each as a subtest of t.
func Run(t *testing.T, c Case) {
	t.Helper()
	runCase(realT{t}, c)
}

// tester is what the harness needs of a test: testing.TB and subtests.
// The harness's own tests implement it with a fake that records failures.
type tester interface {
	testing.TB
	sub(name string, f func(tester)) bool
}

type realT struct{ *testing.T }

func (r realT) sub(name string, f func(tester)) bool {
	return r.T.Run(name, func(t *testing.T) { f(realT{t}) })
}

func runCase(t tester, c Case) {
	t.Helper()
	epochs, err := validate(&c)
	if err != nil {
		t.Fatalf("optest case %q: %v", c.Name, err)
	}
	keyed := true
	for _, in := range c.Inputs {
		keyed = keyed && in.KeyBy != nil
	}
	configs := c.Configs
	if configs == nil {
		configs = DefaultConfigs(keyed)
	}
	if want := c.Want; want != nil {
		// References are evaluated once per epoch, not once per
		// configuration.
		cache := make([][][]any, epochs)
		done := make([]bool, epochs)
		c.Want = func(e int) [][]any {
			if !done[e] {
				cache[e], done[e] = want(e), true
			}
			return cache[e]
		}
	}
	for _, cfg := range configs {
		if cfg.BatchSize < 1 || len(cfg.Parallelism) == 0 {
			t.Fatalf("optest case %q: bad configuration %+v", c.Name, cfg)
		}
		if !keyed && slices.ContainsFunc(cfg.Parallelism, func(p int) bool { return p != 1 }) {
			t.Fatalf("optest case %q: configuration %s needs every input to have KeyBy", c.Name, cfg)
		}
		t.sub(cfg.String(), func(t tester) { runConfig(t, c, cfg, epochs) })
	}
}

// validate fills defaults and checks the case; it returns the number of
// epochs.
func validate(c *Case) (int, error) {
	if c.Factory == nil {
		return 0, fmt.Errorf("no Factory")
	}
	if len(c.Inputs) == 0 {
		return 0, fmt.Errorf("no Inputs")
	}
	if c.MaxParallelism == 0 {
		c.MaxParallelism = state.DefaultMaxParallelism
	}
	if err := state.ValidateParallelism(1, c.MaxParallelism); err != nil {
		return 0, err
	}
	epochs := 0
	for i, in := range c.Inputs {
		if in.Schema == nil {
			return 0, fmt.Errorf("input %d has no Schema", i)
		}
		if in.KeyBy != nil && len(in.KeyBy) == 0 {
			return 0, fmt.Errorf("input %d: KeyBy is empty; use nil for an unkeyed input (parallelism 1)", i)
		}
		for _, k := range in.KeyBy {
			if in.Schema.FieldIndices(k) == nil {
				return 0, fmt.Errorf("input %d: KeyBy column %q not in schema %s", i, k, in.Schema)
			}
		}
		for r, row := range in.Rows {
			if row.Epoch < 0 || (r > 0 && row.Epoch < in.Rows[r-1].Epoch) {
				return 0, fmt.Errorf("input %d row %d: epoch %d after epoch %d (epochs must not decrease)", i, r, row.Epoch, in.Rows[max(r-1, 0)].Epoch)
			}
			if row.Kind > arrowflow.Delete {
				return 0, fmt.Errorf("input %d row %d: bad kind %v", i, r, row.Kind)
			}
			epochs = max(epochs, row.Epoch+1)
		}
	}
	if c.Epochs != 0 {
		if c.Epochs < epochs {
			return 0, fmt.Errorf("Epochs is %d but rows reach epoch %d", c.Epochs, epochs-1)
		}
		epochs = c.Epochs
	}
	return max(epochs, 1), nil
}

// UpTo returns the rows of epochs 0 to epoch, for references: rows are in
// epoch order, so it is a prefix of rows.
func UpTo(rows []Row, epoch int) []Row {
	for i, r := range rows {
		if r.Epoch > epoch {
			return rows[:i]
		}
	}
	return rows
}

func runConfig(t tester, c Case, cfg Config, epochs int) {
	t.Helper()
	h := fnv.New64a()
	h.Write([]byte(cfg.String()))
	r := &runner{
		t: t, c: c, cfg: cfg,
		mem:    newCheckedAllocator(t),
		rng:    rand.New(rand.NewPCG(c.Seed, h.Sum64())),
		store:  state.NewMemoryStore(),
		budget: state.NewMemoryBudget(0),
	}
	defer r.closeAll()
	for i, in := range c.Inputs {
		p, err := prepareInput(r.mem, in, c.MaxParallelism, epochs)
		if err != nil {
			t.Fatalf("input %d: %v", i, err)
		}
		defer p.rec.Release()
		r.inputs = append(r.inputs, p)
	}
	r.open(cfg.Parallelism[0], nil, 0, 0)
	// rescaleAt[k] is the epoch after which the run at Parallelism[k]
	// ends and the one at Parallelism[k+1] starts: rescales are spread
	// evenly over the epochs (one rescale: after the middle epoch).
	rescales := len(cfg.Parallelism) - 1
	rescaleAt := make([]int, rescales)
	for k := range rescaleAt {
		rescaleAt[k] = min(max(0, (k+1)*epochs/(rescales+1)-1), epochs-1)
	}
	next := 0 // index in rescaleAt of the next rescale
	for e := range epochs {
		r.feed(e)
		if c.Watermark != nil {
			if wm, ok := c.Watermark(e); ok {
				r.watermark(wm)
			}
		}
		last := e == epochs-1
		here := 0 // rescales after this epoch
		for k := next; k < rescales && rescaleAt[k] == e; k++ {
			here++
		}
		if last && here == 0 {
			r.finish()
		}
		r.flush(e)
		handles := r.snapshot(e)
		if !last || here == 0 {
			r.check(e)
		}
		for i := range here {
			if i > 0 {
				handles = r.snapshot(e) // restored and snapshotted again at once
			}
			next++
			r.rescale(cfg.Parallelism[next], handles, e)
		}
		if last && here > 0 {
			r.finish()
			r.flush(e)
			r.snapshot(e)
			r.check(e)
		}
	}
	r.closeAll()
}

// preparedInput is an input as one record, with each row's kind, key
// group and the rows of each epoch.
type preparedInput struct {
	rec       arrow.RecordBatch
	kinds     []arrowflow.RowKind
	changelog bool
	keyed     bool
	keyGroups []int
	epochRows [][]int32
}

func prepareInput(mem memoryAllocator, in Input, maxPar, epochs int) (*preparedInput, error) {
	vals := make([][]any, len(in.Rows))
	p := &preparedInput{kinds: make([]arrowflow.RowKind, len(in.Rows)), epochRows: make([][]int32, epochs), keyed: in.KeyBy != nil}
	for i, row := range in.Rows {
		vals[i] = row.Values
		p.kinds[i] = row.Kind
		p.changelog = p.changelog || row.Kind != arrowflow.Insert
		p.epochRows[row.Epoch] = append(p.epochRows[row.Epoch], int32(i))
	}
	rec, err := BuildRecord(mem, in.Schema, vals)
	if err != nil {
		return nil, err
	}
	p.rec = rec
	if p.keyed && len(in.Rows) > 0 {
		groups, err := KeyGroups(rec, in.KeyBy, maxPar)
		if err != nil {
			rec.Release()
			return nil, err
		}
		p.keyGroups = groups
	}
	return p, nil
}

// instance is one running subtask.
type instance struct {
	op   arrowflow.Operator
	info *arrowflow.TaskInfo
	out  *emitter
}

type runner struct {
	t      tester
	c      Case
	cfg    Config
	mem    memoryAllocator
	rng    *rand.Rand
	store  *state.MemoryStore
	budget *state.MemoryBudget // unlimited: reports are exercised, never refused
	inputs []*preparedInput

	insts   []*instance
	gen     int // snapshot generation, to keep snapshot ids unique
	table   Multiset
	schema  *arrow.Schema // of the first output batch
	emitErr error
}

// open starts par new instances, restoring each from the handles (of an
// old run at parallelism len(handles)) whose key groups overlap its own.
func (r *runner) open(par int, handles []state.Handle, oldPar int, firstEpoch uint64) {
	r.t.Helper()
	if err := state.ValidateParallelism(par, r.c.MaxParallelism); err != nil {
		r.t.Fatalf("%v", err)
	}
	for s := range par {
		info := &arrowflow.TaskInfo{
			Job: "optest", Name: r.c.Name, Subtask: s, Parallelism: par,
			MaxParallelism: r.c.MaxParallelism,
			KeyGroups:      state.RangeOf(s, r.c.MaxParallelism, par),
			Allocator:      r.mem,
			Logger:         slog.New(slog.DiscardHandler),
			StateBudget:    r.budget.Account(fmt.Sprintf("%s#%d", r.c.Name, r.gen), s),
			Clock:          r.c.Clock,
			FirstEpoch:     firstEpoch,
		}
		inst := &instance{op: r.c.Factory(), info: info, out: &emitter{r: r, subtask: s}}
		if inst.op == nil {
			r.t.Fatalf("Factory returned a nil operator")
		}
		r.insts = append(r.insts, inst)
		if err := inst.op.Open(info); err != nil {
			r.t.Fatalf("subtask %d/%d: Open: %v", s, par, err)
		}
		var readers []state.SnapshotReader
		for o, h := range handles {
			if h.IsZero() || !state.RangeOf(o, r.c.MaxParallelism, oldPar).Overlaps(info.KeyGroups) {
				continue
			}
			rd, err := r.store.Open(h, r.mem)
			if err != nil {
				r.t.Fatalf("open snapshot of old subtask %d: %v", o, err)
			}
			readers = append(readers, rd)
		}
		if len(readers) > 0 {
			err := inst.op.RestoreState(state.MultiReader(readers...))
			for _, rd := range readers {
				_ = rd.Close()
			}
			if err != nil {
				r.t.Fatalf("subtask %d/%d (key groups %s): RestoreState from parallelism %d: %v", s, par, info.KeyGroups, oldPar, err)
			}
		}
	}
}

// closeAll closes every instance (once).
func (r *runner) closeAll() {
	insts := r.insts
	r.insts = nil
	for _, inst := range insts {
		if err := inst.op.Close(); err != nil {
			r.t.Errorf("subtask %d: Close: %v", inst.info.Subtask, err)
		}
	}
}

// after fails the test if an operator call or the emitter failed.
func (r *runner) after(inst *instance, what string, err error) {
	r.t.Helper()
	if r.emitErr != nil {
		r.t.Fatalf("subtask %d/%d: during %s: %v", inst.info.Subtask, inst.info.Parallelism, what, r.emitErr)
	}
	if err != nil {
		r.t.Fatalf("subtask %d/%d: %s: %v", inst.info.Subtask, inst.info.Parallelism, what, err)
	}
}

// feed sends the rows of epoch e: each input cut into batches of the
// configuration's size, inputs interleaved batch by batch, each batch split
// among the subtasks by key group.
func (r *runner) feed(e int) {
	r.t.Helper()
	pos := make([]int, len(r.inputs))
	for more := true; more; {
		more = false
		for i, in := range r.inputs {
			rows := in.epochRows[e]
			if pos[i] >= len(rows) {
				continue
			}
			end := min(pos[i]+r.cfg.BatchSize, len(rows))
			r.deliver(i, rows[pos[i]:end])
			pos[i] = end
			more = more || end < len(rows)
		}
	}
}

func (r *runner) deliver(input int, rows []int32) {
	r.t.Helper()
	in := r.inputs[input]
	par := len(r.insts)
	per := make([][]int32, par)
	for _, row := range rows {
		s := 0
		if in.keyed {
			s = state.SubtaskOf(in.keyGroups[row], r.c.MaxParallelism, par)
		}
		per[s] = append(per[s], row)
	}
	for s, mine := range per {
		if len(mine) == 0 {
			continue
		}
		idx, sel := mine, []int32(nil)
		if r.cfg.RandomSel {
			idx, sel = r.withFillers(in, mine)
		}
		rec, err := takeRecord(r.mem, in.rec, idx)
		if err != nil {
			r.t.Fatalf("input %d: %v", input, err)
		}
		var kinds []arrowflow.RowKind
		if in.changelog {
			kinds = make([]arrowflow.RowKind, len(idx))
			for k, i := range idx {
				kinds[k] = in.kinds[i]
			}
			if sel != nil {
				// Fillers get random kinds; the selected rows keep theirs.
				isSel := make([]bool, len(idx))
				for _, k := range sel {
					isSel[k] = true
				}
				for k := range kinds {
					if !isSel[k] {
						kinds[k] = arrowflow.RowKind(r.rng.IntN(4))
					}
				}
			}
		}
		inst := r.insts[s]
		err = inst.op.ProcessBatch(input, arrowflow.Batch{Record: rec, Sel: sel, Kinds: kinds}, inst.out)
		r.after(inst, fmt.Sprintf("ProcessBatch of input %d", input), err)
	}
}

// withFillers returns the rows to take, the selected ones among random
// copies of other rows, and the selection vector of the selected ones.
func (r *runner) withFillers(in *preparedInput, rows []int32) (idx, sel []int32) {
	n := int(in.rec.NumRows())
	filler := func() {
		for range r.rng.IntN(3) {
			idx = append(idx, int32(r.rng.IntN(n)))
		}
	}
	for _, row := range rows {
		if r.rng.IntN(2) == 0 {
			filler()
		}
		sel = append(sel, int32(len(idx)))
		idx = append(idx, row)
	}
	filler()
	return idx, sel
}

func (r *runner) watermark(wm arrowflow.EventTime) {
	r.t.Helper()
	for _, inst := range r.insts {
		r.after(inst, fmt.Sprintf("ProcessWatermark(%s)", wm), inst.op.ProcessWatermark(wm, inst.out))
	}
}

func (r *runner) finish() {
	r.t.Helper()
	r.watermark(arrowflow.MaxEventTime)
	for _, inst := range r.insts {
		r.after(inst, "Finish", inst.op.Finish(inst.out))
	}
}

func (r *runner) flush(e int) {
	r.t.Helper()
	for _, inst := range r.insts {
		if f, ok := inst.op.(arrowflow.EpochFlusher); ok {
			r.after(inst, fmt.Sprintf("FlushEpoch(%d)", e), f.FlushEpoch(uint64(e), inst.out))
		}
	}
}

// snapshot snapshots every instance as of the end of epoch e.
func (r *runner) snapshot(e int) []state.Handle {
	r.t.Helper()
	r.gen++
	handles := make([]state.Handle, len(r.insts))
	for s, inst := range r.insts {
		id := state.SnapshotID{Job: "optest", Epoch: uint64(e), Operator: fmt.Sprintf("%s#%d", r.c.Name, r.gen), Subtask: s}
		w, err := r.store.Create(id, inst.info.KeyGroups)
		if err != nil {
			r.t.Fatalf("create snapshot: %v", err)
		}
		if err := inst.op.SnapshotState(uint64(e), w); err != nil {
			w.Abort()
			r.after(inst, fmt.Sprintf("SnapshotState(%d)", e), err)
		}
		r.after(inst, fmt.Sprintf("SnapshotState(%d)", e), nil)
		h, err := w.Finish()
		if err != nil {
			r.t.Fatalf("subtask %d: finish snapshot of epoch %d: %v", s, e, err)
		}
		handles[s] = h
		if !h.IsZero() {
			if err := r.checkKeyGroups(h, inst.info.KeyGroups); err != nil {
				r.t.Fatalf("subtask %d/%d: snapshot of epoch %d: %v", s, len(r.insts), e, err)
			}
		}
	}
	return handles
}

// checkKeyGroups checks the invariant of state.KeyGroupColumn in every
// table of a snapshot that has one: uint16, no nulls, every value in the
// writing subtask's range. It catches a restore that keeps other
// subtasks' rows, once they are snapshotted again.
func (r *runner) checkKeyGroups(h state.Handle, mine state.KeyGroupRange) error {
	rd, err := r.store.Open(h, r.mem)
	if err != nil {
		return err
	}
	defer rd.Close()
	for _, table := range rd.Tables() {
		err := rd.Read(table, func(rec arrow.RecordBatch) error {
			idx := rec.Schema().FieldIndices(state.KeyGroupColumn)
			if len(idx) == 0 {
				return nil
			}
			col, ok := rec.Column(idx[0]).(*array.Uint16)
			if !ok {
				return fmt.Errorf("table %q: column %s is %s, not uint16", table, state.KeyGroupColumn, rec.Column(idx[0]).DataType())
			}
			if col.NullN() > 0 {
				return fmt.Errorf("table %q: column %s has nulls", table, state.KeyGroupColumn)
			}
			for i, kg := range col.Uint16Values() {
				if !mine.Contains(int(kg)) {
					return fmt.Errorf("table %q row %d: key group %d is not in the subtask's key groups %s (a restore must keep only its own key groups)", table, i, kg, mine)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// rescale closes every instance and restores new ones at par from
// handles, after epoch e.
func (r *runner) rescale(par int, handles []state.Handle, e int) {
	r.t.Helper()
	oldPar := len(r.insts)
	r.closeAll()
	r.open(par, handles, oldPar, uint64(e)+1)
}

func (r *runner) check(e int) {
	r.t.Helper()
	if r.c.WantWatermark != nil {
		if want, ok := r.c.WantWatermark(e); ok {
			for _, inst := range r.insts {
				if !inst.out.hasWM || inst.out.wm != want {
					last := "none"
					if inst.out.hasWM {
						last = inst.out.wm.String()
					}
					r.t.Fatalf("subtask %d/%d: last watermark emitted by the end of epoch %d is %s, want %s", inst.info.Subtask, len(r.insts), e, last, want)
				}
			}
		}
	}
	if r.c.Want == nil {
		return
	}
	if d := Diff(r.table.Rows(), r.c.Want(e)); d != "" {
		r.t.Fatalf("materialized output after epoch %d differs: %s", e, d)
	}
}

// emitter receives one instance's output: it checks every batch and
// applies it to the runner's materialized table.
type emitter struct {
	r       *runner
	subtask int
	wm      arrowflow.EventTime
	hasWM   bool
}

func (em *emitter) fail(err error) error {
	if em.r.emitErr == nil {
		em.r.emitErr = err
	}
	return err
}

// Emit implements arrowflow.Emitter.
func (em *emitter) Emit(b arrowflow.Batch) error {
	if b.Record == nil {
		return em.fail(fmt.Errorf("subtask %d emitted a batch without a record", em.subtask))
	}
	defer b.Release()
	if err := b.Validate(); err != nil {
		return em.fail(fmt.Errorf("subtask %d emitted a bad batch: %w", em.subtask, err))
	}
	if b.Kinds != nil && len(b.Kinds) != int(b.Record.NumRows()) {
		return em.fail(fmt.Errorf("subtask %d emitted a batch of %d rows with %d row kinds", em.subtask, b.Record.NumRows(), len(b.Kinds)))
	}
	if em.r.c.AppendOnly && b.Kinds != nil {
		return em.fail(fmt.Errorf("subtask %d emitted row kinds, but the case is append-only", em.subtask))
	}
	if em.r.schema == nil {
		em.r.schema = b.Schema()
	} else if !em.r.schema.Equal(b.Schema()) {
		return em.fail(fmt.Errorf("subtask %d emitted schema %s after schema %s", em.subtask, b.Schema(), em.r.schema))
	}
	for _, ch := range Changes(b) {
		if err := em.r.table.Apply(ch.Kind, ch.Values); err != nil {
			return em.fail(fmt.Errorf("subtask %d emitted %w (materialized output so far: %d rows)", em.subtask, err, em.r.table.Len()))
		}
	}
	return nil
}

// EmitWatermark implements arrowflow.Emitter: watermarks must not go
// backwards.
func (em *emitter) EmitWatermark(wm arrowflow.EventTime) error {
	if em.hasWM && wm < em.wm {
		return em.fail(fmt.Errorf("subtask %d emitted watermark %s after %s: watermarks must not go backwards", em.subtask, wm, em.wm))
	}
	em.wm, em.hasWM = wm, true
	return nil
}
