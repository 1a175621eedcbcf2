package format

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/hamba/avro/v2"
	"github.com/weirflow/weir/internal/testutil"
)

// The Avro decoder is checked against hamba/avro, an independent
// implementation: hamba marshals random generic values, weir decodes the
// bytes, and the rows must equal hamba's own unmarshalling of them.

// hambaName is the name hamba/avro gives a union branch.
func hambaName(w avro.Schema) string {
	w = deref(w)
	if n, ok := w.(avro.NamedSchema); ok {
		return n.FullName()
	}
	name := string(w.Type())
	if l, _ := avroLogical(w); l != "" && l != "timestamp-nanos" && l != "local-timestamp-nanos" {
		name += "." + l
	}
	return name
}

func nonNull(u *avro.UnionSchema) avro.Schema {
	for _, t := range u.Types() {
		if t.Type() != avro.Null {
			return t
		}
	}
	return nil
}

// hambaValue generates a random value of the Avro type w that fits the
// Arrow type dt, in hamba's generic form.
func hambaValue(rng *rand.Rand, w avro.Schema, dt arrow.DataType) any {
	w = deref(w)
	if u, ok := w.(*avro.UnionSchema); ok {
		if rng.IntN(5) == 0 {
			return nil
		}
		b := nonNull(u)
		return map[string]any{hambaName(b): hambaValue(rng, b, dt)}
	}
	logical, _ := avroLogical(w)
	switch dt.ID() {
	case arrow.BOOL:
		return rng.IntN(2) == 0
	case arrow.INT8:
		return int(int8(randomInt(rng, 8)))
	case arrow.INT16:
		return int(int16(randomInt(rng, 16)))
	case arrow.INT32:
		return int(int32(randomInt(rng, 32)))
	case arrow.UINT8:
		return int(uint8(randomInt(rng, 8)))
	case arrow.UINT16:
		return int(uint16(randomInt(rng, 16)))
	case arrow.INT64:
		return randomInt(rng, 64)
	case arrow.UINT32:
		return int64(uint32(randomInt(rng, 32)))
	case arrow.UINT64:
		return randomInt(rng, 64) & math.MaxInt64
	case arrow.FLOAT32:
		return float32(randomFloat(rng))
	case arrow.FLOAT64:
		return randomFloat(rng)
	case arrow.STRING, arrow.LARGE_STRING:
		return randomString(rng)
	case arrow.BINARY, arrow.LARGE_BINARY:
		return randomBytes(rng, rng.IntN(10))
	case arrow.FIXED_SIZE_BINARY:
		n := dt.(*arrow.FixedSizeBinaryType).ByteWidth
		a := reflect.New(reflect.ArrayOf(n, reflect.TypeFor[byte]())).Elem()
		reflect.Copy(a, reflect.ValueOf(randomBytes(rng, n)))
		return a.Interface()
	case arrow.DECIMAL128:
		t := dt.(*arrow.Decimal128Type)
		unscaled := randomDecimal(rng, t.Precision).BigInt()
		return new(big.Rat).SetFrac(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Scale)), nil))
	case arrow.TIMESTAMP:
		span := int64(200 * 365 * 86400)
		switch logical {
		case "timestamp-millis", "local-timestamp-millis":
			ms := rng.Int64N(2*span*1e3) - span*1e3
			if dt.(*arrow.TimestampType).Unit == arrow.Second {
				ms -= ms % 1000
			}
			return time.UnixMilli(ms).UTC()
		case "timestamp-micros", "local-timestamp-micros":
			return time.UnixMicro(rng.Int64N(2*span*1e6) - span*1e6).UTC()
		}
		return int64(rng.Uint64()) // nanos: a long for hamba
	case arrow.DATE32:
		return time.Unix((rng.Int64N(80000)-40000)*86400, 0).UTC()
	case arrow.TIME32:
		ms := rng.Int64N(86400e3)
		if dt.(*arrow.Time32Type).Unit == arrow.Second {
			ms -= ms % 1000
		}
		return time.Duration(ms) * time.Millisecond
	case arrow.TIME64:
		return time.Duration(rng.Int64N(86400e6)) * time.Microsecond
	case arrow.STRUCT:
		rec := w.(*avro.RecordSchema)
		m := map[string]any{}
		for i, f := range dt.(*arrow.StructType).Fields() {
			m[f.Name] = hambaValue(rng, rec.Fields()[i].Type(), f.Type)
		}
		return m
	case arrow.LIST:
		items := w.(*avro.ArraySchema).Items()
		out := []any{}
		for range rng.IntN(4) {
			out = append(out, hambaValue(rng, items, dt.(*arrow.ListType).Elem()))
		}
		return out
	case arrow.MAP:
		values := w.(*avro.MapSchema).Values()
		out := map[string]any{}
		for range rng.IntN(4) {
			out[randomString(rng)] = hambaValue(rng, values, dt.(*arrow.MapType).ItemType())
		}
		return out
	}
	panic(dt)
}

