package sql

// rankQuery is a ranking not within windows, as windowTopN found it:
//
//	SELECT <sel.Items> FROM (SELECT <passItems>, <over> AS <rowNumber>
//	FROM ... ) <dt.Alias> WHERE <rowNumber> <= <n> AND <rest>
//
// in is the inner query's FROM (with its WHERE applied), pruned.
type rankQuery struct {
	sel       *Select
	dt        *DerivedTable
	inner     *Select
	over      *FuncCall // ROW_NUMBER, RANK or DENSE_RANK
	rowNumber string
	n         int64
	rest      []Expr
	passItems []*SelectItem
	in        *relation
	withTies  bool
}

// rank plans deduplication and Top-N outside windows.
func (p *planner) rank(q rankQuery) (*relation, error) {
	return nil, hinted(semErrorf(q.over.Over.Pos, "a ranking over a stream must be within windows: PARTITION BY window_start, window_end"),
		"rank the rows of a window TVF or of a window aggregation")
}
