package datagen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
)

// allTypesConfig generates every supported type, with nulls, sequences,
// default ranges and an event-time column in seconds.
func allTypesConfig(rows int64) Config {
	return Config{
		Seed:   42,
		Rows:   rows,
		Splits: 5,
		Fields: []Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64, Kind: Sequence},
			{Name: "i8", Type: arrow.PrimitiveTypes.Int8},
			{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Min: -5, Max: 5, NullRate: 0.2},
			{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Kind: Sequence, Min: -10},
			{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Min: 250, Max: 255},
			{Name: "u16", Type: arrow.PrimitiveTypes.Uint16},
			{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Min: 0, Max: 4e9},
			{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, NullRate: 0.5},
			{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Min: -1e15, Max: 1e15},
			{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Min: -1, Max: 1},
			{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
			{Name: "const", Type: arrow.PrimitiveTypes.Float64, Min: 3, Max: 3},
			{Name: "fseq", Type: arrow.PrimitiveTypes.Float32, Kind: Sequence, Min: 0.5},
			{Name: "b", Type: arrow.FixedWidthTypes.Boolean, NullRate: 0.1},
			{Name: "s", Type: arrow.BinaryTypes.String, Length: 13},
			{Name: "sv", Type: arrow.BinaryTypes.String, Values: []string{"x", "", "zz"}, NullRate: 1},
			{Name: "sseq", Type: arrow.BinaryTypes.String, Kind: Sequence, Min: 100},
			{Name: "svseq", Type: arrow.BinaryTypes.String, Kind: Sequence, Values: []string{"a", "b", "c"}},
			{Name: "d", Type: arrow.FixedWidthTypes.Date32},
			{Name: "tsus", Type: arrow.FixedWidthTypes.Timestamp_us, Min: 1e15, Max: 2e15},
			{Name: "tsns", Type: arrow.FixedWidthTypes.Timestamp_ns},
			{Name: "et", Type: &arrow.TimestampType{Unit: arrow.Second}},
		},
		EventTime: EventTimeConfig{Column: "et", Interval: 300 * time.Millisecond, MaxOutOfOrderness: 1500 * time.Millisecond},
	}
}

// readAll reads every split of a source built from cfg with the given
// number of readers (split i goes to reader i mod readers, like the
// runtime deals them) and returns all rows sorted by id.
func readAll(t *testing.T, cfg Config, readers int) [][]any {
	t.Helper()
	src := mustNew(t, cfg)
	mem := newMem(t)
	groups := make([][]int, readers)
	for s := range src.Config().Splits {
		groups[s%readers] = append(groups[s%readers], s)
	}
	var rows [][]any
	for _, g := range groups {
		rd := open(t, src, mem, states(g...))
		got, eof := readBatches(t, rd, -1)
		if !eof {
			t.Fatal("reader stopped before EOF")
		}
		rows = append(rows, got...)
	}
	sortByID(rows)
	return rows
}

// checkRows checks that rows are exactly rows 0..n-1 of src, as Row
// defines them.
func checkRows(t *testing.T, src *Source, rows [][]any, n int64) {
	t.Helper()
	if int64(len(rows)) != n {
		t.Fatalf("got %d rows, want %d", len(rows), n)
	}
	for i, row := range rows {
		if id := row[0].(int64); id != int64(i) {
			t.Fatalf("row %d has id %d (missing or duplicate ids)", i, id)
		}
		if want := src.Row(int64(i)); !reflect.DeepEqual(row, want) {
			t.Fatalf("row %d:\n got %v\nwant %v", i, row, want)
		}
	}
}

