package sql

import "errors"

// normalize keys an upsert source's rows by the table's PRIMARY KEY and
// turns them into a retract changelog (being built).
func (p *planner) normalize(t *tableDef, r *relation) (*relation, error) {
	return nil, errors.New("upsert sources: being built")
}
