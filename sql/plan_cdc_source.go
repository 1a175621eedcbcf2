package sql

import (
	"strings"
)

// changeSource makes the relation of a source whose rows carry row kinds
// (a change format such as debezium-json, or upsert-kafka) a changelog.
// A change format's rows are a retract changelog already: an update comes
// as its before and after images. upsert-kafka's rows are upserts on the
// PRIMARY KEY, normalized into a retract changelog by a keyed operator
// that keeps each key's last row (Flink's ChangelogNormalize); so are a
// change format's rows under SET 'table.exec.source.cdc-events-duplicate'
// = 'true' (events delivered more than once apply once), as in Flink.
func (p *planner) changeSource(t *tableDef, r *relation, src scanSource) (*relation, error) {
	by := "the " + t.connector + " source"
	if t.connector != "upsert-kafka" {
		if name := t.opts.m["value.format"]; name != "" {
			by = "the " + name + " source " + t.name
		} else if name := t.opts.m["format"]; name != "" {
			by = "the " + name + " source " + t.name
		}
	}
	if src.upsert || p.cdcDuplicates && len(t.pk) > 0 {
		if len(t.pk) == 0 {
			return nil, semErrorf(t.stmt.Pos, "table %s: the %s connector needs a PRIMARY KEY (...) NOT ENFORCED", t.name, t.connector)
		}
		n, err := p.normalize(t, r)
		if err != nil {
			return nil, err
		}
		r = n
		p.explainf("  changelog-normalize keyed by %s: upserts into a retract changelog", strings.Join(t.pk, ", "))
	}
	p.explainf("  the source reads changes (a retract changelog)")
	return updatingRelation(r, by, t.pk), nil
}
