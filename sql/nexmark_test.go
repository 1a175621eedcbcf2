package sql

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// nexmarkScripts returns the Nexmark job scripts of testdata/nexmark: the
// shared DDL followed by each query file, by query name.
func nexmarkScripts(t testing.TB) map[string]string {
	t.Helper()
	ddl, err := os.ReadFile(filepath.Join("testdata", "nexmark", "ddl.sql"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "nexmark", "q*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		q, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".sql")] = string(ddl) + "\n" + string(q)
	}
	return out
}

// TestNexmark parses the Nexmark queries q0-q22 in Flink's SQL, checks
// their round trip, and checks the shape of the shared DDL and of some
// queries.
func TestNexmark(t *testing.T) {
	scripts := nexmarkScripts(t)
	if len(scripts) != 23 {
		t.Fatalf("%d query files, want q0-q22", len(scripts))
	}
	names := make([]string, 0, len(scripts))
	for n := range scripts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			s, _ := roundTrip(t, scripts[name])
			// 1 table + 3 views, then the query's statements ending in
			// one INSERT.
			if len(s.Statements) < 6 {
				t.Fatalf("%d statements", len(s.Statements))
			}
			ins, ok := s.Statements[len(s.Statements)-1].(*Insert)
			if !ok {
				t.Fatalf("last statement is %T, want *Insert", s.Statements[len(s.Statements)-1])
			}
			if want := "nexmark_" + name; ins.Table.String() != want {
				t.Errorf("INSERT INTO %s, want %s", ins.Table, want)
			}
			// Every node has a position.
			Inspect(s, func(n Node) bool {
				if !n.Position().IsValid() {
					t.Errorf("%T %q has no position", n, Format(n))
				}
				return true
			})
		})
	}

	s := mustParseScript(t, scripts["q0"])
	ct := s.Statements[0].(*CreateTable)
	if ct.Name.String() != "datagen" || len(ct.Columns) != 5 {
		t.Fatalf("datagen: %s", Format(ct))
	}
	person := ct.Columns[1]
	if person.Type.Name != "ROW" || len(person.Type.Fields) != 8 || person.Type.Fields[6].Name.Name != "dateTime" ||
		person.Type.Fields[6].Type.Name != "TIMESTAMP" || person.Type.Fields[6].Type.Params[0] != 3 {
		t.Errorf("person: %s", Format(person))
	}
	dt := ct.Columns[4]
	if dt.Kind != ComputedColumn || dt.Name.Name != "dateTime" {
		t.Fatalf("dateTime: %s", Format(dt))
	}
	c, ok := dt.Expr.(*Case)
	if !ok || c.Operand != nil || len(c.Whens) != 2 || c.Else == nil {
		t.Fatalf("dateTime AS %s", Format(dt.Expr))
	}
	if got := Format(c.Whens[1].Result); got != "auction.dateTime" {
		t.Errorf("second THEN: %s", got)
	}
	wm := ct.Watermark
	if wm == nil || wm.Column.Name != "dateTime" || Format(wm.Expr) != "dateTime - INTERVAL '4' SECOND" {
		t.Fatalf("watermark: %v", Format(ct))
	}
	iv := wm.Expr.(*Binary).Right.(*IntervalLit)
	if d, err := iv.Duration(); err != nil || d.Seconds() != 4 {
		t.Errorf("watermark delay %v, %v", d, err)
	}
	if len(ct.Options) != 7 || ct.Options[0].Key != "connector" || ct.Options[0].Value != "nexmark" {
		t.Errorf("options: %v", Format(ct))
	}
	for i, name := range []string{"person", "auction", "bid"} {
		v := s.Statements[1+i].(*CreateView)
		if v.Name.String() != name {
			t.Errorf("view %d is %s", i, v.Name)
		}
		sel := v.Query.Body.(*Select)
		if Format(sel.Where) != "event_type = "+string(rune('0'+i)) {
			t.Errorf("view %s: WHERE %s", name, Format(sel.Where))
		}
	}

	// q5: hopping windows in a join of two derived tables.
	q5 := lastInsert(t, scripts["q5"])
	j := q5.Query.Body.(*Select).From.(*Join)
	if j.Kind != InnerJoin || j.Left.(*DerivedTable).Alias.Name != "AuctionBids" {
		t.Fatalf("q5 FROM: %s", Format(j))
	}
	hop := j.Left.(*DerivedTable).Query.Body.(*Select).From.(*WindowTVF)
	if hop.Kind != HopWindow || hop.Data.Name.String() != "bid" || hop.TimeCol.Name != "dateTime" ||
		Format(hop.Slide) != "INTERVAL '2' SECOND" || Format(hop.Size) != "INTERVAL '10' SECOND" || hop.Offset != nil {
		t.Errorf("q5 HOP: %s", Format(hop))
	}

	// q13: a temporal join.
	q13 := lastInsert(t, scripts["q13"])
	tj := q13.Query.Body.(*Select).From.(*Join)
	side := tj.Right.(*TableRef)
	if side.Name.String() != "side_input" || Format(side.SystemTime) != "B.p_time" || side.Alias.Name != "S" {
		t.Errorf("q13: %s", Format(tj))
	}

	// q19: Top-N with ROW_NUMBER() OVER.
	q19 := lastInsert(t, scripts["q19"])
	inner := q19.Query.Body.(*Select).From.(*DerivedTable).Query.Body.(*Select)
	rn := inner.Items[1].Expr.(*FuncCall)
	if !rn.IsNamed("row_number") || rn.Over == nil || len(rn.Over.PartitionBy) != 1 || !rn.Over.OrderBy[0].Desc {
		t.Errorf("q19: %s", Format(inner))
	}
}

func lastInsert(t *testing.T, src string) *Insert {
	t.Helper()
	s := mustParseScript(t, src)
	return s.Statements[len(s.Statements)-1].(*Insert)
}
