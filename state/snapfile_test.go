package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weirflow/weir/internal/testutil"
)

// Test data: tables of several schemas, written as a sequence of batches
// that interleave tables. The oracle is the input rows themselves.

var (
	// groupsSchema is typical aggregate state: primitive columns only
	// (kernels.Take sorts it), with nulls.
	groupsSchema = arrow.NewSchema([]arrow.Field{
		{Name: "key", Type: arrow.PrimitiveTypes.Int64},
		{Name: KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16},
		{Name: "count", Type: arrow.PrimitiveTypes.Int64},
		{Name: "sum", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	// listsSchema is keyed state with a nested and a dictionary column,
	// which kernels.Take does not handle.
	listsSchema = arrow.NewSchema([]arrow.Field{
		{Name: KeyGroupColumn, Type: arrow.PrimitiveTypes.Uint16},
		{Name: "items", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "tag", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}, Nullable: true},
	}, nil)
	// metaSchema is unkeyed state.
	metaSchema = arrow.NewSchema([]arrow.Field{
		{Name: "split", Type: arrow.PrimitiveTypes.Int32},
		{Name: "done", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "names", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, nil)
)

// kgMode says how a generated batch's key groups are drawn.
type kgMode int

const (
	kgUniform kgMode = iota // uniform over the range
	kgSorted                // uniform, then sorted (the writer keeps the batch)
	kgSkewed                // mostly one key group
)

// genBatch returns a batch of n rows of schema whose key groups lie in r.
func genBatch(mem memory.Allocator, rng *rand.Rand, schema *arrow.Schema, n int, r KeyGroupRange, mode kgMode) arrow.RecordBatch {
	kgs := make([]uint16, n)
	hot := r.Start + rng.IntN(r.Len())
	for i := range kgs {
		kgs[i] = uint16(r.Start + rng.IntN(r.Len()))
		if mode == kgSkewed && rng.IntN(5) > 0 {
			kgs[i] = uint16(hot)
		}
	}
	if mode == kgSorted {
		slices.Sort(kgs)
	}
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := 0; i < n; i++ {
		for c, f := range schema.Fields() {
			null := f.Nullable && rng.IntN(8) == 0
			switch fb := b.Field(c).(type) {
			case *array.Uint16Builder:
				fb.Append(kgs[i])
			case *array.Int64Builder:
				fb.Append(rng.Int64N(1 << 40))
			case *array.Int32Builder:
				fb.Append(rng.Int32N(1000))
			case *array.Float64Builder:
				if null {
					fb.AppendNull()
				} else {
					fb.Append(float64(rng.IntN(1e6)) / 100)
				}
			case *array.StringBuilder:
				if null {
					fb.AppendNull()
				} else {
					fb.Append(fmt.Sprintf("user%06d", rng.IntN(1e6)))
				}
			case *array.BooleanBuilder:
				if null {
					fb.AppendNull()
				} else {
					fb.Append(rng.IntN(2) == 0)
				}
			case *array.ListBuilder:
				if null {
					fb.AppendNull()
					continue
				}
				fb.Append(true)
				for k := rng.IntN(4); k > 0; k-- {
					switch vb := fb.ValueBuilder().(type) {
					case *array.Int32Builder:
						if rng.IntN(6) == 0 {
							vb.AppendNull()
						} else {
							vb.Append(rng.Int32N(100))
						}
					case *array.StringBuilder:
						vb.Append(fmt.Sprintf("s%d", rng.IntN(50)))
					}
				}
			case *array.BinaryDictionaryBuilder:
				if null {
					fb.AppendNull()
				} else if err := fb.AppendString(fmt.Sprintf("tag%d", rng.IntN(20))); err != nil {
					panic(err)
				}
			default:
				panic(fmt.Sprintf("genBatch: no generator for %T", fb))
			}
		}
	}
	return b.NewRecordBatch()
}

// write is one SnapshotWriter.Write call of test data.
type write struct {
	table string
	rec   arrow.RecordBatch
}

// genWrites returns batches of three tables (keyed "groups" and "lists",
// unkeyed "meta"), interleaved, with key groups in r: batches of 0 to 300
// rows, uniform, sorted and skewed. It releases them when t ends.
func genWrites(t testing.TB, mem memory.Allocator, rng *rand.Rand, r KeyGroupRange, batches int) []write {
	var ws []write
	t.Cleanup(func() {
		for _, w := range ws {
			w.rec.Release()
		}
	})
	tables := []struct {
		name   string
		schema *arrow.Schema
	}{{"groups", groupsSchema}, {"lists", listsSchema}, {"meta", metaSchema}}
	for i := 0; i < batches; i++ {
		tb := tables[rng.IntN(len(tables))]
		if i < len(tables) {
			tb = tables[i]
		}
		n := rng.IntN(301)
		if rng.IntN(10) == 0 {
			n = rng.IntN(2)
		}
		ws = append(ws, write{tb.name, genBatch(mem, rng, tb.schema, n, r, kgMode(rng.IntN(3)))})
	}
	return ws
}

// testRow is one input or output row: its table, key group (-1 when the
// table has no KeyGroupColumn) and values as text.
type testRow struct {
	table string
	kg    int
	text  string
}

// rowsOf renders the rows of rec.
func rowsOf(table string, rec arrow.RecordBatch) []testRow {
	kgCol := -1
	if idx := rec.Schema().FieldIndices(KeyGroupColumn); len(idx) > 0 {
		kgCol = idx[0]
	}
	out := make([]testRow, rec.NumRows())
	var sb strings.Builder
	for i := range out {
		sb.Reset()
		for c, col := range rec.Columns() {
			if c > 0 {
				sb.WriteByte('|')
			}
			writeValue(&sb, col, i)
		}
		kg := -1
		if kgCol >= 0 {
			kg = int(rec.Column(kgCol).(*array.Uint16).Value(i))
		}
		out[i] = testRow{table, kg, sb.String()}
	}
	return out
}

// writeValue renders row i of arr: ValueStr, except for lists, which
// ValueStr renders through JSON, slowly.
func writeValue(sb *strings.Builder, arr arrow.Array, i int) {
	l, ok := arr.(*array.List)
	if !ok || l.IsNull(i) {
		sb.WriteString(arr.ValueStr(i))
		return
	}
	start, end := l.ValueOffsets(i)
	sb.WriteByte('[')
	for j := start; j < end; j++ {
		if j > start {
			sb.WriteByte(',')
		}
		writeValue(sb, l.ListValues(), int(j))
	}
	sb.WriteByte(']')
}

// expectRows is the oracle: the rows of table in ws whose key group is in
// r (all rows of an unkeyed table), in the order a snapshot file yields
// them: keyed tables stably sorted by key group, others in write order.
func expectRows(ws []write, table string, r KeyGroupRange) []testRow {
	var out []testRow
	for _, w := range ws {
		if w.table != table {
			continue
		}
		for _, row := range rowsOf(table, w.rec) {
			if row.kg < 0 || r.Contains(row.kg) {
				out = append(out, row)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b testRow) int { return a.kg - b.kg })
	return out
}

// filterRows returns the rows whose key group is in r, and those of
// unkeyed tables.
func filterRows(rows []testRow, r KeyGroupRange) []testRow {
	var out []testRow
	for _, row := range rows {
		if row.kg < 0 || r.Contains(row.kg) {
			out = append(out, row)
		}
	}
	return out
}

// readRows reads every row of table.
func readRows(t testing.TB, rd SnapshotReader, table string) []testRow {
	t.Helper()
	var out []testRow
	if err := rd.Read(table, func(rec arrow.RecordBatch) error {
		out = append(out, rowsOf(table, rec)...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func sortedRows(rows []testRow) []testRow {
	rows = slices.Clone(rows)
	slices.SortFunc(rows, func(a, b testRow) int {
		if c := strings.Compare(a.table, b.table); c != 0 {
			return c
		}
		if a.kg != b.kg {
			return a.kg - b.kg
		}
		return strings.Compare(a.text, b.text)
	})
	return rows
}

// sameRows fails t unless got and want hold the same rows in the same
// order.
func sameRows(t testing.TB, what string, got, want []testRow) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	t.Errorf("%s: got %d rows, want %d", what, len(got), len(want))
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w testRow
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Fatalf("%s: first difference at row %d:\n got %+v\nwant %+v", what, i, g, w)
		}
	}
}

// writeSnapBytes writes ws as a snapshot file into memory.
func writeSnapBytes(t testing.TB, mem memory.Allocator, id SnapshotID, r KeyGroupRange, ws []write, minRows, maxRows int) []byte {
	t.Helper()
	var buf bytes.Buffer
	sw := newSnapWriter(&buf, id, r, mem, minRows, maxRows)
	for _, w := range ws {
		if err := sw.write(w.table, w.rec); err != nil {
			sw.release()
			t.Fatal(err)
		}
	}
	size, err := sw.finish()
	if err != nil {
		t.Fatal(err)
	}
	if size != int64(buf.Len()) {
		t.Fatalf("finish returned size %d, wrote %d bytes", size, buf.Len())
	}
	return buf.Bytes()
}

var testID = SnapshotID{Job: "job", Epoch: 7, Operator: "count", Subtask: 2}

func TestSnapFileRoundTripAndBlockLayout(t *testing.T) {
	t.Parallel()
	mem := testutil.CheckedAllocator(t)
	r := KeyGroupRange{Start: 32, End: 96}
	ws := genWrites(t, mem, rand.New(rand.NewPCG(1, 1)), r, 40)
	for _, sizes := range [][2]int{{1, 1}, {50, 200}, {defaultMinBlockRows, defaultMaxBlockRows}} {
		t.Run(fmt.Sprintf("blocks=%d-%d", sizes[0], sizes[1]), func(t *testing.T) {
			ws := ws
			if sizes[1] == 1 {
				ws = ws[:4] // a block per row: keep it small
			}
			data := writeSnapBytes(t, mem, testID, r, ws, sizes[0], sizes[1])
			rd, err := openSnapFile(bytes.NewReader(data), int64(len(data)), "mem", mem)
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			if got := rd.Tables(); !slices.Equal(got, []string{"groups", "lists", "meta"}) {
				t.Fatalf("tables %v", got)
			}
			if rd.footer.id != testID || rd.footer.keyGroups != r {
				t.Fatalf("footer id %v key groups %s", rd.footer.id, rd.footer.keyGroups)
			}
			for _, tb := range rd.footer.tables {
				want := expectRows(ws, tb.name, KeyGroupRange{0, maxKeyGroups})
				sameRows(t, tb.name, readRows(t, rd, tb.name), want)
				perKeyGroup := map[int]int64{}
				for _, row := range want {
					perKeyGroup[row.kg]++
				}
				checkBlockLayout(t, tb, r, perKeyGroup, sizes[0], sizes[1])
			}
		})
	}
}

// checkBlockLayout checks the invariants of a table's blocks: at most
// maxRows rows; for keyed tables, key-group ranges within r and in order,
// shared by neighbours only where a key group was split at maxRows, and a
// block of fewer than minRows rows ended only because the next key group
// did not fit, and a block went on past minRows rows only within a key
// group. perKeyGroup is the table's rows per key group.
func checkBlockLayout(t *testing.T, tb *snapTable, r KeyGroupRange, perKeyGroup map[int]int64, minRows, maxRows int) {
	t.Helper()
	for i, b := range tb.blocks {
		if b.rows > int64(maxRows) {
			t.Errorf("table %q block %d: %d rows, more than %d", tb.name, i, b.rows, maxRows)
		}
		if !tb.keyed {
			continue
		}
		if b.keyGroups.Start < r.Start || b.keyGroups.End > r.End || b.keyGroups.Len() < 1 {
			t.Errorf("table %q block %d: key groups %s", tb.name, i, b.keyGroups)
		}
		if last := perKeyGroup[b.keyGroups.End-1]; b.keyGroups.Len() > 1 && b.rows < int64(maxRows) && b.rows-last >= int64(minRows) {
			t.Errorf("table %q block %d %s: %d rows, of which %d before its last key group: it should have ended there", tb.name, i, b.keyGroups, b.rows, b.rows-last)
		}
		if i == 0 {
			continue
		}
		prev := tb.blocks[i-1]
		// A key group too large for a block starts one and fills it.
		split := prev.keyGroups.End == b.keyGroups.Start+1 && prev.rows == int64(maxRows) && prev.keyGroups.Len() == 1
		if prev.keyGroups.End > b.keyGroups.Start && !split {
			t.Errorf("table %q: block %d %s overlaps block %d %s", tb.name, i, b.keyGroups, i-1, prev.keyGroups)
		}
		// Block b, of one unsplit key group, would have fit after prev.
		if !split && prev.rows < int64(minRows) && b.keyGroups.Len() == 1 && b.rows < int64(maxRows) && prev.rows+b.rows <= int64(maxRows) {
			t.Errorf("table %q: block %d (%d rows) was not merged with block %d (%d rows)", tb.name, i-1, prev.rows, i, b.rows)
		}
	}
}

// countingReaderAt records the byte ranges read.
type countingReaderAt struct {
	r     *bytes.Reader
	mu    sync.Mutex
	reads [][2]int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.mu.Lock()
	c.reads = append(c.reads, [2]int64{off, off + int64(len(p))})
	c.mu.Unlock()
	return c.r.ReadAt(p, off)
}

func TestSnapFileKeyGroupReadsOnlyTheirBlocks(t *testing.T) {
	t.Parallel()
	mem := testutil.CheckedAllocator(t)
	all := KeyGroupRange{0, 128}
	ws := genWrites(t, mem, rand.New(rand.NewPCG(2, 2)), all, 40)
	data := writeSnapBytes(t, mem, testID, all, ws, 40, 150)
	for _, r := range []KeyGroupRange{{0, 1}, {5, 9}, {32, 64}, {100, 128}, {127, 128}, {0, 128}, {50, 50}, {200, 300}} {
		cr := &countingReaderAt{r: bytes.NewReader(data)}
		rd, err := openSnapFile(cr, int64(len(data)), "mem", mem)
		if err != nil {
			t.Fatal(err)
		}
		rd.withKeyGroups(r)
		cr.reads = nil
		for _, tb := range rd.footer.tables {
			sameRows(t, fmt.Sprintf("table %q key groups %s", tb.name, r), readRows(t, rd, tb.name), expectRows(ws, tb.name, r))
		}
		// Every read is one whole block that the range needs.
		for _, rg := range cr.reads {
			needed := false
			for _, tb := range rd.footer.tables {
				for _, b := range tb.blocks {
					if b.offset == rg[0] && b.offset+b.length == rg[1] {
						needed = !tb.keyed || b.keyGroups.Overlaps(r)
					}
				}
			}
			if !needed {
				t.Errorf("key groups %s: read bytes [%d, %d), which is not a block they need", r, rg[0], rg[1])
			}
		}
		rd.Close()
	}
}

// flip returns a copy of data with byte i inverted.
func flip(data []byte, i int64) []byte {
	c := bytes.Clone(data)
	c[i] ^= 0xff
	return c
}

// readEverything opens data and reads all its tables; it returns the first
// error.
func readEverything(data []byte, mem memory.Allocator, r *KeyGroupRange) error {
	rd, err := openSnapFile(bytes.NewReader(data), int64(len(data)), "job/7/count-2.snap", mem)
	if err != nil {
		return err
	}
	defer rd.Close()
	if r != nil {
		rd.withKeyGroups(*r)
	}
	for _, name := range rd.Tables() {
		if err := rd.Read(name, func(arrow.RecordBatch) error { return nil }); err != nil {
			return err
		}
	}
	return nil
}

func TestSnapFileDetectsCorruption(t *testing.T) {
	t.Parallel()
	mem := testutil.CheckedAllocator(t)
	all := KeyGroupRange{0, 128}
	ws := genWrites(t, mem, rand.New(rand.NewPCG(3, 3)), all, 30)
	data := writeSnapBytes(t, mem, testID, all, ws, 100, 400)
	rd, err := openSnapFile(bytes.NewReader(data), int64(len(data)), "x", mem)
	if err != nil {
		t.Fatal(err)
	}
	footer := rd.footer
	size := int64(len(data))
	footerOff := int64(binary.LittleEndian.Uint64(data[size-snapTrailerSize:]))

	wantCorrupt := func(what string, err error, contains ...string) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		if !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("%s: error does not wrap ErrCorruptSnapshot: %v", what, err)
		}
		for _, c := range append(contains, "snapshot job/7/count-2.snap: ", "the file is corrupt") {
			if !strings.Contains(err.Error(), c) {
				t.Fatalf("%s: error %q does not say %q", what, err, c)
			}
		}
	}

	blocks := 0
	for _, tb := range footer.tables {
		for bi, b := range tb.blocks {
			blocks++
			for _, at := range []int64{b.offset, b.offset + b.length/2, b.offset + b.length - 1} {
				err := readEverything(flip(data, at), mem, nil)
				wantCorrupt(fmt.Sprintf("byte %d in block %d of table %q", at, bi, tb.name), err,
					fmt.Sprintf("block %d of table %q: checksum mismatch (stored %08x, computed ", bi, tb.name, b.crc))
			}
			// A reader of other key groups does not read the block, and
			// does not notice.
			if tb.keyed {
				other := KeyGroupRange{b.keyGroups.End, all.End}
				if other.Len() == 0 {
					other = KeyGroupRange{all.Start, b.keyGroups.Start}
				}
				if err := readEverything(flip(data, b.offset), mem, &other); err != nil {
					t.Fatalf("reading key groups %s, away from damaged block %s: %v", other, b.keyGroups, err)
				}
			}
		}
	}
	if blocks < 6 {
		t.Fatalf("only %d blocks: the test needs more", blocks)
	}
	for at := footerOff; at < size-snapTrailerSize; at += max(1, (size-snapTrailerSize-footerOff)/50) {
		wantCorrupt(fmt.Sprintf("byte %d in the footer", at), readEverything(flip(data, at), mem, nil), "footer: checksum mismatch")
	}
	for at := size - snapTrailerSize; at < size; at++ {
		want := "trailer"
		if i := at - (size - snapTrailerSize); i >= 16 && i < 20 {
			want = "footer: checksum mismatch" // the footer's checksum is in the trailer
		}
		wantCorrupt(fmt.Sprintf("byte %d in the trailer", at), readEverything(flip(data, at), mem, nil), want)
	}
	for at := int64(0); at < snapHeaderSize; at++ {
		wantCorrupt(fmt.Sprintf("byte %d in the header", at), readEverything(flip(data, at), mem, nil), "header")
	}
	truncations := []int64{0, 1, 8, snapHeaderSize - 1, snapHeaderSize, snapHeaderSize + snapTrailerSize - 1, snapHeaderSize + snapTrailerSize,
		footerOff, footerOff + 1, size - snapTrailerSize, size - 8, size - 1}
	for _, tb := range footer.tables {
		for _, b := range tb.blocks {
			truncations = append(truncations, b.offset+b.length/2)
		}
	}
	for _, n := range truncations {
		wantCorrupt(fmt.Sprintf("truncated to %d bytes", n), readEverything(data[:n], mem, nil))
	}
	// Appended bytes move the trailer.
	wantCorrupt("appended byte", readEverything(append(bytes.Clone(data), 0), mem, nil), "trailer")
}

func TestSnapFileRefusesUnknownVersion(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	ws := genWrites(t, mem, rand.New(rand.NewPCG(4, 4)), KeyGroupRange{0, 4}, 3)
	data := writeSnapBytes(t, mem, testID, KeyGroupRange{0, 4}, ws, 10, 100)
	binary.LittleEndian.PutUint32(data[8:], 2)
	binary.LittleEndian.PutUint32(data[12:], crc32.Checksum(data[:12], castagnoli))
	err := readEverything(data, mem, nil)
	if err == nil || !strings.Contains(err.Error(), "format version 2 is unknown") || errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("got %v, want an unknown-version error that does not call the file corrupt", err)
	}
}

func TestSnapFileFooterRoundTrip(t *testing.T) {
	f := &snapFooter{id: SnapshotID{Job: "j", Epoch: 1 << 40, Operator: "op", Subtask: 3}, keyGroups: KeyGroupRange{10, 20}}
	f.tables = []*snapTable{
		{name: "a", schemaMsg: []byte("schema"), keyed: true, rows: 5, blocks: []snapBlock{{16, 100, 2, KeyGroupRange{10, 12}, 0xdeadbeef}, {116, 50, 3, KeyGroupRange{12, 20}, 1}}},
		{name: "", schemaMsg: nil, rows: 0},
	}
	enc := appendFooter(nil, f)
	got, err := parseFooter(enc)
	if err != nil {
		t.Fatal(err)
	}
	if got.id != f.id || got.keyGroups != f.keyGroups || len(got.tables) != 2 ||
		got.tables[0].name != "a" || string(got.tables[0].schemaMsg) != "schema" || !got.tables[0].keyed ||
		got.tables[0].rows != 5 || !slices.Equal(got.tables[0].blocks, f.tables[0].blocks) ||
		got.tables[1].name != "" || got.tables[1].keyed || len(got.tables[1].blocks) != 0 {
		t.Fatalf("round trip: got %+v", got)
	}
	for n := 0; n < len(enc); n++ {
		if _, err := parseFooter(enc[:n]); err == nil {
			t.Fatalf("a footer cut to %d of %d bytes parsed", n, len(enc))
		}
	}
	if _, err := parseFooter(append(enc, 0)); err == nil {
		t.Fatal("a footer with a trailing byte parsed")
	}
}

// randomJSON returns a random JSON value of type dt (null one time in six
// where nullable).
func randomJSON(rng *rand.Rand, dt arrow.DataType, nullable bool) string {
	if nullable && rng.IntN(6) == 0 {
		return "null"
	}
	switch t := dt.(type) {
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type:
		return fmt.Sprint(rng.IntN(100))
	case *arrow.StringType:
		return fmt.Sprintf("%q", fmt.Sprintf("s%d", rng.IntN(30)))
	case *arrow.ListType:
		return randomJSONList(rng, t.Elem(), rng.IntN(4))
	case *arrow.LargeListType:
		return randomJSONList(rng, t.Elem(), rng.IntN(4))
	case *arrow.FixedSizeListType:
		return randomJSONList(rng, t.Elem(), int(t.Len()))
	case *arrow.MapType:
		var kv []string
		for k := range rng.IntN(3) {
			kv = append(kv, fmt.Sprintf(`{"key": "k%d", "value": %s}`, k, randomJSON(rng, t.ItemType(), true)))
		}
		return "[" + strings.Join(kv, ", ") + "]"
	case *arrow.StructType:
		var fs []string
		for _, f := range t.Fields() {
			fs = append(fs, fmt.Sprintf("%q: %s", f.Name, randomJSON(rng, f.Type, f.Nullable)))
		}
		return "{" + strings.Join(fs, ", ") + "}"
	case *arrow.DictionaryType:
		return randomJSON(rng, t.ValueType, false)
	}
	panic(fmt.Sprintf("randomJSON: %s", dt))
}

func randomJSONList(rng *rand.Rand, elem arrow.DataType, n int) string {
	var vs []string
	for range n {
		vs = append(vs, randomJSON(rng, elem, true))
	}
	return "[" + strings.Join(vs, ", ") + "]"
}

func TestGatherRowsMatchesTheRowsTaken(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(6, 6))
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.StructOf(
			arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "b", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		), Nullable: true},
		{Name: "fsl", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int16), Nullable: true},
		{Name: "map", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), Nullable: true},
		{Name: "large", Type: arrow.LargeListOf(arrow.PrimitiveTypes.Int8), Nullable: true},
		{Name: "nested", Type: arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Int32)), Nullable: true},
		{Name: "dict", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}, Nullable: true},
	}, nil)
	var rows []string
	for range 300 {
		var fs []string
		for _, f := range schema.Fields() {
			fs = append(fs, fmt.Sprintf("%q: %s", f.Name, randomJSON(rng, f.Type, f.Nullable)))
		}
		rows = append(rows, "{"+strings.Join(fs, ", ")+"}")
	}
	full, _, err := array.RecordFromJSON(mem, schema, strings.NewReader("["+strings.Join(rows, ",\n")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	defer full.Release()
	rec := full.NewSlice(17, 290) // offsets into every buffer
	defer rec.Release()
	src := rowsOf("t", rec)
	for _, n := range []int{1, 2, 50, 273, 600} {
		idx := make([]int32, n)
		for k := range idx {
			idx[k] = int32(rng.IntN(int(rec.NumRows())))
		}
		if n == 50 {
			for k := range idx {
				idx[k] = int32(k + 100) // one run
			}
		}
		got, err := gatherRows(mem, rec, idx, false)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]testRow, n)
		for k, i := range idx {
			want[k] = src[i]
		}
		sameRows(t, fmt.Sprintf("%d rows", n), rowsOf("t", got), want)
		got.Release()
	}
	// Every nested column took the recursive path, the dictionary the
	// concatenating one.
	for _, f := range schema.Fields() {
		c, err := takeArray(mem, rec.Column(schema.FieldIndices(f.Name)[0]), []int32{0})
		if c != nil {
			c.Release()
		}
		if (f.Name == "dict") != errors.Is(err, errTakeUnsupported) {
			t.Errorf("column %q: takeArray: %v", f.Name, err)
		}
	}
}

