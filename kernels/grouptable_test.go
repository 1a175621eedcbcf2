package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/weirflow/weir/internal/testutil"
)

// gbTableRef is the reference group table: a Go map from the canonical
// key string to dense ids in order of first appearance.
type gbTableRef map[string]uint32

func gbKeyString(cols []arrow.Array, i int) string {
	var b strings.Builder
	for _, c := range cols {
		b.WriteString(gbValueOf(c, i).String())
		b.WriteByte('|')
	}
	return b.String()
}

func (r gbTableRef) findOrInsert(cols []arrow.Array, i int) uint32 {
	k := gbKeyString(cols, i)
	g, ok := r[k]
	if !ok {
		g = uint32(len(r))
		r[k] = g
	}
	return g
}

func (r gbTableRef) lookup(cols []arrow.Array, i int) uint32 {
	if g, ok := r[gbKeyString(cols, i)]; ok {
		return g
	}
	return NoGroup
}

// gbTableCase is a key layout the table tests run.
type gbTableCase struct {
	name  string
	types []arrow.DataType
}

var gbTableCases = []gbTableCase{
	{"int64", []arrow.DataType{arrow.PrimitiveTypes.Int64}},
	{"float64", []arrow.DataType{arrow.PrimitiveTypes.Float64}},
	{"uint8", []arrow.DataType{arrow.PrimitiveTypes.Uint8}},
	{"bool", []arrow.DataType{arrow.FixedWidthTypes.Boolean}},
	{"string", []arrow.DataType{arrow.BinaryTypes.String}},
	{"decimal128", []arrow.DataType{&arrow.Decimal128Type{Precision: 20, Scale: 2}}},
	{"int32,string", []arrow.DataType{arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String}},
	{"float32,bool,large_binary", []arrow.DataType{arrow.PrimitiveTypes.Float32, arrow.FixedWidthTypes.Boolean, arrow.BinaryTypes.LargeBinary}},
}

// gbKeyBatch generates one batch of key columns.
func gbKeyBatch(t testing.TB, rng *rand.Rand, types []arrow.DataType, n, card int, nullRate float64) []arrow.Array {
	cols := make([]arrow.Array, len(types))
	for c, dt := range types {
		cols[c] = gbColumn(t, gbInputMem, rng, dt, n, card, nullRate)
	}
	return cols
}

func gbRelease(cols []arrow.Array) {
	for _, c := range cols {
		c.Release()
	}
}

// checkTable feeds batches through table and the reference and compares
// every group id, then checks Lookup and Keys.
func checkTable(t *testing.T, table *GroupTable, rng *rand.Rand, types []arrow.DataType, batches, n, card int) {
	t.Helper()
	mem := testutil.CheckedAllocator(t)
	ref := gbTableRef{}
	for b := 0; b < batches; b++ {
		cols := gbKeyBatch(t, rng, types, n, card, 0.1)
		var sel []int32
		if b%2 == 1 {
			sel = randomSel(rng, n)
		}
		m := n
		if sel != nil {
			m = len(sel)
		}
		gids := make([]uint32, m)
		if err := table.FindOrInsert(cols, sel, gids); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < m; k++ {
			i := selRow(sel, k)
			if want := ref.findOrInsert(cols, i); gids[k] != want {
				t.Fatalf("batch %d row %d (key %s): group %d, want %d", b, i, gbKeyString(cols, i), gids[k], want)
			}
		}
		gbRelease(cols)
	}
	if table.Len() != len(ref) {
		t.Fatalf("Len() = %d, want %d", table.Len(), len(ref))
	}

	// Lookup finds exactly the keys seen, never inserts.
	cols := gbKeyBatch(t, rng, types, n, 2*card, 0.1)
	gids := make([]uint32, n)
	if err := table.Lookup(cols, nil, gids); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if want := ref.lookup(cols, i); gids[i] != want {
			t.Fatalf("lookup row %d (key %s): group %d, want %d", i, gbKeyString(cols, i), gids[i], want)
		}
	}
	gbRelease(cols)
	if table.Len() != len(ref) {
		t.Fatalf("Lookup changed Len() to %d, want %d", table.Len(), len(ref))
	}

	// Keys has one row per group, in group-id order, and each finds its
	// own group.
	keys := table.Keys(mem)
	defer gbRelease(keys)
	for c, k := range keys {
		if k.Len() != table.Len() || !arrow.TypeEqual(k.DataType(), types[c]) {
			t.Fatalf("key column %d: %d rows of %s, want %d of %s", c, k.Len(), k.DataType(), table.Len(), types[c])
		}
	}
	for g := 0; g < table.Len(); g++ {
		if want := ref.lookup(keys, g); want != uint32(g) {
			t.Fatalf("Keys row %d (key %s) is the reference's group %d", g, gbKeyString(keys, g), want)
		}
	}
	gids = make([]uint32, table.Len())
	if err := table.Lookup(keys, nil, gids); err != nil {
		t.Fatal(err)
	}
	for g, got := range gids {
		if got != uint32(g) {
			t.Fatalf("Lookup(Keys) row %d: group %d", g, got)
		}
	}
}

func TestGroupTableMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, tc := range gbTableCases {
		for _, general := range []bool{false, true} {
			for _, card := range []int{1, 10, 1000, 20000} {
				t.Run(fmt.Sprintf("%s/general=%v/keys=%d", tc.name, general, card), func(t *testing.T) {
					table, err := newGroupTable(tc.types, general)
					if err != nil {
						t.Fatal(err)
					}
					checkTable(t, table, rng, tc.types, 6, 2000, card)
				})
			}
		}
	}
}

// TestGroupTableEveryKeyType covers every supported key type on both
// paths, including that -0 groups with +0 and NaN with NaN.
func TestGroupTableEveryKeyType(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, dt := range gbKeyTypes {
		for _, general := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/general=%v", dt, general), func(t *testing.T) {
				types := []arrow.DataType{dt}
				table, err := newGroupTable(types, general)
				if err != nil {
					t.Fatal(err)
				}
				if !general && fixedKeyType(dt) != (table.fixed != nil) {
					t.Fatalf("fixed path = %v for %s", table.fixed != nil, dt)
				}
				checkTable(t, table, rng, types, 3, 1000, 300)
			})
		}
	}
}

// TestGroupTableForcedCollisions makes every key hash alike, so only key
// comparison can tell groups apart: equal tags everywhere, and few home
// slots. It also exercises the restoration of first-appearance order for
// rows that insert after a tag mismatch.
func TestGroupTableForcedCollisions(t *testing.T) {
	hashes := map[string]func(uint64) uint64{
		"constant":    func(uint64) uint64 { return 0x1234_5678_0000_0042 },
		"same-tag":    func(h uint64) uint64 { return 0xabcd_0000_0000_0000 | h&0x7 },
		"tag-differs": func(h uint64) uint64 { return h & 0x0000_0003_0000_0003 },
	}
	rng := rand.New(rand.NewPCG(15, 16))
	for _, tc := range gbTableCases {
		for hname, hf := range hashes {
			t.Run(tc.name+"/"+hname, func(t *testing.T) {
				table, err := newGroupTable(tc.types, true)
				if err != nil {
					t.Fatal(err)
				}
				table.hashFn = func(cols []arrow.Array, sel []int32, out []uint64) error {
					if err := HashColumns(cols, sel, out); err != nil {
						return err
					}
					for k := range out {
						out[k] = hf(out[k])
					}
					return nil
				}
				checkTable(t, table, rng, tc.types, 4, 300, 150)
			})
		}
	}
}

