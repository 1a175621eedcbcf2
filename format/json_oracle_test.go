package format

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/internal/testutil"
)

// The JSON decoder is checked against a reference: encoding/json parses
// the same bytes into generic values, which a plain row-at-a-time
// conversion turns into the expected row, or into a rejection.

// refRow converts a JSON document to the expected row of schema.
func refRow(doc []byte, schema *arrow.Schema) ([]any, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err == nil {
		return nil, errors.New("trailing data")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not an object")
	}
	return refFields(obj, schema.Fields())
}

func refFields(obj map[string]any, fields []arrow.Field) ([]any, error) {
	row := make([]any, len(fields))
	for i, f := range fields {
		v, ok := obj[f.Name]
		if !ok || v == nil {
			if !f.Nullable {
				return nil, fmt.Errorf("%s: missing or null", f.Name)
			}
			continue
		}
		x, err := refValue(v, f.Type)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		row[i] = x
	}
	return row, nil
}

func refNumberText(v any) (string, bool) {
	switch x := v.(type) {
	case json.Number:
		return string(x), true
	case string:
		return x, false
	}
	return "", false
}

func refValue(v any, dt arrow.DataType) (any, error) {
	bad := fmt.Errorf("%T for %s", v, dt)
	switch dt.ID() {
	case arrow.BOOL:
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			switch x {
			case "true", "TRUE", "True":
				return true, nil
			case "false", "FALSE", "False":
				return false, nil
			}
		}
		return nil, bad
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		s, isNum := refNumberText(v)
		if _, isStr := v.(string); !isNum && !isStr {
			return nil, bad
		}
		if isNum && strings.ContainsAny(s, ".eE") {
			return nil, errors.New("not an integer")
		}
		n, ok := new(big.Int).SetString(s, 10)
		if !ok || s == "" || strings.ContainsAny(s, "_") {
			return nil, errors.New("not an integer")
		}
		bits := dt.(arrow.FixedWidthDataType).BitWidth()
		signed := dt.ID() == arrow.INT8 || dt.ID() == arrow.INT16 || dt.ID() == arrow.INT32 || dt.ID() == arrow.INT64
		var lo, hi *big.Int
		if signed {
			lo = new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), uint(bits-1)))
			hi = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(bits-1)), big.NewInt(1))
		} else {
			lo = big.NewInt(0)
			hi = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(bits)), big.NewInt(1))
		}
		if n.Cmp(lo) < 0 || n.Cmp(hi) > 0 {
			return nil, errors.New("out of range")
		}
		if signed {
			return n.Int64(), nil
		}
		return n.Uint64(), nil
	case arrow.FLOAT32, arrow.FLOAT64:
		s, isNum := refNumberText(v)
		if _, isStr := v.(string); !isNum && !isStr {
			return nil, bad
		}
		bits := 64
		if dt.ID() == arrow.FLOAT32 {
			bits = 32
		}
		f, err := strconv.ParseFloat(s, bits)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, err
		}
		return floatValue(f), nil
	case arrow.DECIMAL128:
		t := dt.(*arrow.Decimal128Type)
		s, isNum := refNumberText(v)
		if _, isStr := v.(string); !isNum && !isStr {
			return nil, bad
		}
		if s == "" || strings.ContainsAny(s, "/_xXpP") {
			return nil, errors.New("not a decimal")
		}
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			return nil, errors.New("not a decimal")
		}
		scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(t.Scale))), nil))
		if t.Scale >= 0 {
			r.Mul(r, scale)
		} else {
			r.Quo(r, scale)
		}
		// Round half away from zero.
		num, den := new(big.Int).Abs(r.Num()), r.Denom()
		q, m := new(big.Int).QuoRem(num, den, new(big.Int))
		if new(big.Int).Mul(m, big.NewInt(2)).Cmp(den) >= 0 {
			q.Add(q, big.NewInt(1))
		}
		if r.Sign() < 0 {
			q.Neg(q)
		}
		limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Precision)), nil)
		if new(big.Int).Abs(q).Cmp(limit) >= 0 {
			return nil, errors.New("out of range")
		}
		return q.String(), nil
	case arrow.STRING, arrow.LARGE_STRING:
		switch x := v.(type) {
		case string:
			return x, nil
		case json.Number:
			return string(x), nil
		case bool:
			return strconv.FormatBool(x), nil
		}
		// An object or array is taken as its text, which the generator
		// writes compactly, as json.Marshal does.
		b, err := json.Marshal(v)
		return string(b), err
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY:
		s, ok := v.(string)
		if !ok {
			return nil, bad
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, err
		}
		if ft, ok := dt.(*arrow.FixedSizeBinaryType); ok && len(b) != ft.ByteWidth {
			return nil, errors.New("wrong size")
		}
		return string(b), nil
	case arrow.TIMESTAMP:
		unit := dt.(*arrow.TimestampType).Unit
		switch x := v.(type) {
		case json.Number:
			n, err := strconv.ParseInt(string(x), 10, 64)
			return n, err
		case string:
			tm, err := refParseTime(x, "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07:00",
				"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999")
			if err != nil {
				return nil, err
			}
			secs, nanos := new(big.Int).SetInt64(tm.Unix()), tm.Nanosecond()
			per := unitPerSecond(unit)
			n := new(big.Int).Mul(secs, big.NewInt(per))
			n.Add(n, big.NewInt(int64(nanos)/(1e9/per)))
			if !n.IsInt64() {
				return nil, errors.New("out of range")
			}
			return n.Int64(), nil
		}
		return nil, bad
	case arrow.DATE32:
		switch x := v.(type) {
		case json.Number:
			n, err := strconv.ParseInt(string(x), 10, 32)
			return n, err
		case string:
			tm, err := refParseTime(x, "2006-01-02")
			if err != nil {
				return nil, err
			}
			return tm.Unix() / 86400, nil
		}
		return nil, bad
	case arrow.TIME32, arrow.TIME64:
		per := unitPerSecond(timeUnit(dt))
		switch x := v.(type) {
		case json.Number:
			n, err := strconv.ParseInt(string(x), 10, 64)
			if err != nil || n < 0 || n >= 86400*per {
				return nil, errors.New("bad time")
			}
			return n, nil
		case string:
			tm, err := refParseTime(x, "15:04:05.999999999", "15:04")
			if err != nil {
				return nil, err
			}
			nanos := int64(tm.Hour()*3600+tm.Minute()*60+tm.Second())*1e9 + int64(tm.Nanosecond())
			return nanos / (1e9 / per), nil
		}
		return nil, bad
	case arrow.STRUCT:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, bad
		}
		row, err := refFields(obj, dt.(*arrow.StructType).Fields())
		if err != nil {
			return nil, err
		}
		return row, nil
	case arrow.LIST:
		arr, ok := v.([]any)
		if !ok {
			return nil, bad
		}
		ef := dt.(*arrow.ListType).ElemField()
		out := []any{}
		for _, e := range arr {
			if e == nil {
				if !ef.Nullable {
					return nil, errors.New("null element")
				}
				out = append(out, nil)
				continue
			}
			x, err := refValue(e, ef.Type)
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	case arrow.MAP:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, bad
		}
		item := dt.(*arrow.MapType).ItemField()
		out := []any{}
		for k, e := range obj {
			if e == nil {
				if !item.Nullable {
					return nil, errors.New("null item")
				}
				out = append(out, [2]any{k, nil})
				continue
			}
			x, err := refValue(e, item.Type)
			if err != nil {
				return nil, err
			}
			out = append(out, [2]any{k, x})
		}
		return sortPairs(out), nil
	}
	return nil, fmt.Errorf("refValue: %s", dt)
}

