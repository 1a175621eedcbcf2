package collect_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/arrowflow/ops"
	"github.com/weirflow/weir/internal/testutil"
	"github.com/weirflow/weir/sinks/collect"
	"github.com/weirflow/weir/sources/datagen"
)

var ctx = context.Background()

// newMem is a checked allocator: the test fails if anything is left.
var newMem = testutil.CheckedAllocator

var rowSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// testRow is one input row; an empty name stands for null.
type testRow struct {
	id   int64
	name string
}

// want is the row as the sink must return it: the values ValueAt gives.
func (r testRow) want() []any {
	if r.name == "" {
		return []any{r.id, nil}
	}
	return []any{r.id, r.name}
}

func rowsFrom(first, n int) []testRow {
	out := make([]testRow, n)
	for i := range out {
		id := first + i
		out[i] = testRow{id: int64(id)}
		if id%4 != 3 { // every fourth name is null
			out[i].name = "n" + strconv.Itoa(id)
		}
	}
	return out
}

func record(mem memory.Allocator, rows []testRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, rowSchema)
	defer b.Release()
	ids, names := b.Field(0).(*array.Int64Builder), b.Field(1).(*array.StringBuilder)
	for _, r := range rows {
		ids.Append(r.id)
		if r.name == "" {
			names.AppendNull()
		} else {
			names.Append(r.name)
		}
	}
	return b.NewRecordBatch()
}

func wantRows(groups ...[]testRow) [][]any {
	var out [][]any
	for _, g := range groups {
		for _, r := range g {
			out = append(out, r.want())
		}
	}
	return out
}

// openWriters opens one writer per subtask of a sink of the given
// parallelism; they are closed when the test ends.
func openWriters(t *testing.T, s *collect.Sink, parallelism int) []arrowflow.SinkWriter {
	t.Helper()
	ws := make([]arrowflow.SinkWriter, parallelism)
	for i := range ws {
		w, err := s.Open(&arrowflow.TaskInfo{Name: "out", Subtask: i, Parallelism: parallelism})
		if err != nil {
			t.Fatal(err)
		}
		ws[i] = w
		t.Cleanup(func() {
			if err := w.Close(); err != nil {
				t.Errorf("close writer %d: %v", i, err)
			}
		})
	}
	return ws
}

func write(t *testing.T, w arrowflow.SinkWriter, mem memory.Allocator, rows []testRow) {
	t.Helper()
	if err := w.Write(ctx, arrowflow.NewBatch(record(mem, rows))); err != nil {
		t.Fatal(err)
	}
}

func preCommit(t *testing.T, epoch uint64, ws ...arrowflow.SinkWriter) [][]byte {
	t.Helper()
	payloads := make([][]byte, len(ws))
	for i, w := range ws {
		p, err := w.PreCommit(ctx, epoch)
		if err != nil {
			t.Fatal(err)
		}
		payloads[i] = p
	}
	return payloads
}

