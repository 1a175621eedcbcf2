package datagen

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestConfigErrors(t *testing.T) {
	i64 := arrow.PrimitiveTypes.Int64
	one := func(f Field) Config { return Config{Fields: []Field{f}} }
	withET := func(f Field) Config {
		return Config{Fields: []Field{f}, EventTime: EventTimeConfig{Column: f.Name}}
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"unsupported type", one(Field{Name: "blob", Type: arrow.BinaryTypes.Binary}), `field "blob": type binary is not supported`},
		{"unsupported large string", one(Field{Name: "ls", Type: arrow.BinaryTypes.LargeString}), `field "ls": type large_utf8 is not supported`},
		{"no type", one(Field{Name: "x"}), `field "x": no Type`},
		{"no name", one(Field{Type: i64}), `field #0 has no name`},
		{"duplicate", Config{Fields: []Field{{Name: "a", Type: i64}, {Name: "a", Type: i64}}}, `fields #0 and #1 are both named "a"`},
		{"min > max", one(Field{Name: "k", Type: i64, Min: 5, Max: 1}), `field "k": Min 5 > Max 1`},
		{"null rate > 1", one(Field{Name: "k", Type: i64, NullRate: 1.5}), `field "k": NullRate 1.5 is not in [0, 1]`},
		{"null rate < 0", one(Field{Name: "k", Type: i64, NullRate: -0.1}), `field "k": NullRate -0.1 is not in [0, 1]`},
		{"null rate NaN", one(Field{Name: "k", Type: i64, NullRate: math.NaN()}), `field "k": NullRate NaN`},
		{"bad kind", one(Field{Name: "k", Type: i64, Kind: 7}), `field "k": Kind Kind(7)`},
		{"int8 range", one(Field{Name: "k", Type: arrow.PrimitiveTypes.Int8, Max: 200}), `field "k": Max 200 is not a whole number in the range of int8`},
		{"uint negative", one(Field{Name: "k", Type: arrow.PrimitiveTypes.Uint32, Min: -1, Max: 3}), `field "k": Min -1 is not a whole number in the range of uint32`},
		{"int fraction", one(Field{Name: "k", Type: i64, Min: 1.5, Max: 3}), `field "k": Min 1.5 is not a whole number`},
		{"infinite", one(Field{Name: "k", Type: arrow.PrimitiveTypes.Float64, Max: math.Inf(1)}), `field "k": Min 0 and Max +Inf must be finite`},
		{"float32 range", one(Field{Name: "k", Type: arrow.PrimitiveTypes.Float32, Max: 1e39}), `field "k": Min 0 or Max 1e+39 is beyond the range of float32`},
		{"float width", one(Field{Name: "k", Type: arrow.PrimitiveTypes.Float64, Min: -math.MaxFloat64, Max: math.MaxFloat64}), `field "k": Max - Min overflows`},
		{"values on int", one(Field{Name: "k", Type: i64, Values: []string{"a"}}), `field "k": Values apply only to string fields`},
		{"length on int", one(Field{Name: "k", Type: i64, Length: 3}), `field "k": Length applies only to string fields`},
		{"negative length", one(Field{Name: "s", Type: arrow.BinaryTypes.String, Length: -1}), `field "s": Length -1 is negative`},
		{"length with values", one(Field{Name: "s", Type: arrow.BinaryTypes.String, Length: 3, Values: []string{"a"}}), `field "s": Length does not apply when Values is set`},
		{"string min", one(Field{Name: "s", Type: arrow.BinaryTypes.String, Max: 3}), `field "s": Min and Max do not apply to Random strings`},
		{"decimals on int", one(Field{Name: "k", Type: i64, Decimals: 2}), `field "k": Decimals applies only to Random float fields`},
		{"decimals too many", one(Field{Name: "p", Type: arrow.PrimitiveTypes.Float64, Decimals: 16}), `field "p": Decimals 16 is not in [0, 15]`},
		{"decimals empty", one(Field{Name: "p", Type: arrow.PrimitiveTypes.Float64, Min: 0.001, Max: 0.002, Decimals: 2}), `field "p": no multiple of 10^-2 in [0.001, 0.002)`},
		{"sequence max", one(Field{Name: "k", Type: i64, Kind: Sequence, Max: 10}), `field "k": Max does not apply to a Sequence`},
		{"bool sequence", one(Field{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Kind: Sequence}), `field "b": bool fields are Random`},
		{"event time missing", Config{Fields: []Field{{Name: "k", Type: i64}}, EventTime: EventTimeConfig{Column: "ts"}}, `EventTime.Column "ts" is not one of the fields`},
		{"default event time renamed", Config{EventTime: EventTimeConfig{Column: "when"}}, `EventTime.Column "when" is not one of the fields`},
		{"event time not timestamp", withET(Field{Name: "k", Type: i64}), `EventTime.Column "k" has type int64; it must be a timestamp`},
		{"event time nulls", withET(Field{Name: "t", Type: arrow.FixedWidthTypes.Timestamp_ms, NullRate: 0.1}), `field "t" is the event-time column`},
		{"event time range", withET(Field{Name: "t", Type: arrow.FixedWidthTypes.Timestamp_ms, Max: 10}), `field "t" is the event-time column`},
		{"rows", Config{Rows: -1}, `Rows is -1`},
		{"rate", Config{RowsPerSecond: -5}, `RowsPerSecond is -5`},
		{"rate NaN", Config{RowsPerSecond: math.NaN()}, `RowsPerSecond is NaN`},
		{"batch size", Config{BatchSize: -1}, `BatchSize is -1`},
		{"splits", Config{Splits: -2}, `Splits is -2`},
		{"interval", Config{EventTime: EventTimeConfig{Interval: -time.Second}}, `EventTime.Interval is -1s`},
		{"out of orderness", Config{EventTime: EventTimeConfig{MaxOutOfOrderness: -time.Second}}, `EventTime.MaxOutOfOrderness is -1s`},
		{"start", Config{EventTime: EventTimeConfig{Start: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}}, `EventTime.Start 3000-01-01 00:00:00 +0000 UTC is out of range`},
		{"time overflow", Config{Rows: 1 << 40, EventTime: EventTimeConfig{Interval: time.Hour}}, `EventTime: row 1099511627775's time Start + 1099511627775*1h0m0s overflows`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil {
				t.Fatalf("New succeeded; want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q\ndoes not contain %q", err, tc.want)
			}
		})
	}
}

