package sql

// groupAggregate plans GROUP BY without a window (and aggregates without
// GROUP BY): an updating aggregation.
func (p *planner) groupAggregate(sel *Select, r *relation) (*relation, error) {
	return nil, hinted(semErrorf(sel.Pos, "GROUP BY without a window is not supported yet"),
		"aggregate within windows: FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end, ...")
}

// selectDistinct plans SELECT DISTINCT: an updating aggregation over every
// selected column without aggregates.
func (p *planner) selectDistinct(sel *Select, r *relation) (*relation, error) {
	return nil, hinted(semErrorf(sel.Pos, "SELECT DISTINCT is not supported yet"),
		"GROUP BY the columns within windows instead")
}