func sameRows(t *testing.T, what string, got, want [][]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d\ngot  %v\nwant %v", what, len(got), len(want), got, want)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("%s: row %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

func TestRowsBecomeVisibleOnlyAtCommit(t *testing.T) {
	mem := newMem(t)
	s := collect.New()
	ws := openWriters(t, s, 2)
	r0a, r0b, r1 := rowsFrom(0, 3), rowsFrom(3, 2), rowsFrom(100, 4)
	// Subtask 1 writes first: commit order is payload (subtask) order,
	// not write order.
	write(t, ws[1], mem, r1)
	write(t, ws[0], mem, r0a)
	write(t, ws[0], mem, r0b)
	if n := len(s.Rows()); n != 0 || s.Staged() != 0 {
		t.Fatalf("before pre-commit: %d rows visible, %d staged; want none", n, s.Staged())
	}
	payloads := preCommit(t, 1, ws...)
	if want := len(r0a) + len(r0b) + len(r1); s.Staged() != want {
		t.Fatalf("after pre-commit: %d rows staged, want %d", s.Staged(), want)
	}
	if n := len(s.Rows()); n != 0 || len(s.Epochs()) != 0 {
		t.Fatalf("after pre-commit: %d rows visible, epochs %v; want none", n, s.Epochs())
	}
	if err := s.Commit(ctx, 1, payloads); err != nil {
		t.Fatal(err)
	}
	sameRows(t, "after commit", s.Rows(), wantRows(r0a, r0b, r1))
	if s.Staged() != 0 || !slices.Equal(s.Epochs(), []uint64{1}) || s.Aborted() != 0 {
		t.Fatalf("after commit: staged %d, epochs %v, aborted %d", s.Staged(), s.Epochs(), s.Aborted())
	}
}

func TestCommitIsIdempotent(t *testing.T) {
	mem := newMem(t)
	s := collect.New()
	ws := openWriters(t, s, 3)
	in := [][]testRow{rowsFrom(0, 5), nil, rowsFrom(10, 2)} // subtask 1 writes nothing
	for i, rows := range in {
		if rows != nil {
			write(t, ws[i], mem, rows)
		}
	}
	payloads := preCommit(t, 7, ws...)
	if payloads[1] != nil {
		t.Fatalf("a writer with no rows returned payload %x, want nil", payloads[1])
	}
	want := wantRows(in...)
	for i := 0; i < 3; i++ {
		if err := s.Commit(ctx, 7, payloads); err != nil {
			t.Fatalf("commit #%d: %v", i+1, err)
		}
		sameRows(t, fmt.Sprintf("after commit #%d", i+1), s.Rows(), want)
		if !slices.Equal(s.Epochs(), []uint64{7}) {
			t.Fatalf("after commit #%d: epochs %v, want [7]", i+1, s.Epochs())
		}
	}
	// Recovery may commit one subtask's payload again on its own.
	if err := s.Commit(ctx, 7, [][]byte{nil, nil, payloads[2]}); err != nil {
		t.Fatal(err)
	}
	sameRows(t, "after a partial re-commit", s.Rows(), want)
}

// Recovery re-commits the last recorded epoch, which a job restoring an
// older checkpoint may already have followed with later ones: the epoch
// must not be listed twice.
func TestRecommitOfEarlierEpochIsNotListedAgain(t *testing.T) {
	mem := newMem(t)
	s := collect.New()
	ws := openWriters(t, s, 1)
	var all [][]testRow
	var first [][]byte
	for epoch := uint64(1); epoch <= 2; epoch++ {
		rows := rowsFrom(int(epoch)*10, 2)
		all = append(all, rows)
		write(t, ws[0], mem, rows)
		p := preCommit(t, epoch, ws[0])
		if epoch == 1 {
			first = p
		}
		if err := s.Commit(ctx, epoch, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Commit(ctx, 1, first); err != nil {
		t.Fatal(err)
	}
	sameRows(t, "after re-committing epoch 1", s.Rows(), wantRows(all...))
	if got := s.Epochs(); !slices.Equal(got, []uint64{1, 2}) {
		t.Fatalf("epochs %v after re-committing epoch 1, want [1 2]", got)
	}
}

func TestAbortDropsStagedRows(t *testing.T) {
	mem := newMem(t)
	s := collect.New()
	ws := openWriters(t, s, 3)
	write(t, ws[0], mem, rowsFrom(0, 4))
	write(t, ws[2], mem, rowsFrom(4, 3))
	aborted := preCommit(t, 1, ws...)
	if s.Staged() != 7 {
		t.Fatalf("staged %d rows, want 7", s.Staged())
	}
	if err := s.Abort(ctx, 1, aborted); err != nil {
		t.Fatal(err)
	}
	if s.Staged() != 0 || s.Aborted() != 2 || len(s.Rows()) != 0 || len(s.Epochs()) != 0 {
		t.Fatalf("after abort: staged %d, aborted %d (want 2 subtask-epochs), rows %v, epochs %v",
			s.Staged(), s.Aborted(), s.Rows(), s.Epochs())
	}
	// Aborting again changes nothing; committing the aborted output fails.
	if err := s.Abort(ctx, 1, aborted); err != nil || s.Aborted() != 2 {
		t.Fatalf("second abort: %v, aborted %d, want 2", err, s.Aborted())
	}
	if err := s.Commit(ctx, 1, aborted); err == nil {
		t.Fatal("commit of aborted output succeeded")
	}
	// The writers go on with the next epoch as if nothing happened.
	next := rowsFrom(50, 2)
	write(t, ws[1], mem, next)
	if err := s.Commit(ctx, 2, preCommit(t, 2, ws...)); err != nil {
		t.Fatal(err)
	}
	sameRows(t, "after the next epoch", s.Rows(), wantRows(next))
	// Abort after commit is a no-op: committed rows stay.
	if err := s.Abort(ctx, 2, preCommit(t, 3, ws...)); err != nil || s.Aborted() != 2 {
		t.Fatalf("abort of empty epoch: %v, aborted %d", err, s.Aborted())
	}
	sameRows(t, "after an empty abort", s.Rows(), wantRows(next))
}

func TestNilPayloadsAreSkipped(t *testing.T) {
	mem := newMem(t)
	s := collect.New()
	ws := openWriters(t, s, 2)
	rows := rowsFrom(0, 3)
	write(t, ws[1], mem, rows)
	p := preCommit(t, 1, ws...)
	if p[0] != nil || p[1] == nil {
		t.Fatalf("payloads %x: want nil for the idle subtask only", p)
	}
	if err := s.Commit(ctx, 1, [][]byte{nil, p[1], nil}); err != nil {
		t.Fatal(err)
	}
	// An epoch in which no subtask wrote anything still commits.
	if err := s.Commit(ctx, 2, preCommit(t, 2, ws...)); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 3, nil); err != nil {
		t.Fatal(err)
	}
	sameRows(t, "rows", s.Rows(), wantRows(rows))
	if got := s.Epochs(); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("epochs %v, want [1 2 3]", got)
	}
	if err := s.Abort(ctx, 4, [][]byte{nil, nil}); err != nil || s.Aborted() != 0 {
		t.Fatalf("abort of nil payloads: %v, aborted %d", err, s.Aborted())
	}
}

func TestMalformedPayloadIsAnError(t *testing.T) {
	s := collect.New()
	for _, p := range [][]byte{{}, {1, 2, 3}, make([]byte, 17)} {
		want := fmt.Sprintf("malformed payload of %d bytes", len(p))
		if err := s.Commit(ctx, 1, [][]byte{p}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("commit of %d-byte payload: %v, want an error containing %q", len(p), err, want)
		}
		if err := s.Abort(ctx, 1, [][]byte{p}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("abort of %d-byte payload: %v, want an error containing %q", len(p), err, want)
		}
	}
	if len(s.Epochs()) != 0 {
		t.Fatalf("failed commits recorded epochs %v", s.Epochs())
	}
}

func TestPayloadOfAnotherEpochIsRejected(t *testing.T) {
	mem := newMem(t)
	s := collect.New()
	ws := openWriters(t, s, 1)
	rows := rowsFrom(0, 2)
	write(t, ws[0], mem, rows)
	p := preCommit(t, 5, ws...)
	err := s.Commit(ctx, 6, p)
	if want := "payload of epoch 5 committed as epoch 6"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("commit as the wrong epoch: %v, want an error containing %q", err, want)
	}
	if len(s.Rows()) != 0 || s.Staged() != 2 || len(s.Epochs()) != 0 {
		t.Fatalf("a rejected commit changed the sink: rows %v, staged %d, epochs %v", s.Rows(), s.Staged(), s.Epochs())
	}
	if err := s.Commit(ctx, 5, p); err != nil {
		t.Fatal(err)
	}
	sameRows(t, "rows", s.Rows(), wantRows(rows))
}

