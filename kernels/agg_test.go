package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/internal/testutil"
)

// This file holds the reference the hash aggregation is tested against: a
// plain row-at-a-time group-by over Go maps, sharing no code with the
// kernels beyond Arrow's accessors. It also holds the data generator and
// the randomized tests of every aggregate over every value type.

// ---------------------------------------------------------------------------
// Data generation.

// gbKeyTypes are the key types the tests cover: every type HashColumns
// supports, in its common parameterisations.
var gbKeyTypes = []arrow.DataType{
	arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
	arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
	arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64, arrow.FixedWidthTypes.Boolean,
	arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeBinary,
	&arrow.FixedSizeBinaryType{ByteWidth: 5},
	&arrow.Decimal128Type{Precision: 20, Scale: 2}, &arrow.Decimal256Type{Precision: 40, Scale: 3},
	arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Date64,
	arrow.FixedWidthTypes.Time32s, arrow.FixedWidthTypes.Time64us,
	&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, arrow.FixedWidthTypes.Duration_ns,
}

// gbColumn builds n values of dt drawn from about card distinct values
// (fewer when the type has fewer), with about nullRate nulls. The array is
// a slice at a random offset, so kernels see unaligned bitmaps.
func gbColumn(t testing.TB, mem memory.Allocator, rng *rand.Rand, dt arrow.DataType, n, card int, nullRate float64) arrow.Array {
	t.Helper()
	off := []int{0, 1, 5, 8, 13}[rng.IntN(5)]
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	b.Reserve(n + off)
	for i := 0; i < n+off; i++ {
		if nullRate > 0 && rng.Float64() < nullRate {
			b.AppendNull()
			continue
		}
		gbAppend(t, b, rng.IntN(card))
	}
	full := b.NewArray()
	defer full.Release()
	return array.NewSlice(full, int64(off), int64(off+n))
}

// gbAppend appends the value number v of dt's generated domain: distinct
// v give distinct values except where the type is too small, and floats
// include -0 next to +0 and NaN.
func gbAppend(t testing.TB, b array.Builder, v int) {
	s := gbString(v)
	switch bb := b.(type) {
	case *array.Int8Builder:
		bb.Append(int8(v))
	case *array.Int16Builder:
		bb.Append(int16(v - 1000))
	case *array.Int32Builder:
		bb.Append(int32(v*7 - 5000))
	case *array.Int64Builder:
		bb.Append(int64(v)*1_000_003 - 500_000_000)
	case *array.Uint8Builder:
		bb.Append(uint8(v))
	case *array.Uint16Builder:
		bb.Append(uint16(v))
	case *array.Uint32Builder:
		bb.Append(uint32(v) * 3)
	case *array.Uint64Builder:
		bb.Append(uint64(v)<<20 | 1)
	case *array.Float32Builder:
		bb.Append(float32(gbFloat(v)))
	case *array.Float64Builder:
		bb.Append(gbFloat(v))
	case *array.BooleanBuilder:
		bb.Append(v%2 == 0)
	case *array.StringBuilder:
		bb.Append(s)
	case *array.LargeStringBuilder:
		bb.Append(s)
	case *array.BinaryBuilder: // binary and large binary
		bb.Append(append([]byte{0, byte(v)}, s...))
	case *array.FixedSizeBinaryBuilder:
		bb.Append([]byte{byte(v), byte(v >> 8), byte(v >> 16), 0, 7})
	case *array.Decimal128Builder:
		bb.Append(decimal128.FromI64(int64(v)*10 - 100))
	case *array.Decimal256Builder:
		bb.Append(decimal256.FromI64(int64(v)*3 - 7))
	case *array.Date32Builder:
		bb.Append(arrow.Date32(v))
	case *array.Date64Builder:
		bb.Append(arrow.Date64(int64(v) * 86_400_000))
	case *array.Time32Builder:
		bb.Append(arrow.Time32(v % 86400))
	case *array.Time64Builder:
		bb.Append(arrow.Time64(v))
	case *array.TimestampBuilder:
		bb.Append(arrow.Timestamp(int64(v) * 1000))
	case *array.DurationBuilder:
		bb.Append(arrow.Duration(v - 50))
	default:
		t.Fatalf("no generator for %T", b)
	}
}

