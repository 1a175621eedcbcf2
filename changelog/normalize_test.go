package changelog

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/optest"
)

// normalizeGen makes n upsert rows of rankTestSchema over keys keys in
// epochs epochs: values (+I or +U, a third of them repeating the key's
// current value exactly), tombstones (-D carrying only the key) and
// retractions with a full row (-U or -D whose other columns do not match
// anything: a removal is by key), also of keys never seen.
func normalizeGen(seed uint64, n, keys, epochs int) []optest.Row {
	rng := rand.New(rand.NewPCG(seed, 7))
	cur := map[int64][]any{}
	var rows []optest.Row
	for i := range n {
		e := i * epochs / n
		k := int64(rng.IntN(keys))
		switch r := rng.IntN(10); {
		case r < 2:
			rows = append(rows, optest.Row{Kind: arrowflow.Delete, Values: []any{k, nil, nil, nil, int64(i)}, Epoch: e})
			delete(cur, k)
		case r < 3:
			kind := arrowflow.UpdateBefore
			if rng.IntN(2) == 0 {
				kind = arrowflow.Delete
			}
			rows = append(rows, optest.Row{Kind: kind, Values: []any{k, int64(-1), "x", 0.5, int64(i)}, Epoch: e})
			delete(cur, k)
		default:
			v := []any{k, int64(rng.IntN(3)), fmt.Sprint("s", rng.IntN(3)), float64(rng.IntN(2)), int64(i)}
			if old, ok := cur[k]; ok && rng.IntN(3) == 0 {
				v = slices.Clone(old)
			}
			kind := arrowflow.UpdateAfter
			if rng.IntN(2) == 0 {
				kind = arrowflow.Insert
			}
			rows = append(rows, optest.Row{Kind: kind, Values: v, Epoch: e})
			cur[k] = v
		}
	}
	return rows
}

// normalizeReference is the table after the rows of epochs 0..epoch: each
// key's last value, keys whose last word is a removal absent.
func normalizeReference(rows []optest.Row, epoch int) [][]any {
	last := map[int64][]any{}
	for _, r := range optest.UpTo(rows, epoch) {
		k := r.Values[0].(int64)
		if r.Kind.IsRetraction() {
			delete(last, k)
		} else {
			last[k] = r.Values
		}
	}
	out := make([][]any, 0, len(last))
	for _, v := range last {
		out = append(out, v)
	}
	return out
}

