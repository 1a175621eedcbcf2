package optest

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
)

// FloatTolerance is the relative tolerance within which two float64 values
// are equal when rows are compared: |a-b| <= FloatTolerance * max(1, |a|,
// |b|). Below magnitude 1 it acts as an absolute tolerance, so that a float
// sum retracted back to zero (leaving 5e-17) still equals 0.
const FloatTolerance = 1e-9

// Value returns row i of arr as a plain Go value, as arrowflow.ValueAt
// converts it: nil for null, int64 for signed integers, uint64 for
// unsigned ones, float64, bool, string, []byte, time.Time (UTC) for
// timestamps and dates, and a decimal as a string with every digit of its
// scale. Tests and references that use it agree on the conventions.
func Value(arr arrow.Array, i int) any { return arrowflow.ValueAt(arr, i) }

// Change is one row of a changelog: its kind and its values (as Value
// converts them).
type Change struct {
	Kind   arrowflow.RowKind
	Values []any
}

// String formats the change as "+I[1 a]".
func (c Change) String() string { return c.Kind.String() + FormatRow(c.Values) }

// Changes returns the selected rows of b, in order, with their kinds. It
// does not release b.
func Changes(b arrowflow.Batch) []Change {
	n := b.NumRows()
	out := make([]Change, n)
	for k := range n {
		out[k] = Change{Kind: b.Kind(k), Values: b.RowValues(k)}
	}
	return out
}

// Materialize applies a retract changelog to an empty table: Insert and
// UpdateAfter add one copy of the row, UpdateBefore and Delete remove one
// equal row (all columns equal, floats within FloatTolerance). Removing a
// row that is not in the table is an error naming the row and its
// position. The table comes back in no particular order.
func Materialize(changes []Change) ([][]any, error) {
	var m Multiset
	for i, c := range changes {
		if err := m.Apply(c.Kind, c.Values); err != nil {
			return nil, fmt.Errorf("change %d: %w", i, err)
		}
	}
	return m.Rows(), nil
}

// Multiset is a table of rows with duplicates, as a changelog
// materializes into. Its zero value is empty and ready to use. Rows are
// normalized (Normalize) as they are added, so int and int64 compare
// equal.
type Multiset struct {
	// buckets groups rows by their exact non-float columns, so that a
	// removal scans only rows that can be equal.
	buckets map[string][][]any
	n       int
}

// Len is the number of rows held, duplicates counted.
func (m *Multiset) Len() int { return m.n }

// Add adds one copy of row.
func (m *Multiset) Add(row []any) {
	row = Normalize(row)
	if m.buckets == nil {
		m.buckets = make(map[string][][]any)
	}
	k := coarseKey(row)
	m.buckets[k] = append(m.buckets[k], row)
	m.n++
}

// Remove removes one row equal to row (see RowsEqual), reporting whether
// there was one.
func (m *Multiset) Remove(row []any) bool {
	row = Normalize(row)
	k := coarseKey(row)
	b := m.buckets[k]
	for i, r := range b {
		if RowsEqual(r, row) {
			b[i] = b[len(b)-1]
			b[len(b)-1] = nil
			b = b[:len(b)-1]
			if len(b) == 0 {
				delete(m.buckets, k)
			} else {
				m.buckets[k] = b
			}
			m.n--
			return true
		}
	}
	return false
}

// Apply applies one change: add for Insert and UpdateAfter, remove for
// UpdateBefore and Delete; removing a missing row is an error naming it.
func (m *Multiset) Apply(kind arrowflow.RowKind, row []any) error {
	if !kind.IsRetraction() {
		m.Add(row)
		return nil
	}
	if !m.Remove(row) {
		return fmt.Errorf("%s%s retracts a row that is not in the table", kind, FormatRow(row))
	}
	return nil
}

// Rows returns the rows held, sorted by their formatted form.
func (m *Multiset) Rows() [][]any {
	out := make([][]any, 0, m.n)
	for _, b := range m.buckets {
		out = append(out, b...)
	}
	SortRows(out)
	return out
}

// Clone returns an independent copy of m (rows are shared, they are never
// modified).
func (m *Multiset) Clone() *Multiset {
	c := &Multiset{n: m.n, buckets: make(map[string][][]any, len(m.buckets))}
	for k, b := range m.buckets {
		c.buckets[k] = append([][]any(nil), b...)
	}
	return c
}