func abs(x int32) int32 {
	if x < 0 {
		return -x
	}
	return x
}

func timeUnit(dt arrow.DataType) arrow.TimeUnit {
	if t, ok := dt.(*arrow.Time32Type); ok {
		return t.Unit
	}
	return dt.(*arrow.Time64Type).Unit
}

func refParseTime(s string, layouts ...string) (time.Time, error) {
	var err error
	for _, l := range layouts {
		var tm time.Time
		if tm, err = time.Parse(l, s); err == nil {
			return tm, nil
		}
	}
	return time.Time{}, err
}

func sortPairs(pairs []any) []any {
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].([2]any)[0].(string) < pairs[j].([2]any)[0].(string) })
	return pairs
}

// normalizeMaps sorts map entries (encoding/json loses their order) in a
// value of type dt.
func normalizeMaps(v any, dt arrow.DataType) any {
	if v == nil {
		return nil
	}
	switch dt.ID() {
	case arrow.STRUCT:
		row := v.([]any)
		for i, f := range dt.(*arrow.StructType).Fields() {
			row[i] = normalizeMaps(row[i], f.Type)
		}
	case arrow.LIST:
		for i, e := range v.([]any) {
			v.([]any)[i] = normalizeMaps(e, dt.(*arrow.ListType).Elem())
		}
	case arrow.MAP:
		pairs := v.([]any)
		for i, p := range pairs {
			kv := p.([2]any)
			pairs[i] = [2]any{kv[0], normalizeMaps(kv[1], dt.(*arrow.MapType).ItemType())}
		}
		return sortPairs(pairs)
	}
	return v
}