// TestGroupTableFixedSpreadKeys stresses the fixed path's probing with keys
// that differ only in their high bits.
func TestGroupTableFixedSpreadKeys(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	for _, shift := range []uint{0, 20, 32, 40, 48, 56} {
		table, err := NewGroupTable([]arrow.DataType{arrow.PrimitiveTypes.Uint64})
		if err != nil {
			t.Fatal(err)
		}
		b := array.NewUint64Builder(mem)
		n := 5000
		if shift >= 56 {
			n = 256
		}
		for i := 0; i < n; i++ {
			b.Append(uint64(i) << shift)
		}
		for i := 0; i < n; i++ { // every key again, in reverse
			b.Append(uint64(n-1-i) << shift)
		}
		arr := b.NewArray()
		b.Release()
		gids := make([]uint32, 2*n)
		if err := table.FindOrInsert([]arrow.Array{arr}, nil, gids); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			if gids[i] != uint32(i) || gids[2*n-1-i] != uint32(i) {
				t.Fatalf("shift %d: key %d got groups %d and %d", shift, i, gids[i], gids[2*n-1-i])
			}
		}
		arr.Release()
	}
}

func TestGroupTableResetKeepsMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, tc := range gbTableCases {
		table, err := NewGroupTable(tc.types)
		if err != nil {
			t.Fatal(err)
		}
		cols := gbKeyBatch(t, rng, tc.types, 5000, 3000, 0.05)
		gids := make([]uint32, 5000)
		first := make([]uint32, 5000)
		if err := table.FindOrInsert(cols, nil, first); err != nil {
			t.Fatal(err)
		}
		size, groups := table.SizeBytes(), table.Len()
		table.Reset()
		if table.Len() != 0 {
			t.Fatalf("%s: %d groups after Reset", tc.name, table.Len())
		}
		if err := table.FindOrInsert(cols, nil, gids); err != nil {
			t.Fatal(err)
		}
		if table.Len() != groups || table.SizeBytes() != size {
			t.Fatalf("%s: after Reset and the same input: %d groups, %d bytes; before %d, %d", tc.name, table.Len(), table.SizeBytes(), groups, size)
		}
		for i := range gids {
			if gids[i] != first[i] {
				t.Fatalf("%s: row %d: group %d after Reset, %d before", tc.name, i, gids[i], first[i])
			}
		}
		gbRelease(cols)
	}
}

func TestGroupTableErrors(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	listType := arrow.ListOf(arrow.PrimitiveTypes.Int64)
	_, err := NewGroupTable([]arrow.DataType{arrow.PrimitiveTypes.Int64, listType})
	if err == nil || !strings.Contains(err.Error(), "key column 1") || !strings.Contains(err.Error(), listType.String()) {
		t.Errorf("unsupported key type: error %v, want one naming key column 1 and %s", err, listType)
	}
	if _, err := NewGroupTable(nil); err == nil {
		t.Error("a table without key columns was created")
	}

	table, err := NewGroupTable([]arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String})
	if err != nil {
		t.Fatal(err)
	}
	ib := array.NewInt64Builder(mem)
	ib.AppendValues([]int64{1, 2, 3}, nil)
	ints := ib.NewArray()
	ib.AppendValues([]int64{1, 2}, nil)
	short := ib.NewArray()
	ib.Release()
	sb := array.NewStringBuilder(mem)
	sb.AppendValues([]string{"a", "b", "c"}, nil)
	strs := sb.NewArray()
	sb.Release()
	defer gbRelease([]arrow.Array{ints, short, strs})

	cases := []struct {
		name string
		keys []arrow.Array
		sel  []int32
		gids int
	}{
		{"too few group ids", []arrow.Array{ints, strs}, nil, 2},
		{"too many group ids for the selection", []arrow.Array{ints, strs}, []int32{0, 2}, 3},
		{"selection out of range", []arrow.Array{ints, strs}, []int32{1, 3}, 2},
		{"one key column missing", []arrow.Array{ints}, nil, 3},
		{"key columns swapped", []arrow.Array{strs, ints}, nil, 3},
		{"key columns of different lengths", []arrow.Array{short, strs}, nil, 3},
	}
	for _, c := range cases {
		if err := table.FindOrInsert(c.keys, c.sel, make([]uint32, c.gids)); err == nil {
			t.Errorf("FindOrInsert, %s: no error", c.name)
		}
		if err := table.Lookup(c.keys, c.sel, make([]uint32, c.gids)); err == nil {
			t.Errorf("Lookup, %s: no error", c.name)
		}
	}
	if table.Len() != 0 {
		t.Errorf("failed calls created %d groups", table.Len())
	}
}