func TestCommitOfUnknownOutputNamesIt(t *testing.T) {
	mem := newMem(t)
	// The payload comes from another sink (another process, say): this
	// one never staged it.
	other := collect.New()
	ws := openWriters(t, other, 3)
	write(t, ws[2], mem, rowsFrom(0, 1))
	p := preCommit(t, 9, ws...)
	s := collect.New()
	err := s.Commit(ctx, 9, p)
	if want := "no staged output for epoch 9 subtask 3"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("commit of unknown output: %v, want an error containing %q", err, want)
	}
	if len(s.Rows()) != 0 || len(s.Epochs()) != 0 {
		t.Fatalf("failed commit left rows %v, epochs %v", s.Rows(), s.Epochs())
	}
	// Aborting output the sink never staged is not an error and counts
	// nothing.
	if err := s.Abort(ctx, 9, p); err != nil || s.Aborted() != 0 {
		t.Fatalf("abort of unknown output: %v, aborted %d", err, s.Aborted())
	}
}

// Several subtasks over several epochs: rows appear in epoch order, and
// subtask order within an epoch, whatever order the writes came in.
func TestEpochsAndRowsInCommitOrder(t *testing.T) {
	mem := newMem(t)
	s := collect.New()
	const parallelism = 4
	ws := openWriters(t, s, parallelism)
	var want [][]any
	next := 0
	for _, epoch := range []uint64{3, 4, 8, 9} {
		per := make([][]testRow, parallelism)
		for k := parallelism - 1; k >= 0; k-- { // write in reverse subtask order
			if (int(epoch)+k)%3 == 0 {
				continue // idle subtask
			}
			per[k] = rowsFrom(next, 1+k)
			next += 1 + k
			write(t, ws[k], mem, per[k])
		}
		if err := s.Commit(ctx, epoch, preCommit(t, epoch, ws...)); err != nil {
			t.Fatal(err)
		}
		want = append(want, wantRows(per...)...)
		sameRows(t, fmt.Sprintf("after epoch %d", epoch), s.Rows(), want)
	}
	if got := s.Epochs(); !slices.Equal(got, []uint64{3, 4, 8, 9}) {
		t.Fatalf("epochs %v, want [3 4 8 9]", got)
	}
}