// jsonGen writes random JSON documents for a schema: mostly valid, with
// shuffled and unknown fields, escapes, numbers in strings, and now and
// then a value of the wrong type or out of range.
type jsonGen struct {
	rng *rand.Rand
	sb  strings.Builder
	bad int // per mille of values made wrong
}

func (g *jsonGen) ws() {
	if g.rng.IntN(4) == 0 {
		g.sb.WriteString([]string{" ", "\n", "\t", "\r\n  "}[g.rng.IntN(4)])
	}
}

// str writes s as a JSON string, escaping at random.
func (g *jsonGen) str(s string) {
	g.sb.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			g.sb.WriteByte('\\')
			g.sb.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&g.sb, "\\u%04x", r)
		case g.rng.IntN(8) == 0 && r < 0x10000:
			fmt.Fprintf(&g.sb, "\\u%04X", r)
		case g.rng.IntN(8) == 0 && r >= 0x10000:
			r -= 0x10000
			fmt.Fprintf(&g.sb, "\\u%04x\\u%04x", 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		case r == '/' && g.rng.IntN(2) == 0:
			g.sb.WriteString(`\/`)
		default:
			g.sb.WriteRune(r)
		}
	}
	g.sb.WriteByte('"')
}

func (g *jsonGen) wrong() bool { return g.rng.IntN(1000) < g.bad }

func (g *jsonGen) anyScalar() {
	switch g.rng.IntN(5) {
	case 0:
		g.sb.WriteString("true")
	case 1:
		g.sb.WriteString("12.5e-3")
	case 2:
		g.str("x")
	case 3:
		g.sb.WriteString("[1,{\"a\":null}]")
	default:
		g.sb.WriteString("{}")
	}
}

func (g *jsonGen) object(fields []arrow.Field) {
	order := g.rng.Perm(len(fields))
	if g.rng.IntN(2) == 0 {
		for i := range order {
			order[i] = i
		}
	}
	g.sb.WriteByte('{')
	first := true
	sep := func() {
		if !first {
			g.sb.WriteByte(',')
		}
		first = false
		g.ws()
	}
	for _, i := range order {
		f := fields[i]
		if g.rng.IntN(10) == 0 {
			sep()
			g.str("unknown_" + strconv.Itoa(g.rng.IntN(100)))
			g.sb.WriteByte(':')
			g.anyScalar()
		}
		if f.Nullable && g.rng.IntN(8) == 0 {
			continue // missing
		}
		if !f.Nullable && g.wrong() {
			continue // missing, and not nullable
		}
		sep()
		g.str(f.Name)
		g.ws()
		g.sb.WriteByte(':')
		g.ws()
		g.value(f.Type, f.Nullable)
	}
	g.ws()
	g.sb.WriteByte('}')
}