func TestDeterminism(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"default", Config{Seed: 7, Rows: 20_000}},
		{"alltypes", allTypesConfig(5_000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.cfg
			want := readAll(t, base, 1)
			checkRows(t, mustNew(t, base), want, base.Rows)
			for _, v := range []struct {
				name      string
				readers   int
				batchSize int
				splits    int
			}{
				{"readers=3/batch=7", 3, 7, 0},
				{"readers=1/batch=1", 1, 1, 0},
				{"readers=2/batch=4096/splits=3", 2, 4096, 3},
				{"readers=4/batch=100/splits=1", 4, 100, 1},
			} {
				t.Run(v.name, func(t *testing.T) {
					cfg := base
					cfg.BatchSize = v.batchSize
					if v.splits != 0 {
						cfg.Splits = v.splits
					}
					got := readAll(t, cfg, v.readers)
					if len(got) != len(want) {
						t.Fatalf("got %d rows, want %d", len(got), len(want))
					}
					for i := range got {
						if !reflect.DeepEqual(got[i], want[i]) {
							t.Fatalf("row %d:\n got %v\nwant %v", i, got[i], want[i])
						}
					}
				})
			}
		})
	}
}

func TestSeedsDiffer(t *testing.T) {
	a, b := mustNew(t, Config{Seed: 1}), mustNew(t, Config{Seed: 2})
	same := 0
	for r := range int64(1000) {
		if a.Row(r)[1] == b.Row(r)[1] {
			same++
		}
	}
	// Keys are in [0, 999]: about one row in 1000 matches by chance.
	if same > 10 {
		t.Fatalf("seeds 1 and 2 agree on %d of 1000 keys", same)
	}
	if !reflect.DeepEqual(a.Row(12345), mustNew(t, Config{Seed: 1}).Row(12345)) {
		t.Fatal("two sources with the same seed disagree")
	}
}

// TestDefaultFields checks the default columns over 100k rows against
// their definitions, without using the generator's code.
func TestDefaultFields(t *testing.T) {
	const n = 100_000
	cfg := Config{Seed: 2026, Rows: n, BatchSize: 8192}
	src := mustNew(t, cfg)
	rows := readAll(t, cfg, 1)
	categories := DefaultFields()[2].Values
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	keys := make(map[int64]int)
	cats := make(map[string]int)
	var keySum float64
	nulls, wantNulls := 0, 0
	for r, row := range rows {
		if row[0].(int64) != int64(r) {
			t.Fatalf("row %d: id %v", r, row[0])
		}
		k := row[1].(int64)
		if k < 0 || k > 999 {
			t.Fatalf("row %d: key %d out of [0, 999]", r, k)
		}
		keys[k]++
		keySum += float64(k)
		c := row[2].(string)
		if !slices.Contains(categories, c) {
			t.Fatalf("row %d: category %q not in %v", r, c, categories)
		}
		cats[c]++
		if src.Row(int64(r))[3] == nil {
			wantNulls++
		}
		if row[3] == nil {
			nulls++
		} else {
			p := row[3].(float64)
			if p < 1 || p >= 1000 {
				t.Fatalf("row %d: price %v out of [1, 1000)", r, p)
			}
			if cents := p * 100; math.Abs(cents-math.Round(cents)) > 1e-6 {
				t.Fatalf("row %d: price %v is not in cents", r, p)
			}
		}
		wantTS := arrow.Timestamp(start.Add(time.Duration(r) * time.Millisecond).UnixMilli())
		if row[4].(arrow.Timestamp) != wantTS {
			t.Fatalf("row %d: ts %v, want %v", r, row[4], wantTS)
		}
	}
	if nulls != wantNulls {
		t.Errorf("%d null prices, Row says %d", nulls, wantNulls)
	}
	// Binomial(100000, 0.01): mean 1000, sd about 31; allow 5 sd.
	if nulls < 1000-160 || nulls > 1000+160 {
		t.Errorf("%d null prices of %d; want about 1%%", nulls, n)
	}
	if len(keys) != 1000 {
		t.Errorf("%d distinct keys, want all 1000", len(keys))
	}
	// Mean of uniform [0, 999]: 499.5, sd of the mean about 0.91.
	if mean := keySum / n; math.Abs(mean-499.5) > 5 {
		t.Errorf("mean key %v, want about 499.5", mean)
	}
	for _, c := range categories {
		// Binomial(100000, 1/8): mean 12500, sd about 105.
		if got := cats[c]; got < 12500-600 || got > 12500+600 {
			t.Errorf("category %q: %d rows, want about 12500", c, got)
		}
	}
}