// gbStrings caches the generated strings, which the large tests would
// otherwise spend much of their time formatting.
var gbStrings []string

func gbString(v int) string {
	for len(gbStrings) <= v {
		s := "k" + strconv.Itoa(len(gbStrings))
		if len(gbStrings)%5 == 0 {
			s += "-a-longer-string-value"
		}
		gbStrings = append(gbStrings, s)
	}
	return gbStrings[v]
}

func gbFloat(v int) float64 {
	switch v % 13 {
	case 5:
		return math.NaN()
	case 7:
		return math.Copysign(0, -1) // groups with the +0 of v == 12
	case 12:
		return 0
	}
	return float64(v)/4 - 3
}

// ---------------------------------------------------------------------------
// The reference.

// gbValue is one value as the reference sees it: enough to compare,
// order and print it canonically.
type gbValue struct {
	null bool
	kind byte // 'i' signed/temporal, 'u' unsigned, 'f' float, 'b' bool, 's' bytes, 'd' decimal128
	i    int64
	u    uint64
	f    float64
	s    string
	d    decimal128.Num
}

func gbValueOf(arr arrow.Array, i int) gbValue {
	if arr.IsNull(i) {
		return gbValue{null: true}
	}
	switch a := arr.(type) {
	case *array.Int8:
		return gbValue{kind: 'i', i: int64(a.Value(i))}
	case *array.Int16:
		return gbValue{kind: 'i', i: int64(a.Value(i))}
	case *array.Int32:
		return gbValue{kind: 'i', i: int64(a.Value(i))}
	case *array.Int64:
		return gbValue{kind: 'i', i: a.Value(i)}
	case *array.Date32:
		return gbValue{kind: 'i', i: int64(a.Value(i))}
	case *array.Date64:
		return gbValue{kind: 'i', i: int64(a.Value(i))}
	case *array.Time32:
		return gbValue{kind: 'i', i: int64(a.Value(i))}
	case *array.Time64:
		return gbValue{kind: 'i', i: int64(a.Value(i))}
	case *array.Timestamp:
		return gbValue{kind: 'i', i: int64(a.Value(i))}
	case *array.Duration:
		return gbValue{kind: 'i', i: int64(a.Value(i))}
	case *array.Uint8:
		return gbValue{kind: 'u', u: uint64(a.Value(i))}
	case *array.Uint16:
		return gbValue{kind: 'u', u: uint64(a.Value(i))}
	case *array.Uint32:
		return gbValue{kind: 'u', u: uint64(a.Value(i))}
	case *array.Uint64:
		return gbValue{kind: 'u', u: a.Value(i)}
	case *array.Float32:
		return gbValue{kind: 'f', f: float64(a.Value(i))}
	case *array.Float64:
		return gbValue{kind: 'f', f: a.Value(i)}
	case *array.Boolean:
		if a.Value(i) {
			return gbValue{kind: 'b', i: 1}
		}
		return gbValue{kind: 'b'}
	case *array.String:
		return gbValue{kind: 's', s: a.Value(i)}
	case *array.LargeString:
		return gbValue{kind: 's', s: a.Value(i)}
	case *array.Binary:
		return gbValue{kind: 's', s: string(a.Value(i))}
	case *array.LargeBinary:
		return gbValue{kind: 's', s: string(a.Value(i))}
	case *array.FixedSizeBinary:
		return gbValue{kind: 's', s: string(a.Value(i))}
	case *array.Decimal128:
		return gbValue{kind: 'd', d: a.Value(i)}
	case *array.Decimal256:
		return gbValue{kind: 's', s: a.ValueStr(i)}
	}
	panic("no reference value for " + arr.DataType().String())
}