func (g *jsonGen) value(dt arrow.DataType, nullable bool) {
	if nullable && g.rng.IntN(6) == 0 || g.wrong() && g.rng.IntN(3) == 0 {
		g.sb.WriteString("null")
		return
	}
	if g.wrong() {
		g.anyScalar()
		return
	}
	rng := g.rng
	switch dt.ID() {
	case arrow.BOOL:
		if rng.IntN(5) == 0 {
			g.str([]string{"true", "false", "TRUE", "yes"}[rng.IntN(4)])
		} else {
			g.sb.WriteString(strconv.FormatBool(rng.IntN(2) == 0))
		}
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		bits := dt.(arrow.FixedWidthDataType).BitWidth()
		wrong := g.wrong()
		if wrong && bits < 64 {
			bits++ // may be out of range
		}
		var s string
		switch dt.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
			s = strconv.FormatInt(randomInt(rng, bits), 10)
		default:
			u := uint64(randomInt(rng, bits))
			if bits < 64 {
				u &= 1<<bits - 1
			}
			s = strconv.FormatUint(u, 10)
		}
		if wrong && bits == 64 {
			s += "0"
		}
		switch {
		case g.wrong():
			g.sb.WriteString(s + ".5")
		case rng.IntN(6) == 0:
			g.str(s)
		default:
			g.sb.WriteString(s)
		}
	case arrow.FLOAT32, arrow.FLOAT64:
		f := randomFloat(rng)
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			g.str([]string{"NaN", "Infinity", "-Infinity"}[rng.IntN(3)])
			return
		}
		if rng.IntN(4) == 0 {
			s = strconv.FormatFloat(f, 'e', rng.IntN(20), 64)
			s = strings.Replace(s, "e+", []string{"e+", "E", "e"}[rng.IntN(3)], 1)
		}
		if rng.IntN(6) == 0 {
			g.str(s)
		} else {
			g.sb.WriteString(s)
		}
	case arrow.DECIMAL128:
		t := dt.(*arrow.Decimal128Type)
		digits := randomDecimal(rng, t.Precision).BigInt().String()
		s := digits
		if t.Scale > 0 && rng.IntN(3) != 0 {
			neg := strings.HasPrefix(s, "-")
			s = strings.TrimPrefix(s, "-")
			for len(s) <= int(t.Scale) {
				s = "0" + s
			}
			s = s[:len(s)-int(t.Scale)] + "." + s[len(s)-int(t.Scale):]
			if neg {
				s = "-" + s
			}
		}
		switch rng.IntN(5) {
		case 0:
			s += "5" // one digit more than the scale: rounds
			if !strings.Contains(s, ".") {
				s = strings.TrimSuffix(s, "5") + ".5"
			}
		case 1:
			s += "e" + strconv.Itoa(rng.IntN(5)-2)
		}
		if rng.IntN(5) == 0 {
			g.str(s)
		} else {
			g.sb.WriteString(s)
		}
	case arrow.STRING, arrow.LARGE_STRING:
		switch rng.IntN(10) {
		case 0:
			g.sb.WriteString(strconv.Itoa(rng.IntN(1000) - 500))
		case 1:
			g.sb.WriteString("true")
		default:
			g.str(randomString(rng))
		}
	case arrow.BINARY, arrow.LARGE_BINARY:
		g.str(base64.StdEncoding.EncodeToString(randomBytes(rng, rng.IntN(12))))
	case arrow.FIXED_SIZE_BINARY:
		n := dt.(*arrow.FixedSizeBinaryType).ByteWidth
		if g.wrong() {
			n++
		}
		g.str(base64.StdEncoding.EncodeToString(randomBytes(rng, n)))
	case arrow.TIMESTAMP:
		if rng.IntN(5) == 0 {
			g.sb.WriteString(strconv.FormatInt(rng.Int64N(1<<40)-1<<39, 10))
			return
		}
		tm := time.Unix(rng.Int64N(300*365*86400)-150*365*86400, rng.Int64N(1e9)).UTC()
		layout := []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05", "2006-01-02T15:04:05.000-07:00"}[rng.IntN(4)]
		if rng.IntN(3) == 0 {
			tm = tm.In(time.FixedZone("", (rng.IntN(48)-24)*1800))
		}
		g.str(tm.Format(layout))
	case arrow.DATE32:
		if rng.IntN(5) == 0 {
			g.sb.WriteString(strconv.Itoa(rng.IntN(100000) - 50000))
			return
		}
		g.str(time.Unix(rng.Int64N(300*365*86400)-150*365*86400, 0).UTC().Format("2006-01-02"))
	case arrow.TIME32, arrow.TIME64:
		per := unitPerSecond(timeUnit(dt))
		if rng.IntN(5) == 0 {
			g.sb.WriteString(strconv.FormatInt(rng.Int64N(86400*per), 10))
			return
		}
		tm := time.Unix(rng.Int64N(86400), rng.Int64N(1e9)).UTC()
		g.str(tm.Format([]string{"15:04:05.999999999", "15:04:05", "15:04"}[rng.IntN(3)]))
	case arrow.STRUCT:
		g.object(dt.(*arrow.StructType).Fields())
	case arrow.LIST:
		ef := dt.(*arrow.ListType).ElemField()
		g.sb.WriteByte('[')
		for i := range rng.IntN(4) {
			if i > 0 {
				g.sb.WriteByte(',')
			}
			g.ws()
			g.value(ef.Type, ef.Nullable)
		}
		g.sb.WriteByte(']')
	case arrow.MAP:
		item := dt.(*arrow.MapType).ItemField()
		g.sb.WriteByte('{')
		keys := rng.Perm(5)[:rng.IntN(4)]
		for i, k := range keys {
			if i > 0 {
				g.sb.WriteByte(',')
			}
			g.str("k" + strconv.Itoa(k) + randomString(rng))
			g.sb.WriteByte(':')
			g.value(item.Type, item.Nullable)
		}
		g.sb.WriteByte('}')
	default:
		panic(dt)
	}
}