// TestAllTypesRanges checks every column of allTypesConfig against its
// Field's definition.
func TestAllTypesRanges(t *testing.T) {
	const n = 20_000
	cfg := allTypesConfig(n)
	src := mustNew(t, cfg)
	rows := readAll(t, cfg, 2)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	yearEnd := start.Add(365 * 24 * time.Hour)
	nulls := make([]int, len(cfg.Fields))
	seenBool := map[bool]bool{}
	var f32min, f32max float32 = 1, -1
	for r, row := range rows {
		for j, v := range row {
			if v == nil {
				nulls[j]++
			}
		}
		fail := func(col string) {
			t.Fatalf("row %d: %s = %v out of its range", r, col, row[slices.IndexFunc(cfg.Fields, func(f Field) bool { return f.Name == col })])
		}
		if v, ok := row[2].(int16); ok && (v < -5 || v > 5) {
			fail("i16")
		}
		if row[3].(int32) != int32(r-10) {
			fail("i32")
		}
		if v := row[4].(uint8); v < 250 {
			fail("u8")
		}
		if v := row[6].(uint32); v > 4e9 {
			fail("u32")
		}
		if v := row[8].(int64); v < -1e15 || v > 1e15 {
			fail("i64")
		}
		v32 := row[9].(float32)
		if v32 < -1 || v32 >= 1 {
			fail("f32")
		}
		f32min, f32max = min(f32min, v32), max(f32max, v32)
		if v := row[10].(float64); v < 0 || v >= 1 {
			fail("f64")
		}
		if row[11].(float64) != 3 {
			fail("const")
		}
		if row[12].(float32) != float32(0.5+float64(r)) {
			fail("fseq")
		}
		if v, ok := row[13].(bool); ok {
			seenBool[v] = true
		}
		if s := row[14].(string); len(s) != 13 || strings.Trim(s, alphabet) != "" {
			fail("s")
		}
		if row[16].(string) != fmt.Sprint(100+r) {
			fail("sseq")
		}
		if row[17].(string) != []string{"a", "b", "c"}[r%3] {
			fail("svseq")
		}
		if d := row[18].(arrow.Date32).ToTime(); d.Before(start) || !d.Before(yearEnd) {
			fail("d")
		}
		if v := row[19].(arrow.Timestamp); v < 1e15 || v > 2e15 {
			fail("tsus")
		}
		if ts := row[20].(arrow.Timestamp).ToTime(arrow.Nanosecond); ts.Before(start) || !ts.Before(yearEnd) {
			fail("tsns")
		}
		nominal := start.Add(time.Duration(r) * 300 * time.Millisecond)
		if et := row[21].(arrow.Timestamp).ToTime(arrow.Second); et.After(nominal) || et.Before(nominal.Add(-1500*time.Millisecond).Truncate(time.Second)) {
			fail("et")
		}
	}
	if f32min > -0.99 || f32max < 0.99 {
		t.Errorf("f32 spans [%v, %v]; want about [-1, 1)", f32min, f32max)
	}
	if !seenBool[true] || !seenBool[false] {
		t.Errorf("bool column took only %v", seenBool)
	}
	for j, f := range cfg.Fields {
		want := 0
		for r := range int64(n) {
			if src.Row(r)[j] == nil {
				want++
			}
		}
		if nulls[j] != want {
			t.Errorf("%s: %d nulls, Row says %d", f.Name, nulls[j], want)
		}
		// Binomial tolerance: 5 standard deviations.
		mean := f.NullRate * n
		if tol := 5*math.Sqrt(mean*(1-f.NullRate)) + 0.5; math.Abs(float64(nulls[j])-mean) > tol {
			t.Errorf("%s: %d nulls of %d; want about %v", f.Name, nulls[j], n, mean)
		}
	}
}