func TestWriterHonoursSelectionAndCloseDiscards(t *testing.T) {
	mem := newMem(t)
	s := collect.New()
	ws := openWriters(t, s, 1)
	rows := rowsFrom(0, 10)
	sel := []int32{0, 3, 4, 9}
	if err := ws[0].Write(ctx, arrowflow.Batch{Record: record(mem, rows), Sel: sel}); err != nil {
		t.Fatal(err)
	}
	if err := ws[0].Write(ctx, arrowflow.Batch{Record: record(mem, rows), Sel: []int32{}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 1, preCommit(t, 1, ws...)); err != nil {
		t.Fatal(err)
	}
	var selected []testRow
	for _, i := range sel {
		selected = append(selected, rows[i])
	}
	sameRows(t, "selected rows", s.Rows(), wantRows(selected))

	// Rows written but not pre-committed when the writer closes are lost.
	w, err := s.Open(&arrowflow.TaskInfo{Subtask: 0, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	write(t, w, mem, rowsFrom(20, 3))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if p, err := w.PreCommit(ctx, 2); err != nil || p != nil {
		t.Fatalf("pre-commit after close: payload %x, error %v; want nothing", p, err)
	}
	if s.Staged() != 0 {
		t.Fatalf("%d rows staged after close", s.Staged())
	}
}

// normalize converts a value of datagen's Row to what arrowflow.ValueAt
// returns for the same column, computed independently of ValueAt.
func normalize(t *testing.T, v any, dt arrow.DataType) any {
	switch x := v.(type) {
	case nil:
		return nil
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case uint8:
		return uint64(x)
	case uint16:
		return uint64(x)
	case uint32:
		return uint64(x)
	case uint64:
		return x
	case float32:
		return float64(x)
	case float64, bool, string:
		return x
	case arrow.Timestamp:
		switch dt.(*arrow.TimestampType).Unit {
		case arrow.Second:
			return time.Unix(int64(x), 0).UTC()
		case arrow.Millisecond:
			return time.UnixMilli(int64(x)).UTC()
		case arrow.Microsecond:
			return time.UnixMicro(int64(x)).UTC()
		case arrow.Nanosecond:
			return time.Unix(0, int64(x)).UTC()
		}
	case arrow.Date32:
		return time.Unix(int64(x)*86400, 0).UTC()
	}
	t.Fatalf("datagen value %v (%T) of type %s has no normal form", v, v, dt)
	return nil
}

func sameValue(a, b any) bool {
	switch x := a.(type) {
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y) && x.Location() == time.UTC && y.Location() == time.UTC
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	}
	return a == b
}

// A real job: two datagen subtasks, a filter (so the sink sees selection
// vectors), a rebalance into three collect subtasks, periodic checkpoints.
// Every committed row must be exactly datagen's row; and when an epoch's
// checkpoint is recorded (just before its commit) the visible rows must be
// exactly those the sources had emitted by the end of the previous epoch.
func TestJobOutputMatchesDatagenOracle(t *testing.T) {
	mem := newMem(t)
	const rows = 12000
	src, err := datagen.New(datagen.Config{
		Seed: 42, Rows: rows, BatchSize: 97, Splits: 5, RowsPerSecond: 200000,
		Fields: []datagen.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64, Kind: datagen.Sequence},
			{Name: "i8", Type: arrow.PrimitiveTypes.Int8, NullRate: 0.1},
			{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Min: -1000, Max: 1000},
			{Name: "u16", Type: arrow.PrimitiveTypes.Uint16},
			{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, NullRate: 0.05},
			{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Min: -1, Max: 1},
			{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Min: 0, Max: 100, Decimals: 2, NullRate: 0.2},
			{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, NullRate: 0.1},
			{Name: "word", Type: arrow.BinaryTypes.String, Length: 6, NullRate: 0.1},
			{Name: "ts_s", Type: &arrow.TimestampType{Unit: arrow.Second}},
			{Name: "ts_us", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, NullRate: 0.1},
			{Name: "ts_ns", Type: arrow.FixedWidthTypes.Timestamp_ns},
			{Name: "day", Type: arrow.FixedWidthTypes.Date32},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	keep := func(id int64) bool { return id%3 != 1 }
	splits := src.Config().Splits

	// kept[s][j] is the number of kept rows among split s's first j rows.
	kept := make([][]int, splits)
	for s := range kept {
		kept[s] = []int{0}
		for r := int64(s); r < rows; r += int64(splits) {
			n := kept[s][len(kept[s])-1]
			if keep(r) {
				n++
			}
			kept[s] = append(kept[s], n)
		}
	}
	keptAt := func(pos []arrowflow.SplitState) (int, error) {
		n := 0
		for _, p := range pos {
			s, err := strconv.Atoi(strings.TrimPrefix(p.Split, datagen.SplitPrefix))
			if err != nil {
				return 0, err
			}
			var next int64
			if p.Position != nil {
				next = int64(binary.BigEndian.Uint64(p.Position))
			}
			j := int((next - int64(s) + int64(splits) - 1) / int64(splits)) // rows of split s below next
			n += kept[s][min(j, len(kept[s])-1)]
		}
		return n, nil
	}

	sink := collect.New()
	visibleBefore := 0 // rows the previous checkpoint's positions imply
	recorder := arrowflow.EpochRecorderFunc(func(_ context.Context, cp *arrowflow.Checkpoint) error {
		if got := len(sink.Rows()); got != visibleBefore {
			return fmt.Errorf("recording epoch %d: %d rows visible, the previous epoch's positions imply %d", cp.Epoch, got, visibleBefore)
		}
		n, err := keptAt(cp.Sources["gen"])
		if err != nil {
			return err
		}
		visibleBefore = n
		return nil
	})
	g := arrowflow.NewGraph("collect-oracle")
	gen := g.Source("gen", src, 2)
	f := g.Operator("keep", ops.Filter(func(rec arrow.RecordBatch, i int) bool {
		return keep(rec.Column(0).(*array.Int64).Value(i))
	}), 2, arrowflow.Forward(gen))
	g.Sink("out", sink, 3, arrowflow.Rebalance(f))
	job, err := g.Plan(arrowflow.Options{Allocator: mem, CheckpointInterval: 5 * time.Millisecond, Recorder: recorder})
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}

	epochs := sink.Epochs()
	if len(epochs) < 3 {
		t.Fatalf("only %d epochs committed (%v); the test needs several", len(epochs), epochs)
	}
	for i := 1; i < len(epochs); i++ {
		if epochs[i] <= epochs[i-1] {
			t.Fatalf("epochs not increasing: %v", epochs)
		}
	}
	if cp := job.LatestCheckpoint(); cp == nil || !cp.Final || cp.Epoch != epochs[len(epochs)-1] {
		t.Fatalf("latest checkpoint %+v, last committed epoch %d", cp, epochs[len(epochs)-1])
	}
	if sink.Staged() != 0 || sink.Aborted() != 0 {
		t.Fatalf("after a successful job: %d rows staged, %d aborted", sink.Staged(), sink.Aborted())
	}

	got := sink.Rows()
	if len(got) != visibleBefore {
		t.Fatalf("%d rows committed, the final positions imply %d", len(got), visibleBefore)
	}
	fields := src.Schema().Fields()
	seen := make(map[int64]bool, len(got))
	for _, row := range got {
		id, ok := row[0].(int64)
		if !ok || id < 0 || id >= rows || !keep(id) || seen[id] {
			t.Fatalf("unexpected row %v (duplicate: %v)", row, seen[id])
		}
		seen[id] = true
		want := src.Row(id)
		if len(row) != len(want) {
			t.Fatalf("row %d has %d values, want %d", id, len(row), len(want))
		}
		for c, v := range want {
			if w := normalize(t, v, fields[c].Type); !sameValue(row[c], w) {
				t.Fatalf("row %d column %s: got %v (%T), want %v (%T)", id, fields[c].Name, row[c], row[c], w, w)
			}
		}
	}
	for id := int64(0); id < rows; id++ {
		if keep(id) && !seen[id] {
			t.Fatalf("row %d missing", id)
		}
	}
}

// change is one row of a test changelog; an empty name stands for null.
type change struct {
	kind arrowflow.RowKind
	row  testRow
}

// changeBatch builds a changelog batch of the given changes (their kinds
// in Batch.Kinds).
func changeBatch(mem memory.Allocator, changes []change) arrowflow.Batch {
	rows := make([]testRow, len(changes))
	kinds := make([]arrowflow.RowKind, len(changes))
	for i, c := range changes {
		rows[i], kinds[i] = c.row, c.kind
	}
	return arrowflow.NewChangeBatch(record(mem, rows), kinds)
}

func sameChanges(t *testing.T, what string, got []collect.Change, want []change) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d changes, want %d\ngot  %v\nwant %v", what, len(got), len(want), got, want)
	}
	for i, w := range want {
		if got[i].Kind != w.kind || !slices.Equal(got[i].Values, w.row.want()) {
			t.Fatalf("%s: change %d is %s%v, want %s%v", what, i, got[i].Kind, got[i].Values, w.kind, w.row.want())
		}
	}
}