// less orders values of one kind as min and max must: NaN above every
// float, strings bytewise.
func (a gbValue) less(b gbValue) bool {
	switch a.kind {
	case 'i', 'b':
		return a.i < b.i
	case 'u':
		return a.u < b.u
	case 'f':
		return a.f < b.f || (b.f != b.f && a.f == a.f)
	case 's':
		return a.s < b.s
	case 'd':
		return a.d.Less(b.d)
	}
	panic("unordered kind")
}

// String is canonical under grouping equality: -0 prints as 0, every NaN
// as NaN.
func (a gbValue) String() string {
	if a.null {
		return "∅"
	}
	switch a.kind {
	case 'i', 'b':
		return strconv.FormatInt(a.i, 10)
	case 'u':
		return strconv.FormatUint(a.u, 10)
	case 'f':
		switch {
		case a.f == 0:
			return "0"
		case a.f != a.f:
			return "NaN"
		}
		return strconv.FormatFloat(a.f, 'g', -1, 64)
	case 's':
		return strconv.Itoa(len(a.s)) + ":" + a.s
	case 'd':
		return a.d.BigInt().String()
	}
	panic("unknown kind")
}

// gbRefAcc is the reference state of one aggregate of one group.
type gbRefAcc struct {
	rows, count int64
	isum        int64
	dsum        big.Int // decimal128 sums, exact
	fsum, fabs  float64
	has         bool
	best        gbValue
	distinct    map[string]bool
	t           int64
}

// gbAppendKey appends an unambiguous binary encoding of the key tuple of
// row i of cols to buf: equal under grouping rules (null = null, -0 = +0,
// NaN = NaN) exactly when the encodings are equal.
func gbAppendKey(buf []byte, cols []arrow.Array, i int) []byte {
	for _, col := range cols {
		v := gbValueOf(col, i)
		if v.null {
			buf = append(buf, 'N')
			continue
		}
		buf = append(buf, v.kind)
		switch v.kind {
		case 'i', 'b':
			buf = binary.LittleEndian.AppendUint64(buf, uint64(v.i))
		case 'u':
			buf = binary.LittleEndian.AppendUint64(buf, v.u)
		case 'f':
			buf = binary.LittleEndian.AppendUint64(buf, floatKey(v.f))
		case 's':
			buf = binary.LittleEndian.AppendUint32(buf, uint32(len(v.s)))
			buf = append(buf, v.s...)
		case 'd':
			buf = binary.LittleEndian.AppendUint64(buf, v.d.LowBits())
			buf = binary.LittleEndian.AppendUint64(buf, uint64(v.d.HighBits()))
		}
	}
	return buf
}

// gbRef is the row-at-a-time reference group-by.
type gbRef struct {
	keys  []int
	aggs  []AggregateSpec
	index map[string]int // encoded key -> group
	order []string       // encoded key of each group, in order of first appearance
	accs  [][]gbRefAcc   // by group, then aggregate
	cols  []arrow.Array
	buf   []byte
}

func newGbRef(keys []int, aggs []AggregateSpec) *gbRef {
	return &gbRef{keys: keys, aggs: aggs, index: map[string]int{}}
}

func (r *gbRef) update(rec arrow.RecordBatch, sel []int32) {
	rows := int(rec.NumRows())
	if sel != nil {
		rows = len(sel)
	}
	r.cols = r.cols[:0]
	for _, c := range r.keys {
		r.cols = append(r.cols, rec.Column(c))
	}
	for k := 0; k < rows; k++ {
		i := selRow(sel, k)
		r.buf = gbAppendKey(r.buf[:0], r.cols, i)
		g, ok := r.index[string(r.buf)]
		if !ok {
			g = len(r.accs)
			key := string(r.buf)
			r.index[key] = g
			r.order = append(r.order, key)
			r.accs = append(r.accs, make([]gbRefAcc, len(r.aggs)))
		}
		for a, spec := range r.aggs {
			r.fold(&r.accs[g][a], spec, rec, i)
		}
	}
}