// FuzzSnapshotFileReader feeds mutated snapshot files to the reader, which
// must return errors, never panic, hang or leak; filter, when not zero,
// picks a key-group range to read.
func FuzzSnapshotFileReader(f *testing.F) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	for i, data := range fuzzSeeds(f, mem) {
		f.Add(data, uint16(0))
		f.Add(data, uint16(i*8+3))
	}
	f.Add([]byte(snapMagic), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, filter uint16) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		var r *KeyGroupRange
		if filter != 0 {
			r = &KeyGroupRange{int(filter >> 8), int(filter>>8) + int(filter&0xff)}
		}
		_ = readEverything(data, mem, r)
		mem.AssertSize(t, 0)
	})
}

// FuzzSnapshotFooter feeds mutated footers to the footer parser, which must
// return an error or a footer that encodes back to the same bytes (the
// encoding is canonical).
func FuzzSnapshotFooter(f *testing.F) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	for _, data := range fuzzSeeds(f, mem) {
		off := binary.LittleEndian.Uint64(data[len(data)-snapTrailerSize:])
		f.Add(data[off : len(data)-snapTrailerSize])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		footer, err := parseFooter(data)
		if err != nil {
			return
		}
		if enc := appendFooter(nil, footer); !bytes.Equal(enc, data) {
			t.Fatalf("footer parsed, but encodes to other bytes:\n in %x\nout %x", data, enc)
		}
	})
}

// fuzzSeeds returns small snapshot files.
func fuzzSeeds(f *testing.F, mem memory.Allocator) [][]byte {
	rng := rand.New(rand.NewPCG(5, 5))
	var out [][]byte
	for _, r := range []KeyGroupRange{{0, 4}, {0, 128}} {
		var ws []write
		for i := 0; i < 4; i++ {
			tb := []struct {
				name   string
				schema *arrow.Schema
			}{{"groups", groupsSchema}, {"lists", listsSchema}, {"meta", metaSchema}}[i%3]
			ws = append(ws, write{tb.name, genBatch(mem, rng, tb.schema, 1+rng.IntN(20), r, kgUniform)})
		}
		out = append(out, writeSnapBytes(f, mem, testID, r, ws, 5, 10))
		for _, w := range ws {
			w.rec.Release()
		}
	}
	return out
}
