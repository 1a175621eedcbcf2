// Package cdcgen generates the change history of a database table of
// accounts as Debezium JSON events, the way a Debezium connector writes
// them to Kafka, and keeps the table's state, so that a mirror of the
// table (an Iceberg upsert table, an upsert-kafka topic) can be checked
// against it row for row.
//
// The table is accounts(id BIGINT, owner STRING, balance BIGINT, PRIMARY
// KEY (id)). Its history holds inserts (some as snapshot reads, op "r"),
// updates of balance and owner, deletes, re-inserts of deleted ids, and
// the same id changing many times. A Generator is deterministic: the same
// Config gives the same events.
package cdcgen

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
)

// Account is a row of the generated table.
type Account struct {
	ID      int64  `json:"id"`
	Owner   string `json:"owner"`
	Balance int64  `json:"balance"`
}

// Event is one change event as a Kafka record: Key is Debezium's key
// ({"id":N}), Value the Debezium envelope (before, after, op, ts_ms,
// source).
type Event struct {
	ID    int64
	Op    string // "c", "r", "u" or "d"
	Key   []byte
	Value []byte
}

// Config says what history a Generator makes.
type Config struct {
	// Keys bounds the ids: 0 <= id < Keys. Fewer keys mean more changes
	// per key.
	Keys int
	// Seed chooses the history.
	Seed uint64
	// DeleteEvery makes about one change of an existing row in
	// DeleteEvery a delete (0: 6).
	DeleteEvery int
}

// Generator makes a table's change events one by one and keeps the
// table's state after the events made so far.
type Generator struct {
	cfg   Config
	rng   *rand.Rand
	cur   map[int64]Account
	n     int
	Table string // the source block's table name ("accounts")
}

// New returns a Generator of cfg's history.
func New(cfg Config) *Generator {
	if cfg.Keys <= 0 {
		cfg.Keys = 1000
	}
	if cfg.DeleteEvery <= 0 {
		cfg.DeleteEvery = 6
	}
	return &Generator{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 21)), cur: map[int64]Account{}, Table: "accounts"}
}

// Next makes the next change event and applies it to the state.
func (g *Generator) Next() Event {
	id := int64(g.rng.IntN(g.cfg.Keys))
	old, ok := g.cur[id]
	switch {
	case !ok:
		a := Account{ID: id, Owner: fmt.Sprint("o", g.rng.IntN(5)), Balance: g.rng.Int64N(1000)}
		op := "c"
		if g.rng.IntN(10) == 0 {
			op = "r" // a snapshot read
		}
		g.cur[id] = a
		return g.event(id, op, nil, &a)
	case g.rng.IntN(g.cfg.DeleteEvery) == 0:
		delete(g.cur, id)
		return g.event(id, "d", &old, nil)
	default:
		a := old
		a.Balance += g.rng.Int64N(200) - 100
		if g.rng.IntN(4) == 0 {
			a.Owner = fmt.Sprint("o", g.rng.IntN(5))
		}
		g.cur[id] = a
		return g.event(id, "u", &old, &a)
	}
}

func (g *Generator) event(id int64, op string, before, after *Account) Event {
	ev := struct {
		Before *Account       `json:"before"`
		After  *Account       `json:"after"`
		Op     string         `json:"op"`
		TsMs   int64          `json:"ts_ms"`
		Source map[string]any `json:"source"`
	}{before, after, op, 1700000000000 + int64(g.n), map[string]any{"db": "bank", "table": g.Table}}
	g.n++
	v, err := json.Marshal(ev)
	if err != nil {
		panic(err) // a struct of strings and integers always marshals
	}
	return Event{ID: id, Op: op, Key: fmt.Appendf(nil, `{"id":%d}`, id), Value: v}
}

// Events is how many events the Generator made.
func (g *Generator) Events() int { return g.n }

// State returns a copy of the table after the events made so far.
func (g *Generator) State() map[int64]Account { return maps.Clone(g.cur) }

// History makes n events of cfg's history and returns them with the
// table's state after them.
func History(cfg Config, n int) ([]Event, map[int64]Account) {
	g := New(cfg)
	evs := make([]Event, n)
	for i := range evs {
		evs[i] = g.Next()
	}
	return evs, g.State()
}
