package sql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/window"
)

// Options configure Compile.
type Options struct {
	// Parallelism is the number of subtasks of every operator unless the
	// script sets 'parallelism.default' (0: 1).
	Parallelism int
	// ForceParallelism makes Parallelism win over the script's SET
	// (a --parallelism flag given on the command line).
	ForceParallelism bool
	// JobName names the job unless the script sets 'pipeline.name'.
	JobName string
	// Sinks, when set, replace the connectors of the named tables'
	// sinks (their WITH clause is not opened): for tests and for Go
	// programs that collect a script's output themselves.
	Sinks map[string]arrowflow.Sink
	// DryRun plans without opening any sink (no table, folder or
	// transaction is created; blackholes stand in): for --explain. Sink
	// options are then checked only when the job really runs.
	DryRun bool
}

// Job is a compiled script: the dataflow graph of its INSERT statements
// and the job settings of its SET statements.
type Job struct {
	// Graph is the dataflow: sources, operators and one sink per INSERT.
	Graph *arrowflow.Graph
	// Name is the job's name ('pipeline.name' or Options.JobName).
	Name string
	// Parallelism is the operators' parallelism.
	Parallelism int
	// CheckpointInterval is 'execution.checkpointing.interval' (0 when
	// not set: the runner's default applies).
	CheckpointInterval time.Duration
	// CheckpointDir is 'state.checkpoints.dir' ("" when not set).
	CheckpointDir string
	// Settings are all SET key-value pairs in effect at the end of the
	// script.
	Settings map[string]string
	// Sinks names the tables the job writes, in INSERT order.
	Sinks []string
	// Warnings are things the script asked for that weir ignores (SET
	// keys it does not know), one per line.
	Warnings []string
	// Plan describes each INSERT's operators, for --explain.
	Plan string
	// Sources are the job's sources by node name (a runner asks Kafka
	// sources for their lag).
	Sources map[string]arrowflow.Source
}

// Compile parses, checks and plans a script into a job. Errors are
// *Error values with the line and column of the offending construct.
func Compile(ctx context.Context, src string, opts Options) (*Job, error) {
	script, err := Parse(src)
	if err != nil {
		return nil, err
	}
	p := newPlanner(ctx, opts)
	job, err := p.compile(script)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Src == "" {
			e.Src = sourceLine(src, e.Pos.Line)
		}
		return nil, err
	}
	return job, nil
}