// materialize is the reference for Table: a plain list, removing the
// first equal row.
func materialize(t *testing.T, changes []change) [][]any {
	t.Helper()
	var out [][]any
	for _, c := range changes {
		if !c.kind.IsRetraction() {
			out = append(out, c.row.want())
			continue
		}
		i := slices.IndexFunc(out, func(r []any) bool { return slices.Equal(r, c.row.want()) })
		if i < 0 {
			t.Fatalf("reference: %s%v retracts a missing row", c.kind, c.row.want())
		}
		out = slices.Delete(out, i, i+1)
	}
	return out
}

// Row kinds travel with the staged rows through PreCommit and Commit, in
// commit order, with selections honoured; Rows still lists every row;
// Table materializes the changelog.
func TestChangesSurviveCommit(t *testing.T) {
	mem := newMem(t)
	s := collect.New()
	ws := openWriters(t, s, 2)
	a, b, c := testRow{1, "a"}, testRow{2, ""}, testRow{3, "c"}
	ins, ub, ua, del := arrowflow.Insert, arrowflow.UpdateBefore, arrowflow.UpdateAfter, arrowflow.Delete
	epoch1 := [][]change{
		{{ins, a}, {ins, b}, {ins, a}},
		{{ins, c}},
	}
	// Epoch 2: subtask 1 writes a batch with a selection that skips a
	// retraction; subtask 0 updates b (a null name) and deletes one a.
	epoch2 := [][]change{
		{{ub, b}, {ua, testRow{2, "b2"}}, {del, a}},
		{{ub, c}, {ua, testRow{3, "c2"}}},
	}
	for sub, chs := range epoch1 {
		if err := ws[sub].Write(ctx, changeBatch(mem, chs)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Commit(ctx, 1, preCommit(t, 1, ws...)); err != nil {
		t.Fatal(err)
	}
	if err := ws[0].Write(ctx, changeBatch(mem, epoch2[0])); err != nil {
		t.Fatal(err)
	}
	withSkipped := append([]change{{del, testRow{9, "never"}}}, epoch2[1]...)
	sel := changeBatch(mem, withSkipped)
	sel.Sel = []int32{1, 2}
	if err := ws[1].Write(ctx, sel); err != nil {
		t.Fatal(err)
	}
	if len(s.Changes()) != 4 {
		t.Fatalf("uncommitted changes are visible: %v", s.Changes())
	}
	if err := s.Commit(ctx, 2, preCommit(t, 2, ws...)); err != nil {
		t.Fatal(err)
	}
	var all []change
	for _, chs := range slices.Concat(epoch1, epoch2) {
		all = append(all, chs...)
	}
	sameChanges(t, "changes", s.Changes(), all)
	var rows []testRow
	for _, c := range all {
		rows = append(rows, c.row)
	}
	sameRows(t, "rows (kinds ignored)", s.Rows(), wantRows(rows))
	table, err := s.Table()
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "table", table, materialize(t, all))
	sameRows(t, "table", table, [][]any{{int64(1), "a"}, {int64(2), "b2"}, {int64(3), "c2"}})
}

// Aborted epochs drop their changes, kinds included; the next epoch's
// changes commit normally.
func TestAbortDropsChanges(t *testing.T) {
	mem := newMem(t)
	s := collect.New()
	ws := openWriters(t, s, 1)
	a := testRow{1, "a"}
	if err := ws[0].Write(ctx, changeBatch(mem, []change{{arrowflow.Insert, a}})); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 1, preCommit(t, 1, ws...)); err != nil {
		t.Fatal(err)
	}
	if err := ws[0].Write(ctx, changeBatch(mem, []change{{arrowflow.Delete, a}})); err != nil {
		t.Fatal(err)
	}
	if err := s.Abort(ctx, 2, preCommit(t, 2, ws...)); err != nil {
		t.Fatal(err)
	}
	sameChanges(t, "after abort", s.Changes(), []change{{arrowflow.Insert, a}})
	if table, err := s.Table(); err != nil || len(table) != 1 {
		t.Fatalf("after abort: table %v, error %v; want the row a", table, err)
	}
	next := []change{{arrowflow.UpdateBefore, a}, {arrowflow.UpdateAfter, testRow{1, "z"}}}
	if err := ws[0].Write(ctx, changeBatch(mem, next)); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 3, preCommit(t, 3, ws...)); err != nil {
		t.Fatal(err)
	}
	sameChanges(t, "after the next epoch", s.Changes(), append([]change{{arrowflow.Insert, a}}, next...))
	table, err := s.Table()
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "table", table, [][]any{{int64(1), "z"}})
}

