package cdcgen

import (
	"encoding/json"
	"maps"
	"testing"
)

// Replaying the events' images (after for c/r/u, delete for d) onto an
// empty table gives the generator's state, every update's before image is
// the row as it was, and the same Config gives the same history.
func TestHistoryReplays(t *testing.T) {
	cfg := Config{Keys: 50, Seed: 3}
	evs, state := History(cfg, 5000)
	table := map[int64]Account{}
	ops := map[string]int{}
	for i, e := range evs {
		var ev struct {
			Before, After *Account
			Op            string
		}
		if err := json.Unmarshal(e.Value, &ev); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		ops[ev.Op]++
		old, had := table[e.ID]
		switch ev.Op {
		case "c", "r":
			if had || ev.After == nil || ev.After.ID != e.ID {
				t.Fatalf("event %d: insert of present id %d or without after", i, e.ID)
			}
			table[e.ID] = *ev.After
		case "u":
			if !had || ev.Before == nil || *ev.Before != old || ev.After == nil {
				t.Fatalf("event %d: update of %d with before %v, the row %v", i, e.ID, ev.Before, old)
			}
			table[e.ID] = *ev.After
		case "d":
			if !had || ev.Before == nil || *ev.Before != old || ev.After != nil {
				t.Fatalf("event %d: delete of %d with before %v, the row %v", i, e.ID, ev.Before, old)
			}
			delete(table, e.ID)
		default:
			t.Fatalf("event %d: op %q", i, ev.Op)
		}
	}
	if !maps.Equal(table, state) {
		t.Fatalf("replayed table of %d rows differs from the state of %d", len(table), len(state))
	}
	for _, op := range []string{"c", "r", "u", "d"} {
		if ops[op] == 0 {
			t.Errorf("no %q event in 5000", op)
		}
	}
	again, _ := History(cfg, 5000)
	for i := range evs {
		if string(evs[i].Value) != string(again[i].Value) {
			t.Fatalf("event %d differs between two histories of one Config", i)
		}
	}
}