// sourceLine returns line n (1-based) of src.
func sourceLine(src string, n int) string {
	lines := strings.Split(src, "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	return strings.TrimRight(lines[n-1], "\r")
}

// planner turns statements into a graph.
type planner struct {
	ctx      context.Context
	opts     Options
	g        *arrowflow.Graph
	par      int
	settings map[string]string
	tables   map[string]*tableDef
	views    map[string]*viewDef
	scans    map[*tableDef]*relation // each source table is read once
	viewRels map[*viewDef]*relation  // each view is planned once
	aggs     map[string]*relation    // window aggregates by what they compute
	names    map[string]int          // node names used
	inserts  []*Insert
	plan     strings.Builder
	warnings []string
	// idleTimeout is SET 'table.exec.source.idle-timeout' (0: none).
	idleTimeout time.Duration
	// cdcDuplicates is SET 'table.exec.source.cdc-events-duplicate': a
	// change-format source with a PRIMARY KEY may deliver an event more
	// than once (Debezium after a connector failure), so its changes are
	// normalized by key, as Flink does.
	cdcDuplicates bool
	// stateTTL is SET 'table.exec.state.ttl' (0: state is kept forever),
	// the state TTL of updating operators without a STATE_TTL hint.
	stateTTL time.Duration
	// kafkaSinksShareJob is set when the job writes more than one Kafka
	// table: their transactional ids then default to job-table prefixes
	// (one prefix for all would fence each other's producers).
	kafkaSinksShareJob bool
	// aggPhases is SET 'table.optimizer.agg-phase-strategy' (AUTO,
	// ONE_PHASE or TWO_PHASE; "" is AUTO).
	aggPhases string
}

func newPlanner(ctx context.Context, opts Options) *planner {
	return &planner{ctx: ctx, opts: opts, settings: map[string]string{}, tables: map[string]*tableDef{},
		views: map[string]*viewDef{}, scans: map[*tableDef]*relation{}, viewRels: map[*viewDef]*relation{},
		aggs: map[string]*relation{}, names: map[string]int{}}
}

// viewDef is a CREATE VIEW (or a WITH clause's query).
type viewDef struct {
	name    string
	columns []*Ident
	query   *Query
}

func (p *planner) compile(script *Script) (*Job, error) {
	script, err := bindFunctions(script) // CREATE FUNCTION, DROP FUNCTION
	if err != nil {
		return nil, err
	}
	// Pass 1: the catalog and settings, in order; INSERTs are collected
	// and planned once every SET is known (parallelism applies to all).
	for _, st := range script.Statements {
		switch s := st.(type) {
		case *CreateTable:
			if err := p.createTable(s); err != nil {
				return nil, err
			}
		case *CreateView:
			name := s.Name.String()
			if _, ok := p.lookupRelation(name); ok {
				if s.IfNotExists {
					continue
				}
				return nil, semErrorf(s.Pos, "%s already exists", name)
			}
			p.views[name] = &viewDef{name: name, columns: s.Columns, query: s.Query}
		case *Set:
			p.settings[s.Key] = s.Value
		case *Reset:
			if s.Key == "" {
				p.settings = map[string]string{}
			} else {
				delete(p.settings, s.Key)
			}
		case *Insert:
			p.inserts = append(p.inserts, s)
		case *StatementSet:
			p.inserts = append(p.inserts, s.Inserts...)
		case *Drop:
			name := s.Name.String()
			_, isTable := p.tables[name]
			_, isView := p.views[name]
			if !isTable && !isView && !s.IfExists {
				return nil, semErrorf(s.Pos, "DROP: %s does not exist", name)
			}
			delete(p.tables, name)
			delete(p.views, name)
		case *Query:
			return nil, hinted(semErrorf(s.Pos, "a SELECT on its own has nowhere to go in a job"),
				"write INSERT INTO a table, e.g. one WITH ('connector' = 'print')")
		default:
			return nil, semErrorf(st.Position(), "statement not supported")
		}
	}
	if len(p.inserts) == 0 {
		return nil, hinted(semErrorf(script.Pos, "the script has no INSERT INTO statement: there is no job to run"),
			"end it with INSERT INTO sink SELECT ...")
	}
	job := &Job{Settings: p.settings}
	if err := p.applySettings(job); err != nil {
		return nil, err
	}
	p.g = arrowflow.NewGraph(job.Name)
	kafkaSinks := 0
	for _, ins := range p.inserts {
		if t, ok := p.tables[ins.Table.String()]; ok && t.connector == "kafka" {
			kafkaSinks++
		}
	}
	p.kafkaSinksShareJob = kafkaSinks > 1
	for _, ins := range p.inserts {
		if err := p.insert(ins); err != nil {
			return nil, err
		}
		job.Sinks = append(job.Sinks, ins.Table.String())
	}
	job.Graph = p.g
	job.Sources = map[string]arrowflow.Source{}
	for _, n := range p.g.Nodes() {
		if n.Kind() == arrowflow.SourceNode {
			job.Sources[n.Name()] = window.UnwrapSource(n.Source())
		}
	}
	job.Warnings = p.warnings
	job.Plan = p.plan.String()
	return job, nil
}

// applySettings reads the SET keys weir knows.
func (p *planner) applySettings(job *Job) error {
	job.Name = p.opts.JobName
	if job.Name == "" {
		job.Name = "weir-sql"
	}
	par := p.opts.Parallelism
	keys := make([]string, 0, len(p.settings))
	for k := range p.settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := p.settings[k]
		switch k {
		case "parallelism.default":
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 {
				return fmt.Errorf("SET 'parallelism.default' = '%s': want a positive integer", v)
			}
			if !p.opts.ForceParallelism {
				par = n
			}
		case "execution.checkpointing.interval":
			d, err := parseFlinkDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("SET 'execution.checkpointing.interval' = '%s': want a positive duration such as '10 s'", v)
			}
			job.CheckpointInterval = d
		case "execution.checkpointing.mode":
			if !strings.EqualFold(v, "EXACTLY_ONCE") {
				p.warnings = append(p.warnings, fmt.Sprintf("SET '%s' = '%s': weir's checkpoints are always exactly-once", k, v))
			}
		case "state.checkpoints.dir", "execution.checkpointing.dir":
			job.CheckpointDir = strings.TrimPrefix(v, "file://")
		case "table.exec.source.idle-timeout":
			d, err := parseFlinkDuration(v)
			if err != nil || d < 0 {
				return fmt.Errorf("SET 'table.exec.source.idle-timeout' = '%s': want a duration such as '5 s' (0 for none)", v)
			}
			p.idleTimeout = d
		case "table.exec.state.ttl":
			d, err := parseFlinkDuration(v)
			if err != nil || d < 0 {
				return fmt.Errorf("SET 'table.exec.state.ttl' = '%s': want a duration such as '1 d' or '36 h' (0 keeps state forever)", v)
			}
			p.stateTTL = d
		case "table.optimizer.agg-phase-strategy":
			switch strings.ToUpper(strings.TrimSpace(v)) {
			case "AUTO", "ONE_PHASE", "TWO_PHASE":
				p.aggPhases = strings.ToUpper(strings.TrimSpace(v))
			default:
				return fmt.Errorf("SET 'table.optimizer.agg-phase-strategy' = '%s': want AUTO, ONE_PHASE or TWO_PHASE", v)
			}
		case "table.exec.source.cdc-events-duplicate":
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("SET 'table.exec.source.cdc-events-duplicate' = '%s': want true or false", v)
			}
			p.cdcDuplicates = b
		case "table.exec.sink.not-null-enforcer":
			if !strings.EqualFold(strings.TrimSpace(v), "ERROR") {
				return fmt.Errorf("SET 'table.exec.sink.not-null-enforcer' = '%s': weir supports ERROR only (a NULL into a NOT NULL column stops the job); "+
					"DROP would lose rows, filter them out in the query instead", v)
			}
		case "pipeline.name":
			job.Name = v
		case "execution.runtime-mode":
			if !strings.EqualFold(v, "streaming") {
				return fmt.Errorf("SET 'execution.runtime-mode' = '%s': weir runs streaming jobs (bounded sources end them)", v)
			}
		default:
			p.warnings = append(p.warnings, fmt.Sprintf("SET '%s': not a setting weir uses; ignored", k))
		}
	}
	if par < 1 {
		par = 1
	}
	p.par = par
	job.Parallelism = par
	return nil
}