// TestConfigEdges checks valid corner cases against their definitions.
func TestConfigEdges(t *testing.T) {
	src := mustNew(t, Config{
		Fields: []Field{
			{Name: "allnull", Type: arrow.PrimitiveTypes.Int32, NullRate: 1},
			{Name: "i64full", Type: arrow.PrimitiveTypes.Int64, Min: -0x1p63, Max: 0x1p63 - 1024},
			{Name: "u64hi", Type: arrow.PrimitiveTypes.Uint64, Min: 0x1p63, Max: 0x1p63 + 2048},
			{Name: "i8all", Type: arrow.PrimitiveTypes.Int8, Min: -128, Max: 127},
			{Name: "wrap", Type: arrow.PrimitiveTypes.Uint8, Kind: Sequence, Min: 250},
			{Name: "const", Type: arrow.PrimitiveTypes.Int16, Min: -7, Max: -7},
			{Name: "long", Type: arrow.BinaryTypes.String, Length: 40},
		},
	})
	seenI8 := map[int8]bool{}
	for r := range int64(20_000) {
		row := src.Row(r)
		if row[0] != nil {
			t.Fatalf("row %d: NullRate 1 gave %v", r, row[0])
		}
		if v := row[2].(uint64); v < 1<<63 || v > 1<<63+2048 {
			t.Fatalf("row %d: u64hi %d", r, v)
		}
		seenI8[row[3].(int8)] = true
		if row[4].(uint8) != uint8(250+r) {
			t.Fatalf("row %d: wrap %d, want %d", r, row[4], uint8(250+r))
		}
		if row[5].(int16) != -7 {
			t.Fatalf("row %d: const %d", r, row[5])
		}
		if s := row[6].(string); len(s) != 40 || strings.Trim(s, alphabet) != "" {
			t.Fatalf("row %d: long %q", r, s)
		}
	}
	if len(seenI8) != 256 {
		t.Fatalf("int8 over [-128, 127] took %d distinct values", len(seenI8))
	}
}