// A retraction of a row that is not in the table (another name, or a null
// where a value was) is an error naming the row; the table is returned
// without it.
func TestTableNamesMissingRetraction(t *testing.T) {
	mem := newMem(t)
	s := collect.New()
	ws := openWriters(t, s, 1)
	chs := []change{
		{arrowflow.Insert, testRow{1, "a"}},
		{arrowflow.Delete, testRow{1, ""}}, // NULL name: not the row inserted
		{arrowflow.UpdateBefore, testRow{2, "b"}},
	}
	if err := ws[0].Write(ctx, changeBatch(mem, chs)); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 1, preCommit(t, 1, ws...)); err != nil {
		t.Fatal(err)
	}
	table, err := s.Table()
	if err == nil {
		t.Fatal("Table accepted retractions of rows not in the table")
	}
	for _, want := range []string{"change 1 -D[1 <nil>]", "and 1 more"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	sameRows(t, "table", table, [][]any{{int64(1), "a"}})
}

// Append-only batches commit as inserts.
func TestAppendOnlyRowsAreInserts(t *testing.T) {
	mem := newMem(t)
	s := collect.New()
	ws := openWriters(t, s, 1)
	rows := rowsFrom(0, 5)
	write(t, ws[0], mem, rows)
	if err := s.Commit(ctx, 1, preCommit(t, 1, ws...)); err != nil {
		t.Fatal(err)
	}
	var want []change
	for _, r := range rows {
		want = append(want, change{arrowflow.Insert, r})
	}
	sameChanges(t, "changes", s.Changes(), want)
	table, err := s.Table()
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "table", table, wantRows(rows))
}
