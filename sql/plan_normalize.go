package sql

import (
	"github.com/weirflow/weir/changelog"
)

// normalize keys an upsert source's rows by the table's PRIMARY KEY and
// turns them into a retract changelog with changelog.Normalize (Flink's
// ChangelogNormalize): each key's last row is kept, a new value retracts
// the old, a tombstone deletes the key's full row, and a change delivered
// twice changes nothing. Its state lives as long as keys do, or
// 'table.exec.state.ttl'.
func (p *planner) normalize(t *tableDef, r *relation) (*relation, error) {
	cfg := changelog.Normalize{Input: r.schema, Key: t.pk, StateTTL: p.stateTTL}
	if err := cfg.Validate(); err != nil {
		return nil, semErrorf(t.stmt.Pos, "table %s: %v", t.name, err)
	}
	node := p.keyed(p.nodeName("changelog-normalize-"+t.name), cfg.Factory(), r.node, t.pk)
	return &relation{node: node, schema: r.schema}, nil
}