// tableDef is a CREATE TABLE.
type tableDef struct {
	stmt        *CreateTable
	name        string
	connector   string
	opts        *tableOptions
	physical    []arrow.Field // physical columns, declared order
	metadata    []metaColumn
	types       map[string]arrow.DataType // physical and metadata columns
	pk          []string
	partitionBy []string
	sink        arrowflow.Sink // opened on first INSERT
}

func (p *planner) createTable(s *CreateTable) error {
	name := s.Name.String()
	if _, ok := p.lookupRelation(name); ok {
		if s.IfNotExists {
			return nil
		}
		return semErrorf(s.Pos, "%s already exists", name)
	}
	opts, err := newTableOptions(name, s.Pos, s.Options)
	if err != nil {
		return err
	}
	t := &tableDef{stmt: s, name: name, opts: opts, types: map[string]arrow.DataType{}}
	conn, ok := opts.get("connector")
	if !ok {
		return hinted(semErrorf(s.Pos, "table %s: the WITH clause has no 'connector'", name),
			"add 'connector' = 'kafka' (or nexmark, datagen, iceberg, filesystem, print, blackhole)")
	}
	t.connector = conn
	seen := map[string]bool{}
	for _, c := range s.Columns {
		if seen[c.Name.Name] {
			return semErrorf(c.Pos, "table %s: column %s is declared twice", name, c.Name.Name)
		}
		seen[c.Name.Name] = true
		switch c.Kind {
		case PhysicalColumn, MetadataColumn:
			typ, err := arrowType(c.Type)
			if err != nil {
				return err
			}
			t.types[c.Name.Name] = typ
			if c.Kind == PhysicalColumn {
				t.physical = append(t.physical, arrow.Field{Name: c.Name.Name, Type: typ, Nullable: !c.Type.NotNull})
			} else {
				key := c.MetadataKey
				if key == "" {
					key = c.Name.Name
				}
				t.metadata = append(t.metadata, metaColumn{name: c.Name.Name, key: key, typ: typ})
			}
		}
	}
	if s.Watermark != nil && !seen[s.Watermark.Column.Name] {
		return semErrorf(s.Watermark.Column.Pos, "table %s: WATERMARK FOR %s: no such column", name, s.Watermark.Column.Name)
	}
	if s.PrimaryKey != nil {
		for _, c := range s.PrimaryKey.Columns {
			if !seen[c.Name] {
				return semErrorf(c.Pos, "table %s: PRIMARY KEY column %s does not exist", name, c.Name)
			}
			t.pk = append(t.pk, c.Name)
		}
		// As Flink: the columns of a PRIMARY KEY are NOT NULL.
		for i, f := range t.physical {
			if slices.Contains(t.pk, f.Name) {
				t.physical[i].Nullable = false
			}
		}
	}
	for _, c := range s.PartitionedBy {
		if _, ok := t.types[c.Name]; !ok {
			return semErrorf(c.Pos, "table %s: PARTITIONED BY column %s is not a physical column", name, c.Name)
		}
		t.partitionBy = append(t.partitionBy, c.Name)
	}
	p.tables[name] = t
	return nil
}

// lookupRelation finds a table or view by name: exactly, else by its
// last part (Flink's default catalog and database), else ignoring case
// when that is unambiguous.
func (p *planner) lookupRelation(name string) (any, bool) {
	if t, ok := p.tables[name]; ok {
		return t, true
	}
	if v, ok := p.views[name]; ok {
		return v, true
	}
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		if r, ok := p.lookupRelation(name[i+1:]); ok {
			return r, true
		}
	}
	var found []any
	for k, t := range p.tables {
		if strings.EqualFold(k, name) {
			found = append(found, t)
		}
	}
	for k, v := range p.views {
		if strings.EqualFold(k, name) {
			found = append(found, v)
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	return nil, false
}

// nodeName returns a unique node name starting with base.
func (p *planner) nodeName(base string) string {
	p.names[base]++
	if n := p.names[base]; n > 1 {
		return base + "-" + strconv.Itoa(n)
	}
	return base
}

// explainf adds a line to the plan description.
func (p *planner) explainf(format string, args ...any) {
	fmt.Fprintf(&p.plan, format+"\n", args...)
}
