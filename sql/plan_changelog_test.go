package sql

import (
	"strings"
	"testing"

	"github.com/weirflow/weir/arrowflow"
)

// An updating query into an append-only sink is refused at plan time with
// the operator that makes it updating; print and blackhole take it, and so
// does a sink the caller supplies.
func TestAppendOnlySinkRefusesUpdates(t *testing.T) {
	ins := &Insert{Pos: Pos{Line: 3, Col: 1}}
	upd := updatingRelation(&relation{}, "the GROUP BY at 2:1 (non-window aggregation)", []string{"k"})
	p := &planner{opts: Options{Sinks: map[string]arrowflow.Sink{"mine": nil}}}
	for _, c := range []struct {
		table, connector string
		rel              *relation
		refused          bool
	}{
		{"out", "filesystem", upd, true},
		{"out", "kafka", upd, true},
		{"out", "iceberg", upd, true},
		{"out", "print", upd, false},
		{"out", "blackhole", upd, false},
		{"mine", "filesystem", upd, false},
		{"out", "filesystem", &relation{}, false},
	} {
		err := p.checkSinkTakesChanges(ins, &tableDef{name: c.table, connector: c.connector}, c.rel)
		if (err != nil) != c.refused {
			t.Errorf("%s into %s (%s): error %v, want refused %v", c.rel.mode, c.table, c.connector, err, c.refused)
			continue
		}
		if err != nil && (!strings.Contains(err.Error(), "GROUP BY at 2:1") || !strings.Contains(err.Error(), c.connector)) {
			t.Errorf("%s: the error does not name the operator and connector: %v", c.connector, err)
		}
	}
	if m := upd.mode.String(); m != "retract" {
		t.Errorf("mode %q", m)
	}
}