func (r *gbRef) fold(acc *gbRefAcc, spec AggregateSpec, rec arrow.RecordBatch, i int) {
	acc.rows++
	if spec.Func == AggCountStar {
		return
	}
	x := gbValueOf(rec.Column(spec.Args[0]), i)
	switch spec.Func {
	case AggFirst, AggLast:
		tv := gbValueOf(rec.Column(spec.Args[1]), i)
		if tv.null {
			return
		}
		t := tv.i
		if tv.kind == 'u' {
			t = int64(tv.u)
		}
		if !acc.has || (spec.Func == AggFirst && t < acc.t) || (spec.Func == AggLast && t >= acc.t) {
			acc.has, acc.t, acc.best = true, t, x
		}
		return
	}
	if x.null {
		return
	}
	acc.count++
	switch spec.Func {
	case AggSum, AggAvg:
		acc.has = true
		switch x.kind {
		case 'i':
			acc.isum += x.i
			acc.fsum += float64(x.i)
			acc.fabs += math.Abs(float64(x.i))
		case 'u':
			acc.isum += int64(x.u)
			acc.fsum += float64(x.u)
			acc.fabs += float64(x.u)
		case 'f':
			acc.fsum += x.f
			acc.fabs += math.Abs(x.f)
		case 'd':
			acc.dsum.Add(&acc.dsum, x.d.BigInt())
		}
	case AggMin:
		if !acc.has || x.less(acc.best) {
			acc.has, acc.best = true, x
		}
	case AggMax:
		if !acc.has || acc.best.less(x) {
			acc.has, acc.best = true, x
		}
	case AggCountDistinct:
		if acc.distinct == nil {
			acc.distinct = map[string]bool{}
		}
		acc.distinct[x.String()] = true
	}
}

// expected is the reference result of aggregate a of group g, and whether
// it must be compared approximately (float sums) with tolerance tol.
func (r *gbRef) expected(g, a int, argType arrow.DataType) (want gbValue, approx bool, tol float64) {
	acc := r.accs[g][a]
	switch r.aggs[a].Func {
	case AggCountStar:
		return gbValue{kind: 'i', i: acc.rows}, false, 0
	case AggCount:
		return gbValue{kind: 'i', i: acc.count}, false, 0
	case AggCountDistinct:
		return gbValue{kind: 'i', i: int64(len(acc.distinct))}, false, 0
	case AggSum:
		if !acc.has {
			return gbValue{null: true}, false, 0
		}
		if arrow.IsFloating(argType.ID()) {
			return gbValue{kind: 'f', f: acc.fsum}, true, 1e-9*acc.fabs + 1e-12
		}
		if argType.ID() == arrow.DECIMAL128 { // DECIMAL(38, s), exact
			return gbValue{kind: 'd', d: decimal128.FromBigInt(&acc.dsum)}, false, 0
		}
		return gbValue{kind: 'i', i: acc.isum}, false, 0
	case AggAvg:
		if acc.count == 0 {
			return gbValue{null: true}, false, 0
		}
		if dt, ok := argType.(*arrow.Decimal128Type); ok {
			// DECIMAL(38, max(s, 6)): sum / count rounded HALF_UP.
			rs := max(dt.Scale, 6)
			num := new(big.Int).Mul(&acc.dsum, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(rs-dt.Scale)), nil))
			q, rem := new(big.Int).QuoRem(num, big.NewInt(acc.count), new(big.Int))
			if rem.Abs(rem).Lsh(rem, 1).Cmp(big.NewInt(acc.count)) >= 0 {
				q.Add(q, big.NewInt(int64(num.Sign())))
			}
			return gbValue{kind: 'd', d: decimal128.FromBigInt(q)}, false, 0
		}
		return gbValue{kind: 'f', f: acc.fsum / float64(acc.count)}, true, (1e-9*acc.fabs + 1e-12) / float64(acc.count)
	default: // min, max, first, last
		if !acc.has {
			return gbValue{null: true}, false, 0
		}
		return acc.best, false, 0
	}
}