// TestGroupTableZeroAllocs checks that probing allocates nothing once the
// table holds every key of the batch.
func TestGroupTableZeroAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for _, tc := range gbTableCases {
		for _, withSel := range []bool{false, true} {
			table, err := NewGroupTable(tc.types)
			if err != nil {
				t.Fatal(err)
			}
			cols := gbKeyBatch(t, rng, tc.types, 4096, 500, 0.1)
			var sel []int32
			m := 4096
			if withSel {
				sel = randomSel(rng, 4096)
				m = len(sel)
			}
			gids := make([]uint32, m)
			if err := table.FindOrInsert(cols, sel, gids); err != nil {
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(5, func() {
				if err := table.FindOrInsert(cols, sel, gids); err != nil {
					t.Fatal(err)
				}
				if err := table.Lookup(cols, sel, gids); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%s, sel=%v: %v allocations per batch", tc.name, withSel, allocs)
			}
			gbRelease(cols)
		}
	}
}

// TestGroupTableDirectMode walks the fixed path through its modes: direct
// while keys are dense, hash once a far key arrives (in the middle of a
// batch), direct again once the keys are dense again; with nulls, negative
// keys and ranges that wrap around the uint64 space.
func TestGroupTableDirectMode(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	type step struct {
		keys   []int64
		nulls  []bool // nil: none
		direct bool   // the mode after the step
	}
	dense := func(lo, n, stride int) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(lo + (i*7919)%n*stride) // a permutation of the range
		}
		return out
	}
	far := append(dense(0, 500, 1), 1<<40, 3, 4)
	withNulls := make([]bool, 600)
	for i := range withNulls {
		withNulls[i] = i%9 != 4
	}
	cases := map[string][]step{
		"dense stays direct": {{keys: dense(-250, 500, 1), direct: true}, {keys: dense(-250, 500, 1), direct: true}},
		"widens both ways":   {{keys: dense(1000, 100, 1), direct: true}, {keys: dense(0, 3000, 1), direct: true}, {keys: dense(-5000, 20000, 1), direct: true}},
		"nulls":              {{keys: dense(0, 600, 3), nulls: withNulls, direct: true}},
		"far key":            {{keys: far, direct: false}, {keys: dense(0, 1000, 1), direct: false}},
		"sparse then dense": {
			{keys: dense(0, 10, 50_000), direct: false},
			{keys: dense(0, 300_000, 1), direct: false}, // the switch back happens at the next batch
			{keys: dense(0, 1000, 1), direct: true},
		},
		"extremes": {{keys: []int64{math.MaxInt64, math.MinInt64, 0}, direct: false}},
		"wraps":    {{keys: []int64{-1, 0, -2, 1, -3}, direct: true}},
	}
	for name, steps := range cases {
		for _, typ := range []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint64} {
			table, err := NewGroupTable([]arrow.DataType{typ})
			if err != nil {
				t.Fatal(err)
			}
			ref := gbTableRef{}
			for s, st := range steps {
				b := array.NewBuilder(mem, typ)
				for i, k := range st.keys {
					switch {
					case st.nulls != nil && !st.nulls[i]:
						b.AppendNull()
					case typ.ID() == arrow.INT64:
						b.(*array.Int64Builder).Append(k)
					default:
						b.(*array.Uint64Builder).Append(uint64(k))
					}
				}
				arr := b.NewArray()
				b.Release()
				cols := []arrow.Array{arr}
				gids := make([]uint32, len(st.keys))
				if err := table.FindOrInsert(cols, nil, gids); err != nil {
					t.Fatal(err)
				}
				for i, g := range gids {
					if want := ref.findOrInsert(cols, i); g != want {
						t.Fatalf("%s/%s step %d row %d (key %s): group %d, want %d", name, typ, s, i, gbKeyString(cols, i), g, want)
					}
				}
				if table.fixed.isDirect != st.direct {
					t.Errorf("%s/%s step %d: direct = %v, want %v", name, typ, s, table.fixed.isDirect, st.direct)
				}
				// Lookup of keys around the range: present or NoGroup.
				probe := array.NewBuilder(mem, typ)
				for _, k := range []int64{-1 << 50, -7, 0, 5, 499, 1 << 40, 1<<40 + 1, math.MaxInt64} {
					if typ.ID() == arrow.INT64 {
						probe.(*array.Int64Builder).Append(k)
					} else {
						probe.(*array.Uint64Builder).Append(uint64(k))
					}
				}
				parr := probe.NewArray()
				probe.Release()
				pg := make([]uint32, parr.Len())
				if err := table.Lookup([]arrow.Array{parr}, nil, pg); err != nil {
					t.Fatal(err)
				}
				for i, g := range pg {
					if want := ref.lookup([]arrow.Array{parr}, i); g != want {
						t.Fatalf("%s/%s step %d: lookup %s: group %d, want %d", name, typ, s, gbKeyString([]arrow.Array{parr}, i), g, want)
					}
				}
				parr.Release()
				arr.Release()
			}
			keys := table.Keys(mem)
			for g := 0; g < table.Len(); g++ {
				if want := ref.lookup(keys, g); want != uint32(g) {
					t.Fatalf("%s/%s: Keys row %d is the reference's group %d", name, typ, g, want)
				}
			}
			gbRelease(keys)
		}
	}
}