// Diff compares two tables as multisets (RowsEqual) and describes the
// difference: the rows missing from got and the unexpected ones, at most
// 20 of each. It returns "" when they are equal.
func Diff(got, want [][]any) string {
	var g Multiset
	for _, r := range got {
		g.Add(r)
	}
	var missing [][]any
	for _, r := range want {
		if !g.Remove(r) {
			missing = append(missing, Normalize(r))
		}
	}
	extra := g.Rows()
	if len(missing) == 0 && len(extra) == 0 {
		return ""
	}
	SortRows(missing)
	var sb strings.Builder
	fmt.Fprintf(&sb, "got %d rows, want %d", len(got), len(want))
	list := func(what string, rows [][]any) {
		if len(rows) == 0 {
			return
		}
		fmt.Fprintf(&sb, "\n%s (%d):", what, len(rows))
		for i, r := range rows {
			if i == 20 {
				fmt.Fprintf(&sb, "\n  ... %d more", len(rows)-20)
				break
			}
			sb.WriteString("\n  " + FormatRow(r))
		}
	}
	list("missing", missing)
	list("unexpected", extra)
	return sb.String()
}

// Normalize converts the Go values of a row to the conventions of Value:
// int, int8, int16 and int32 become int64, unsigned integers uint64,
// float32 float64, and times UTC. Other values are kept. It returns a new
// slice when anything changes.
func Normalize(row []any) []any {
	var out []any
	for i, v := range row {
		n := normalizeValue(v)
		if out == nil && changedByNormalize(v) {
			out = append(make([]any, 0, len(row)), row[:i]...)
		}
		if out != nil {
			out = append(out, n)
		}
	}
	if out == nil {
		return row
	}
	return out
}

// changedByNormalize reports whether normalizeValue may change v (decided
// by type, since values such as []byte are not comparable).
func changedByNormalize(v any) bool {
	switch v.(type) {
	case int, int8, int16, int32, uint, uint8, uint16, uint32, float32, time.Time:
		return true
	}
	return false
}

func normalizeValue(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case uint:
		return uint64(x)
	case uint8:
		return uint64(x)
	case uint16:
		return uint64(x)
	case uint32:
		return uint64(x)
	case float32:
		return float64(x)
	case time.Time:
		return x.UTC()
	}
	return v
}

// RowsEqual reports whether two normalized rows are equal column by
// column: floats within FloatTolerance (NaN equals NaN), times by instant,
// byte slices by content, everything else by ==.
func RowsEqual(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !ValuesEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

// ValuesEqual compares two normalized values as RowsEqual does.
func ValuesEqual(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		if !ok {
			return false
		}
		if math.IsNaN(x) || math.IsNaN(y) {
			return math.IsNaN(x) && math.IsNaN(y)
		}
		if math.IsInf(x, 0) || math.IsInf(y, 0) {
			return x == y
		}
		scale := math.Max(1, math.Max(math.Abs(x), math.Abs(y)))
		return math.Abs(x-y) <= FloatTolerance*scale
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	}
	switch b.(type) {
	case float64, time.Time, []byte:
		return false
	}
	return a == b
}

// coarseKey formats the columns that compare exactly; floats are only
// typed, so rows equal within the tolerance share a key.
func coarseKey(row []any) string {
	var sb strings.Builder
	for _, v := range row {
		switch x := v.(type) {
		case float64:
			sb.WriteString("f|")
		case time.Time:
			fmt.Fprintf(&sb, "t%d|", x.UnixNano())
		case nil:
			sb.WriteString("n|")
		default:
			fmt.Fprintf(&sb, "%T:%q|", v, fmt.Sprint(v))
		}
	}
	return sb.String()
}

// FormatRow formats a row as "[v1 v2 ...]" with strings quoted and nulls
// as NULL, for messages.
func FormatRow(row []any) string {
	parts := make([]string, len(row))
	for i, v := range row {
		switch x := v.(type) {
		case nil:
			parts[i] = "NULL"
		case string:
			parts[i] = fmt.Sprintf("%q", x)
		case time.Time:
			parts[i] = x.UTC().Format(time.RFC3339Nano)
		case float64:
			parts[i] = fmt.Sprintf("%.12g", x)
		default:
			parts[i] = fmt.Sprint(v)
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// SortRows sorts rows in place by their formatted form, for stable
// messages.
func SortRows(rows [][]any) {
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = FormatRow(r)
	}
	sort.Sort(byKey{rows, keys})
}

type byKey struct {
	rows [][]any
	keys []string
}

func (s byKey) Len() int           { return len(s.rows) }
func (s byKey) Less(i, j int) bool { return s.keys[i] < s.keys[j] }
func (s byKey) Swap(i, j int) {
	s.rows[i], s.rows[j] = s.rows[j], s.rows[i]
	s.keys[i], s.keys[j] = s.keys[j], s.keys[i]
}