// gbCheck compares a GroupBy result with the reference: the same
// groups in the same order (first appearance), and every aggregate.
func gbCheck(t testing.TB, ref *gbRef, schema *arrow.Schema, out arrow.RecordBatch) {
	t.Helper()
	if int(out.NumRows()) != len(ref.accs) {
		t.Fatalf("%d groups, reference has %d", out.NumRows(), len(ref.accs))
	}
	nk := len(ref.keys)
	keyCols := out.Columns()[:nk]
	var buf []byte
	for g := 0; g < int(out.NumRows()); g++ {
		if buf = gbAppendKey(buf[:0], keyCols, g); string(buf) != ref.order[g] {
			rg, ok := ref.index[string(buf)]
			if !ok {
				t.Fatalf("group %d: key %s not in the reference", g, gbKeyString(keyCols, g))
			}
			t.Fatalf("group %d: key %s is the reference's group %d (order of first appearance broken)", g, gbKeyString(keyCols, g), rg)
		}
		for a, spec := range ref.aggs {
			var argType arrow.DataType
			if len(spec.Args) > 0 {
				argType = schema.Field(spec.Args[0]).Type
			}
			want, approx, tol := ref.expected(g, a, argType)
			got := gbValueOf(out.Column(nk+a), g)
			if !gbMatch(got, want, approx, tol) {
				t.Fatalf("group %d (key %s), %s: got %s, want %s", g, gbKeyString(keyCols, g), out.Schema().Field(nk+a).Name, got, want)
			}
		}
	}
}

func gbMatch(got, want gbValue, approx bool, tol float64) bool {
	if got.null || want.null {
		return got.null == want.null
	}
	if got.kind != want.kind {
		return false
	}
	switch {
	case approx && !math.IsNaN(want.f) && !math.IsInf(want.f, 0):
		return math.Abs(got.f-want.f) <= tol
	case got.kind == 'f':
		return floatKey(got.f) == floatKey(want.f)
	}
	return got.i == want.i && got.u == want.u && got.s == want.s && got.d == want.d
}

// ---------------------------------------------------------------------------
// Test inputs.

// gbInput is a generated input: batches over one schema, with optional
// selection vectors.
type gbInput struct {
	schema  *arrow.Schema
	batches []arrow.RecordBatch
	sels    [][]int32
}

func (in *gbInput) release() {
	for _, b := range in.batches {
		b.Release()
	}
}

// gbCol describes one generated column.
type gbCol struct {
	name     string
	dt       arrow.DataType
	card     int
	nullRate float64
}

// gbInputMem allocates the generated inputs. It is not a checked
// allocator: inputs are not under test, and the checked allocator's
// bookkeeping would dominate the tests' time.
var gbInputMem = memory.NewGoAllocator()

// gbGenInput generates rows rows in batches of batch rows, with selection
// vectors when withSel (some empty, some full, most random).
func gbGenInput(t testing.TB, rng *rand.Rand, cols []gbCol, rows, batch int, withSel bool) *gbInput {
	t.Helper()
	mem := gbInputMem
	fields := make([]arrow.Field, len(cols))
	for c, cs := range cols {
		fields[c] = arrow.Field{Name: cs.name, Type: cs.dt, Nullable: true}
	}
	in := &gbInput{schema: arrow.NewSchema(fields, nil)}
	for done := 0; done < rows; done += batch {
		n := min(batch, rows-done)
		arrs := make([]arrow.Array, len(cols))
		for c, cs := range cols {
			arrs[c] = gbColumn(t, mem, rng, cs.dt, n, cs.card, cs.nullRate)
		}
		in.batches = append(in.batches, array.NewRecordBatch(in.schema, arrs, int64(n)))
		for _, a := range arrs {
			a.Release()
		}
		var sel []int32
		if withSel {
			switch rng.IntN(8) {
			case 0:
				sel = []int32{}
			case 1:
				sel = iotaInt32(nil, n)
			default:
				sel = randomSel(rng, n)
			}
		}
		in.sels = append(in.sels, sel)
	}
	return in
}