func TestNormalizeAgainstReference(t *testing.T) {
	cfg := Normalize{Input: rankTestSchema, Key: []string{"k"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		n, keys, epochs int
		compact         int
	}{{300, 20, 4, 0}, {400, 300, 3, 0}, {200, 5, 5, 1}} {
		cfg := cfg
		cfg.compactMin = c.compact
		rows := normalizeGen(uint64(i), c.n, c.keys, c.epochs)
		t.Run(fmt.Sprintf("n=%d/keys=%d/compact=%d", c.n, c.keys, c.compact), func(t *testing.T) {
			optest.Run(t, optest.Case{
				Name:    "normalize",
				Factory: cfg.Factory(),
				Inputs:  []optest.Input{{Schema: rankTestSchema, KeyBy: []string{"k"}, Rows: rows}},
				Want:    func(e int) [][]any { return normalizeReference(rows, e) },
				Seed:    uint64(i),
			})
		})
	}
}

// TestNormalizeLarge runs enough changes through a few configurations
// that the row store compacts often and outputs split.
func TestNormalizeLarge(t *testing.T) {
	cfg := Normalize{Input: rankTestSchema, Key: []string{"k"}}
	rows := normalizeGen(11, 30000, 2000, 3)
	optest.Run(t, optest.Case{
		Name:    "normalize-large",
		Factory: cfg.Factory(),
		Inputs:  []optest.Input{{Schema: rankTestSchema, KeyBy: []string{"k"}, Rows: rows}},
		Want:    func(e int) [][]any { return normalizeReference(rows, e) },
		Configs: []optest.Config{{Parallelism: []int{1}, BatchSize: 1000}, {Parallelism: []int{2, 4}, BatchSize: 333, RandomSel: true}},
	})
}

// TestNormalizeEmits checks what one subtask emits: a first value is an
// insert, a new value an update pair, an equal value nothing, a tombstone
// the full old row as a delete, a tombstone of an absent key nothing
// (counted), and changes within an epoch fold.
func TestNormalizeEmits(t *testing.T) {
	h := newOpHarness(t, Normalize{Input: rankTestSchema, Key: []string{"k"}}.Factory(), nil)
	ins, upd, del := arrowflow.Insert, arrowflow.UpdateAfter, arrowflow.Delete
	a1 := []any{int64(1), int64(10), "a", 1.0, int64(1)}
	a2 := []any{int64(1), int64(11), "a", 1.0, int64(2)}
	b1 := []any{int64(2), int64(20), "b", 2.0, int64(3)}
	tomb := func(k int64) []any { return []any{k, nil, nil, nil, int64(0)} }
	if err := h.send([]arrowflow.RowKind{ins, upd, ins}, a1, a2, b1); err != nil {
		t.Fatal(err)
	}
	if len(h.out.changes) != 0 {
		t.Fatalf("emitted before the epoch closed: %v", h.out.changes)
	}
	h.flush()
	h.want(a2, b1)
	if got := changeKinds(h.out.changes); got != "+I +I" {
		t.Fatalf("first values: %s, want +I +I", got)
	}
	h.out.changes = nil
	// The same value again, a tombstone, a tombstone of a key never seen.
	if err := h.send([]arrowflow.RowKind{upd, del, del}, a2, tomb(2), tomb(3)); err != nil {
		t.Fatal(err)
	}
	h.flush()
	h.want(a2)
	if got := changeKinds(h.out.changes); got != "-D" {
		t.Fatalf("unchanged value and tombstones: %s, want -D", got)
	}
	if !optest.RowsEqual(h.out.changes[0].Values, b1) {
		t.Fatalf("the delete carries %v, want the full old row %v", h.out.changes[0].Values, b1)
	}
	h.out.changes = nil
	// Delete and re-insert within an epoch: one update pair.
	if err := h.send([]arrowflow.RowKind{del, ins}, tomb(1), a1); err != nil {
		t.Fatal(err)
	}
	h.flush()
	h.want(a1)
	if got := changeKinds(h.out.changes); got != "-U +U" {
		t.Fatalf("delete then insert in one epoch: %s, want -U +U", got)
	}
	s := h.op.(NormalizeStatsReporter).NormalizeStats()
	if s.IgnoredRetractions != 1 || s.UnchangedRows != 1 || s.Keys != 1 || s.InputRows != 8 || s.OutputRows != 5 {
		t.Fatalf("stats %+v", s)
	}
}

// TestNormalizeStateTTL forgets a key no row reached for the TTL: its
// next value is a first value again, and a tombstone of it is ignored.
func TestNormalizeStateTTL(t *testing.T) {
	clock := &rankFakeClock{now: time.Unix(1000, 0)}
	h := newOpHarness(t, Normalize{Input: rankTestSchema, Key: []string{"k"}, StateTTL: time.Minute}.Factory(), clock)
	ins, del := arrowflow.Insert, arrowflow.Delete
	a1 := []any{int64(1), int64(10), "a", 1.0, int64(1)}
	b1 := []any{int64(2), int64(20), "b", 2.0, int64(2)}
	if err := h.send([]arrowflow.RowKind{ins, ins}, a1, b1); err != nil {
		t.Fatal(err)
	}
	h.flush()
	clock.now = clock.now.Add(40 * time.Second)
	if err := h.send([]arrowflow.RowKind{ins}, b1); err != nil { // b stays alive
		t.Fatal(err)
	}
	h.flush()
	clock.now = clock.now.Add(40 * time.Second)
	h.out.changes = nil
	if err := h.send([]arrowflow.RowKind{del, del}, []any{int64(1), nil, nil, nil, int64(0)}, []any{int64(2), nil, nil, nil, int64(0)}); err != nil {
		t.Fatal(err)
	}
	h.flush()
	if got := changeKinds(h.out.changes); got != "-D" {
		t.Fatalf("after the TTL: %s, want only b's delete", got)
	}
	h.want(a1) // a's row stays downstream, as with Flink's TTL
	s := h.op.(NormalizeStatsReporter).NormalizeStats()
	if s.ExpiredKeys != 1 || s.IgnoredRetractions != 1 || s.Keys != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestNormalizeValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Normalize
		want string
	}{
		{Normalize{Input: rankTestSchema}, "no key columns"},
		{Normalize{Input: rankTestSchema, Key: []string{"nope"}}, `"nope" not found`},
		{Normalize{Key: []string{"k"}}, "no input schema"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.cfg, err, c.want)
		}
	}
}

func changeKinds(chs []optest.Change) string {
	var s []string
	for _, c := range chs {
		s = append(s, c.Kind.String())
	}
	return strings.Join(s, " ")
}