// TestGroupTableStringViews covers the string key storage at the edges of
// its layout: keys that fit their view exactly, keys one byte longer, and
// long keys that share their stored prefix and length, all hashing alike
// so that every pair is compared.
func TestGroupTableStringViews(t *testing.T) {
	mem := testutil.CheckedAllocator(t)
	var keys []string
	for i := 0; i < 40; i++ {
		keys = append(keys,
			fmt.Sprintf("%020d", i),                                // exactly viewInline bytes
			fmt.Sprintf("%021d", i),                                // one more: prefix and arena
			fmt.Sprintf("shared-prefix-%04d-tail", i),              // equal prefix and length
			strings.Repeat("x", i%9),                               // 0..8 bytes, "" included
			fmt.Sprintf("%s\x00%d", strings.Repeat("y", i%5), i%3), // embedded zero bytes
		)
	}
	for _, typ := range []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString} {
		table, err := newGroupTable([]arrow.DataType{typ}, true)
		if err != nil {
			t.Fatal(err)
		}
		table.hashFn = func(cols []arrow.Array, sel []int32, out []uint64) error {
			for k := range out {
				out[k] = 7 << 40
			}
			return nil
		}
		ref := gbTableRef{}
		rng := rand.New(rand.NewPCG(31, 32))
		for b := 0; b < 3; b++ {
			bld := array.NewBuilder(mem, typ)
			for i := 0; i < 300; i++ {
				if i%50 == 7 {
					bld.AppendNull()
					continue
				}
				s := keys[rng.IntN(len(keys))]
				if typ.ID() == arrow.STRING {
					bld.(*array.StringBuilder).Append(s)
				} else {
					bld.(*array.LargeStringBuilder).Append(s)
				}
			}
			arr := bld.NewArray()
			bld.Release()
			cols := []arrow.Array{arr}
			gids := make([]uint32, arr.Len())
			if err := table.FindOrInsert(cols, nil, gids); err != nil {
				t.Fatal(err)
			}
			for i, g := range gids {
				if want := ref.findOrInsert(cols, i); g != want {
					t.Fatalf("%s batch %d row %d (key %q): group %d, want %d", typ, b, i, arr.ValueStr(i), g, want)
				}
			}
			arr.Release()
		}
		out := table.Keys(mem)
		for g := 0; g < table.Len(); g++ {
			if want := ref.lookup(out, g); want != uint32(g) {
				t.Fatalf("%s: Keys row %d (%q) is the reference's group %d", typ, g, out[0].ValueStr(g), want)
			}
		}
		gbRelease(out)
	}
}