// gbRun feeds in through a GroupBy (with its table forced onto the
// general path when general) and returns Finish's result.
func gbRun(t testing.TB, mem memory.Allocator, in *gbInput, keys []int, aggs []AggregateSpec, general bool) arrow.RecordBatch {
	t.Helper()
	g := gbNewGroupBy(t, in.schema, keys, aggs, general)
	for b, rec := range in.batches {
		if err := g.Update(rec, in.sels[b]); err != nil {
			t.Fatalf("batch %d: %v", b, err)
		}
	}
	out, err := g.Finish(mem)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func gbNewGroupBy(t testing.TB, schema *arrow.Schema, keys []int, aggs []AggregateSpec, general bool) *GroupBy {
	t.Helper()
	g, err := NewGroupBy(schema, keys, aggs)
	if err != nil {
		t.Fatal(err)
	}
	if general && g.table != nil {
		g.table, err = newGroupTable(g.table.KeyTypes(), true)
		if err != nil {
			t.Fatal(err)
		}
	}
	return g
}

func gbRefRun(in *gbInput, keys []int, aggs []AggregateSpec) *gbRef {
	ref := newGbRef(keys, aggs)
	for b, rec := range in.batches {
		ref.update(rec, in.sels[b])
	}
	return ref
}

// gbValueCols are the value columns of the "every aggregate" tests; gbAllAggs
// indexes them from `base`, the number of key columns before them.
func gbValueCols(nullRate float64) []gbCol {
	return []gbCol{
		{"vi", arrow.PrimitiveTypes.Int64, 1000, nullRate},
		{"vf", arrow.PrimitiveTypes.Float64, 1000, nullRate},
		{"vs", arrow.BinaryTypes.String, 300, nullRate},
		{"vt", &arrow.TimestampType{Unit: arrow.Microsecond}, 20, nullRate}, // few values: ties
		{"vb", arrow.FixedWidthTypes.Boolean, 2, nullRate},
		{"vu", arrow.PrimitiveTypes.Uint32, 1000, nullRate},
	}
}

func gbAllAggs(base int) []AggregateSpec {
	vi, vf, vs, vt, vb, vu := base, base+1, base+2, base+3, base+4, base+5
	return []AggregateSpec{
		{Func: AggCountStar},
		{Func: AggCount, Args: []int{vs}},
		{Func: AggSum, Args: []int{vi}},
		{Func: AggSum, Args: []int{vf}},
		{Func: AggSum, Args: []int{vu}},
		{Func: AggMin, Args: []int{vi}},
		{Func: AggMax, Args: []int{vi}},
		{Func: AggMin, Args: []int{vf}},
		{Func: AggMax, Args: []int{vf}},
		{Func: AggMin, Args: []int{vs}},
		{Func: AggMax, Args: []int{vs}},
		{Func: AggMin, Args: []int{vb}},
		{Func: AggMax, Args: []int{vb}},
		{Func: AggMin, Args: []int{vt}},
		{Func: AggMax, Args: []int{vt}},
		{Func: AggAvg, Args: []int{vi}},
		{Func: AggAvg, Args: []int{vf}},
		{Func: AggCountDistinct, Args: []int{vs}},
		{Func: AggCountDistinct, Args: []int{vf}},
		{Func: AggFirst, Args: []int{vs, vt}},
		{Func: AggLast, Args: []int{vs, vt}},
		{Func: AggFirst, Args: []int{vi, vt}},
		{Func: AggLast, Args: []int{vf, vt}},
		{Func: AggLast, Args: []int{vu, vt}},
	}
}

// ---------------------------------------------------------------------------
// Tests.

// TestGroupByEveryKeyType runs every aggregate, grouped by each key type,
// on both table paths, at batch sizes 1, 7 and 1024, with and without
// selections and nulls, against the reference.
func TestGroupByEveryKeyType(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(1, 2))
	type config struct {
		batch            int
		withSel, general bool
		nullRate         float64
	}
	var configs []config
	for _, batch := range []int{1, 7, 1024} {
		for _, withSel := range []bool{false, true} {
			for _, nullRate := range []float64{0, 0.15} {
				for _, general := range []bool{false, true} {
					if batch == 1 && (general || withSel) {
						continue // one row at a time is slow; the other cases cover these
					}
					configs = append(configs, config{batch, withSel, general, nullRate})
				}
			}
		}
	}
	rows := 1500
	if testing.Short() { // a spread of the configurations, for -race
		rows = 400
		configs = []config{{1, false, false, 0.15}, {7, true, true, 0.15}, {1024, true, false, 0}, {1024, false, true, 0.15}}
	}
	for _, kt := range gbKeyTypes {
		for _, c := range configs {
			name := fmt.Sprintf("key=%s/batch=%d/sel=%v/nulls=%v/general=%v", kt, c.batch, c.withSel, c.nullRate > 0, c.general)
			cols := append([]gbCol{{"k", kt, 200, c.nullRate}}, gbValueCols(c.nullRate)...)
			in := gbGenInput(t, rng, cols, rows, c.batch, c.withSel)
			aggs := gbAllAggs(1)
			out := gbRun(t, mem, in, []int{0}, aggs, c.general)
			ref := gbRefRun(in, []int{0}, aggs)
			t.Run(name, func(t *testing.T) { gbCheck(t, ref, in.schema, out) })
			out.Release()
			in.release()
		}
	}
}

