package sql

import (
	"strings"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
)

// updatingInputError refuses an operator that takes append-only input only
// (a window aggregation, a window join, an interval join, a window Top-N)
// over an updating relation, naming the operator that makes it updating.
func updatingInputError(pos Pos, what string, in *relation) error {
	by := in.updatedBy
	if by == "" {
		by = "an updating operator"
	}
	return hinted(semErrorf(pos, "%s needs an append-only input, but %s updates its results", what, by),
		"window the updating operator's input (TUMBLE, HOP, SESSION, CUMULATE), or apply this operator before it")
}

// partitionsByWindow reports whether a ranking's PARTITION BY names
// window_start or window_end (a window Top-N).
func partitionsByWindow(f *FuncCall) bool {
	if f.Over == nil {
		return false
	}
	for _, e := range f.Over.PartitionBy {
		if ref, ok := e.(*Ref); ok {
			n := strings.ToLower(ref.Parts[len(ref.Parts)-1].Name)
			if n == "window_start" || n == "window_end" {
				return true
			}
		}
	}
	return false
}

// updatingRelation marks r as a retract changelog made by the operator
// described by by, with upsert key key (nil when unknown).
func updatingRelation(r *relation, by string, key []string) *relation {
	r.mode, r.updatedBy, r.upsertKey = arrowflow.Retract, by, key
	if r.node != nil { // unit tests check sinks with relations of no plan
		r.node.SetChangelogMode(arrowflow.Retract)
	}
	return r
}

// changelogSinks are the connectors whose sinks take every row kind:
// print shows each row's kind, blackhole drops everything, upsert-kafka
// writes each key's latest row (a tombstone for a delete). A Kafka table
// takes them too when its format carries changes, an Iceberg table in
// upsert mode (see sinkTakesChanges).
var changelogSinks = map[string]bool{"print": true, "blackhole": true, "upsert-kafka": true}

// sinkTakesChanges reports whether table t's sink writes every row kind:
// a changelog connector, an Iceberg table with 'write.upsert.enabled'
// (its PRIMARY KEY's rows replaced and deleted through equality
// deletes), or a Kafka table whose 'format' (or 'value.format') carries
// changes (debezium-json, format.CarriesChanges). The filesystem sink
// writes its formats' rows only, so debezium-json is not one of its
// formats.
func sinkTakesChanges(t *tableDef) bool {
	if changelogSinks[t.connector] {
		return true
	}
	if t.connector == "iceberg" && t.opts != nil {
		return strings.EqualFold(strings.TrimSpace(t.opts.m["write.upsert.enabled"]), "true")
	}
	if t.connector != "kafka" || t.opts == nil {
		return false
	}
	// Peek without marking the options used: the sink reads them when it
	// is opened, and formatOptions refuses 'format' and 'value.format'
	// that differ.
	name := t.opts.m["value.format"]
	if name == "" {
		name = t.opts.m["format"]
	}
	return format.CarriesChanges(name)
}

// checkSinkTakesChanges refuses, at plan time, an updating query into a
// sink that can only append, naming the operator that makes it updating.
// A sink that a test or an embedder supplies (Options.Sinks) receives the
// row kinds on its batches and is trusted to handle them.
func (p *planner) checkSinkTakesChanges(ins *Insert, t *tableDef, r *relation) error {
	_, supplied := p.opts.Sinks[t.name]
	if !r.updating() || supplied || sinkTakesChanges(t) {
		return nil
	}
	by := r.updatedBy
	if by == "" {
		by = "an updating operator"
	}
	return hinted(semErrorf(ins.Pos, "table %s (%s connector) can only append rows, but %s updates its results", t.name, t.connector, by),
		"write to a sink that takes updates (print, blackhole, upsert-kafka, iceberg with a PRIMARY KEY and 'write.upsert.enabled' = 'true', or kafka with 'format' = 'debezium-json'), or make the query append-only with a window (TUMBLE, HOP, SESSION, CUMULATE)")
}