// fromHamba converts a value hamba unmarshalled into weir's row form.
func fromHamba(v any, w avro.Schema, dt arrow.DataType) any {
	w = deref(w)
	if u, ok := w.(*avro.UnionSchema); ok {
		if v == nil {
			return nil
		}
		b := nonNull(u)
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			if inner, ok := m[hambaName(b)]; ok {
				v = inner
			}
		}
		w = deref(b)
	}
	logical, _ := avroLogical(w)
	switch dt.ID() {
	case arrow.BOOL:
		return v.(bool)
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		return reflect.ValueOf(v).Int()
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return uint64(reflect.ValueOf(v).Int())
	case arrow.FLOAT32, arrow.FLOAT64:
		return floatValue(reflect.ValueOf(v).Float())
	case arrow.STRING, arrow.LARGE_STRING:
		return v.(string)
	case arrow.BINARY, arrow.LARGE_BINARY:
		return string(v.([]byte))
	case arrow.FIXED_SIZE_BINARY:
		a := reflect.ValueOf(v)
		b := make([]byte, a.Len())
		reflect.Copy(reflect.ValueOf(b), a)
		return string(b)
	case arrow.DECIMAL128:
		r := new(big.Rat).Set(v.(*big.Rat))
		r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(dt.(*arrow.Decimal128Type).Scale)), nil)))
		if !r.IsInt() {
			panic("fractional decimal")
		}
		return r.Num().String()
	case arrow.TIMESTAMP:
		if logical == "timestamp-nanos" || logical == "local-timestamp-nanos" {
			return v.(int64)
		}
		tm := v.(time.Time)
		per := unitPerSecond(dt.(*arrow.TimestampType).Unit)
		n := new(big.Int).Mul(big.NewInt(tm.Unix()), big.NewInt(per))
		return n.Add(n, big.NewInt(int64(tm.Nanosecond())/(1e9/per))).Int64()
	case arrow.DATE32:
		return v.(time.Time).Unix() / 86400
	case arrow.TIME32, arrow.TIME64:
		return int64(v.(time.Duration)) / (1e9 / unitPerSecond(timeUnit(dt)))
	case arrow.STRUCT:
		rec := w.(*avro.RecordSchema)
		m := v.(map[string]any)
		out := make([]any, len(rec.Fields()))
		for i, f := range dt.(*arrow.StructType).Fields() {
			out[i] = fromHamba(m[f.Name], rec.Fields()[i].Type(), f.Type)
		}
		return out
	case arrow.LIST:
		items := w.(*avro.ArraySchema).Items()
		out := []any{}
		for _, e := range v.([]any) {
			out = append(out, fromHamba(e, items, dt.(*arrow.ListType).Elem()))
		}
		return out
	case arrow.MAP:
		values := w.(*avro.MapSchema).Values()
		out := []any{}
		for k, e := range v.(map[string]any) {
			out = append(out, [2]any{k, fromHamba(e, values, dt.(*arrow.MapType).ItemType())})
		}
		return sortPairs(out)
	}
	panic(dt)
}

func TestAvroDecodeHambaOracle(t *testing.T) {
	for seed := range 150 {
		rng := rand.New(rand.NewPCG(uint64(seed), 13))
		schema := randomSchema(rng, avroTypes)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			text, err := AvroSchema(schema)
			if err != nil {
				t.Fatal(err)
			}
			w := avro.MustParse(text)
			rec := w.(*avro.RecordSchema)
			mem := testutil.CheckedAllocator(t)
			dec := mustDecoder(t, Config{Name: "avro", Schema: schema})
			var values [][]byte
			var want [][]any
			for range 30 {
				v := map[string]any{}
				for i, f := range schema.Fields() {
					v[f.Name] = hambaValue(rng, rec.Fields()[i].Type(), f.Type)
				}
				b, err := avro.Marshal(w, v)
				if err != nil {
					t.Fatalf("hamba marshal: %v", err)
				}
				var back map[string]any
				if err := avro.Unmarshal(w, b, &back); err != nil {
					t.Fatalf("hamba unmarshal: %v", err)
				}
				row := make([]any, len(schema.Fields()))
				for i, f := range schema.Fields() {
					row[i] = fromHamba(back[f.Name], rec.Fields()[i].Type(), f.Type)
				}
				values = append(values, b)
				want = append(want, row)
			}
			got := decodeAll(t, dec, mem, values)
			for _, row := range got {
				for j, f := range schema.Fields() {
					row[j] = normalizeMaps(row[j], f.Type)
				}
			}
			diffRows(t, want, got)
		})
	}
}

// TestAvroEncodeHambaOracle decodes weir's Avro with hamba/avro.
func TestAvroEncodeHambaOracle(t *testing.T) {
	for seed := range 100 {
		rng := rand.New(rand.NewPCG(uint64(seed), 17))
		schema := randomSchema(rng, avroTypes)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			text, err := AvroSchema(schema)
			if err != nil {
				t.Fatal(err)
			}
			w := avro.MustParse(text)
			rec := w.(*avro.RecordSchema)
			mem := testutil.CheckedAllocator(t)
			batch := randomBatch(rng, mem, schema, avroTypes, 30)
			defer batch.Release()
			values := encodeAll(t, mustEncoder(t, Config{Name: "avro", Schema: schema}), batch)
			want := rowsOf(batch)
			var got [][]any
			for _, b := range values {
				var back map[string]any
				if err := avro.Unmarshal(w, b, &back); err != nil {
					t.Fatalf("hamba unmarshal: %v", err)
				}
				row := make([]any, len(schema.Fields()))
				for i, f := range schema.Fields() {
					row[i] = fromHamba(back[f.Name], rec.Fields()[i].Type(), f.Type)
				}
				got = append(got, row)
			}
			for _, row := range want {
				for j, f := range schema.Fields() {
					row[j] = normalizeMaps(row[j], f.Type)
				}
			}
			diffRows(t, want, got)
		})
	}
}