// TestAggregatesEveryValueType runs each aggregate over each value type it
// accepts (and checks it refuses the others), with few event times so
// first/last see many ties.
func TestAggregatesEveryValueType(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(3, 4))
	eventTimes := []arrow.DataType{arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Uint16, arrow.FixedWidthTypes.Date32,
		&arrow.TimestampType{Unit: arrow.Nanosecond}, arrow.PrimitiveTypes.Int8}
	for vi, vt := range gbKeyTypes {
		var aggs []AggregateSpec
		for _, f := range []AggFunc{AggCount, AggSum, AggMin, AggMax, AggAvg, AggCountDistinct, AggFirst, AggLast} {
			args := []int{1}
			argTypes := []arrow.DataType{vt}
			if f.Arity() == 2 {
				args = append(args, 2)
				argTypes = append(argTypes, eventTimes[vi%len(eventTimes)])
			}
			if _, err := NewAccumulator(f, argTypes); err != nil {
				if gbSupports(f, vt) {
					t.Errorf("%s over %s: %v", f, vt, err)
				}
				continue
			}
			if !gbSupports(f, vt) {
				t.Errorf("%s over %s accepted", f, vt)
			}
			aggs = append(aggs, AggregateSpec{Func: f, Args: args})
		}
		for _, batch := range []int{7, 1024} {
			for _, withSel := range []bool{false, true} {
				for _, nullRate := range []float64{0, 0.2} {
					if testing.Short() && (batch == 7) != (withSel && nullRate > 0) {
						continue // two of the eight, for -race
					}
					cols := []gbCol{
						{"k", arrow.PrimitiveTypes.Int32, 10, nullRate},
						{"x", vt, 100, nullRate},
						{"t", eventTimes[vi%len(eventTimes)], 5, nullRate},
					}
					in := gbGenInput(t, rng, cols, 2000, batch, withSel)
					out := gbRun(t, mem, in, []int{0}, aggs, false)
					ref := gbRefRun(in, []int{0}, aggs)
					t.Run(fmt.Sprintf("x=%s/batch=%d/sel=%v/nulls=%v", vt, batch, withSel, nullRate > 0), func(t *testing.T) {
						gbCheck(t, ref, in.schema, out)
					})
					out.Release()
					in.release()
				}
			}
		}
	}
}