func TestBoundedTotal(t *testing.T) {
	for _, tc := range []struct {
		rows      int64
		splits    int
		batchSize int
		readers   int
	}{
		{10_007, 8, 100, 3},
		{3, 8, 1024, 2}, // splits 3..7 have no row at all
		{1, 1, 1, 1},
		{64, 8, 8, 8}, // every batch exactly fills a split
	} {
		t.Run(fmt.Sprintf("rows=%d/splits=%d/batch=%d/readers=%d", tc.rows, tc.splits, tc.batchSize, tc.readers), func(t *testing.T) {
			cfg := Config{Rows: tc.rows, Splits: tc.splits, BatchSize: tc.batchSize}
			rows := readAll(t, cfg, tc.readers)
			checkRows(t, mustNew(t, cfg), rows, tc.rows)
		})
	}
}

// TestResume reads part of the stream, reopens from the positions with
// another parallelism and reads the rest: the union is the full stream.
func TestResume(t *testing.T) {
	cfg := allTypesConfig(3_001)
	cfg.BatchSize = 64
	src := mustNew(t, cfg)
	for _, cut := range []int{0, 1, 5, 17, 1000} { // batches read before the checkpoint
		t.Run(fmt.Sprintf("cut=%d", cut), func(t *testing.T) {
			mem := newMem(t)
			rd := open(t, src, mem, allStates(src))
			rows, _ := readBatches(t, rd, cut)
			pos, err := rd.Positions()
			if err != nil {
				t.Fatal(err)
			}
			if err := rd.Close(); err != nil {
				t.Fatal(err)
			}
			if len(pos) != cfg.Splits {
				t.Fatalf("%d positions, want %d", len(pos), cfg.Splits)
			}
			// Restore with parallelism 2, dealing the split states.
			for p := range 2 {
				var mine []arrowflow.SplitState
				for i, st := range pos {
					if i%2 == p {
						mine = append(mine, st)
					}
				}
				more, eof := readBatches(t, open(t, src, mem, mine), -1)
				if !eof {
					t.Fatal("no EOF")
				}
				rows = append(rows, more...)
			}
			sortByID(rows)
			checkRows(t, src, rows, cfg.Rows)
		})
	}
}

func TestPositionsAtEnd(t *testing.T) {
	cfg := Config{Rows: 100, BatchSize: 7}
	src := mustNew(t, cfg)
	mem := newMem(t)
	rd := open(t, src, mem, allStates(src))
	if _, eof := readBatches(t, rd, -1); !eof {
		t.Fatal("no EOF")
	}
	pos, _ := rd.Positions()
	again := open(t, src, mem, pos)
	if _, err := again.Next(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("reader restored at the end: Next = %v, want io.EOF", err)
	}
}

func TestZeroSplits(t *testing.T) {
	for _, rows := range []int64{0, 10} {
		src := mustNew(t, Config{Rows: rows})
		rd := open(t, src, newMem(t), nil)
		if _, err := rd.Next(context.Background()); !errors.Is(err, io.EOF) {
			t.Errorf("rows=%d: Next = %v, want io.EOF", rows, err)
		}
		if pos, err := rd.Positions(); err != nil || len(pos) != 0 {
			t.Errorf("rows=%d: Positions = %v, %v", rows, pos, err)
		}
	}
}