func TestJSONDecodeOracle(t *testing.T) {
	for seed := range 200 {
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		schema := randomSchema(rng, jsonTypes)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			mem := testutil.CheckedAllocator(t)
			dec := mustDecoder(t, Config{Name: "json", Schema: schema})
			b := dec.NewBuilder(mem)
			defer b.Release()
			g := &jsonGen{rng: rng, bad: 20}
			var want [][]any
			rejected := 0
			for range 50 {
				g.sb.Reset()
				g.ws()
				g.object(schema.Fields())
				g.ws()
				doc := []byte(g.sb.String())
				if rng.IntN(20) == 0 {
					doc = doc[:rng.IntN(len(doc))] // truncated
				}
				ref, refErr := refRow(doc, schema)
				before := b.Len()
				err := b.Append(doc)
				switch {
				case refErr == nil && err != nil:
					t.Fatalf("schema %s\n%s\nrejected: %v", schema, doc, err)
				case refErr != nil && err == nil:
					t.Fatalf("schema %s\n%s\naccepted; the reference says: %v", schema, doc, refErr)
				case err != nil:
					var re *RecordError
					if !errors.As(err, &re) || re.Format != "json" || re.Offset < 0 || re.Offset > len(doc) {
						t.Fatalf("%s: error %v, want a json RecordError with an offset in the value", doc, err)
					}
					if b.Len() != before {
						t.Fatalf("Len %d after a rejected record, want %d", b.Len(), before)
					}
					rejected++
				default:
					want = append(want, ref)
				}
			}
			rec := b.NewRecord()
			defer rec.Release()
			got := rowsOf(rec)
			for _, row := range got {
				for j, f := range schema.Fields() {
					row[j] = normalizeMaps(row[j], f.Type)
				}
			}
			diffRows(t, want, got)
		})
	}
}