// gbSupports is the documented support matrix.
func gbSupports(f AggFunc, dt arrow.DataType) bool {
	numeric := arrow.IsInteger(dt.ID()) || arrow.IsFloating(dt.ID())
	switch f {
	case AggSum, AggAvg:
		return numeric || dt.ID() == arrow.DECIMAL128
	case AggMin, AggMax:
		switch dt.ID() {
		case arrow.FIXED_SIZE_BINARY, arrow.DECIMAL256:
			return false
		}
		return true
	}
	return true
}

// TestGroupByCardinalities covers key cardinalities from 1 to 1e6 with
// every batch size, for int64, string and two-column keys.
func TestGroupByCardinalities(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	rng := rand.New(rand.NewPCG(5, 6))
	type tc struct {
		card, rows int
		batches    []int
		kinds      []string
		combos     [][2]bool // (selection, nulls)
	}
	all := []string{"int64", "string", "int32,string"}
	every := [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}}
	cases := []tc{
		{1, 2000, []int{1, 7, 1024, 65536}, all, every},
		{10, 2000, []int{1, 7, 1024, 65536}, all, every},
		{1000, 10000, []int{1, 7, 1024, 65536}, all, every},
		{100_000, 150_000, []int{1024, 65536}, all, [][2]bool{{false, false}, {true, true}}},
		{1_000_000, 1_100_000, []int{65536}, []string{"int64"}, [][2]bool{{true, true}}},
		{1_000_000, 1_100_000, []int{65536}, []string{"string"}, [][2]bool{{false, false}}},
	}
	if testing.Short() {
		cases = []tc{
			{1, 500, []int{1, 7, 1024}, all, every},
			{10, 1000, []int{1, 7, 1024}, all, every},
			{1000, 3000, []int{7, 1024}, all, every},
			{100_000, 70_000, []int{65536}, []string{"int64"}, [][2]bool{{true, true}}},
		}
	}
	keyCols := map[string][]gbCol{
		"int64":        {{"k", arrow.PrimitiveTypes.Int64, 0, 0}},
		"string":       {{"k", arrow.BinaryTypes.String, 0, 0}},
		"int32,string": {{"a", arrow.PrimitiveTypes.Int32, 0, 0}, {"b", arrow.BinaryTypes.String, 0, 0}},
	}
	for _, c := range cases {
		for _, kind := range c.kinds {
			for _, batch := range c.batches {
				for _, combo := range c.combos {
					withSel, nullRate := combo[0], 0.0
					if combo[1] {
						nullRate = 0.05
					}
					cols := append([]gbCol(nil), keyCols[kind]...)
					for i := range cols {
						cols[i].card, cols[i].nullRate = c.card, nullRate
					}
					if len(cols) == 2 { // the pair, not each column, has the cardinality
						cols[0].card, cols[1].card = 7, max(1, c.card/7)
					}
					nk := len(cols)
					cols = append(cols, gbCol{"vi", arrow.PrimitiveTypes.Int64, 1000, nullRate},
						gbCol{"vf", arrow.PrimitiveTypes.Float64, 1000, nullRate},
						gbCol{"vt", arrow.PrimitiveTypes.Int64, 20, nullRate})
					aggs := []AggregateSpec{
						{Func: AggCountStar},
						{Func: AggSum, Args: []int{nk}},
						{Func: AggMax, Args: []int{nk + 1}},
						{Func: AggFirst, Args: []int{nk, nk + 2}},
					}
					keys := iotaIdx(nk)
					rows := c.rows
					if batch == 1 {
						rows = min(rows, 1500) // a batch per row is slow to generate
					}
					in := gbGenInput(t, rng, cols, rows, batch, withSel)
					out := gbRun(t, mem, in, keys, aggs, false)
					ref := gbRefRun(in, keys, aggs)
					t.Run(fmt.Sprintf("key=%s/keys=%d/batch=%d/sel=%v/nulls=%v", kind, c.card, batch, withSel, nullRate > 0), func(t *testing.T) {
						gbCheck(t, ref, in.schema, out)
					})
					out.Release()
					in.release()
				}
			}
		}
	}
}

// iotaIdx returns 0, 1, ..., n-1: the indexes of the first n columns.
func iotaIdx(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