func TestUnboundedKeepsGoing(t *testing.T) {
	cfg := Config{BatchSize: 10}
	src := mustNew(t, cfg)
	rd := open(t, src, newMem(t), states(0, 3))
	rows, eof := readBatches(t, rd, 100)
	if eof || len(rows) != 1000 {
		t.Fatalf("got %d rows, eof %v; want 1000 rows and no EOF", len(rows), eof)
	}
	// Round robin: splits 0 and 3 alternate, 50 batches each.
	counts := map[int64]int{}
	for _, row := range rows {
		counts[row[0].(int64)%8]++
	}
	if counts[0] != 500 || counts[3] != 500 {
		t.Fatalf("rows per split %v, want 500 each of splits 0 and 3", counts)
	}
	pos, _ := rd.Positions()
	for _, st := range pos {
		s, _ := src.parseSplit(arrowflow.SplitState{Split: st.Split})
		if c, err := src.parseSplit(st); err != nil || c.next != int64(s.split)+50*10*8 {
			t.Errorf("split %s: position %x (%v)", st.Split, st.Position, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	src := mustNew(t, Config{})
	for _, tc := range []struct {
		name   string
		splits []arrowflow.SplitState
		want   string
	}{
		{"unknown", []arrowflow.SplitState{{Split: "kafka-0"}}, `unknown split "kafka-0"`},
		{"out of range", []arrowflow.SplitState{{Split: "datagen-8"}}, `unknown split "datagen-8"`},
		{"not canonical", []arrowflow.SplitState{{Split: "datagen-01"}}, `unknown split "datagen-01"`},
		{"negative", []arrowflow.SplitState{{Split: "datagen--1"}}, `unknown split "datagen--1"`},
		{"twice", states(2, 2), `split "datagen-2" given twice`},
		{"short position", []arrowflow.SplitState{{Split: "datagen-1", Position: []byte{1, 2}}}, `split "datagen-1": malformed position 0102`},
		{"empty position", []arrowflow.SplitState{{Split: "datagen-1", Position: []byte{}}}, `split "datagen-1": malformed position`},
		{"wrong split", []arrowflow.SplitState{{Split: "datagen-1", Position: encodePosition(16)}}, `split "datagen-1": position row 16 does not belong to it`},
		{"negative row", []arrowflow.SplitState{{Split: "datagen-0", Position: encodePosition(-8)}}, `split "datagen-0": position row -8`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd, err := src.Open(&arrowflow.TaskInfo{Allocator: newMem(t)}, tc.splits)
			if err == nil {
				rd.Close()
				t.Fatalf("Open succeeded; want an error with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestSchemaAndSplits(t *testing.T) {
	src := mustNew(t, Config{})
	sch := src.Schema()
	if idx, ok := arrowflow.EventTimeColumn(sch); !ok || sch.Field(idx).Name != "ts" {
		t.Fatalf("event-time column of %v: %d, %v; want ts", sch, idx, ok)
	}
	for _, f := range sch.Fields() {
		if f.Nullable != (f.Name == "price") {
			t.Errorf("field %s: nullable %v", f.Name, f.Nullable)
		}
	}
	ids, err := src.Splits(context.Background())
	want := []string{"datagen-0", "datagen-1", "datagen-2", "datagen-3", "datagen-4", "datagen-5", "datagen-6", "datagen-7"}
	if err != nil || !slices.Equal(ids, want) {
		t.Fatalf("Splits = %v, %v; want %v", ids, err, want)
	}
	noET := mustNew(t, Config{Fields: []Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}})
	if _, ok := arrowflow.EventTimeColumn(noET.Schema()); ok {
		t.Fatal("schema without event-time column names one")
	}
	if got := noET.Config(); got.Splits != 8 || got.BatchSize != 1024 || got.EventTime.Column != "" {
		t.Fatalf("defaults: %+v", got)
	}
}

// TestConfigCopied checks that New does not keep the caller's slices.
func TestConfigCopied(t *testing.T) {
	fields := DefaultFields()
	src := mustNew(t, Config{Fields: fields, EventTime: EventTimeConfig{Column: "ts"}})
	before := src.Row(5)
	fields[2].Values[0] = "changed"
	fields[1].Max = 1
	if !reflect.DeepEqual(before, src.Row(5)) || src.Config().Fields[2].Values[0] != "books" {
		t.Fatal("changing the caller's Config changed the Source")
	}
}
