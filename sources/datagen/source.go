package datagen

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
)

// SplitPrefix starts every split id: split s is "datagen-s".
const SplitPrefix = "datagen-"

// Source is a generator source: an arrowflow.Source of deterministic rows.
// It is immutable and safe for concurrent use.
type Source struct {
	cfg    Config // defaults applied
	schema *arrow.Schema
	gens   []generator
	// Event time; etCol is -1 without an event-time column.
	etCol int
	// etMult is the event-time column's unit in ns; etMargin is
	// MaxOutOfOrderness rounded up to a multiple of it: a split's
	// watermark is its largest event time - etMargin - 1ns.
	etMult, etMargin int64
}

var _ arrowflow.Source = (*Source)(nil)

// New checks cfg and returns a Source generating it. Errors name the field
// or setting at fault.
func New(cfg Config) (*Source, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Source{cfg: cfg, etCol: -1}
	fields := make([]arrow.Field, len(cfg.Fields))
	for i, f := range cfg.Fields {
		g, err := compileField(&s.cfg, i)
		if err != nil {
			return nil, err
		}
		s.gens = append(s.gens, g)
		fields[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.NullRate > 0}
		if f.Name == cfg.EventTime.Column {
			s.etCol = i
			s.etMult = int64(f.Type.(*arrow.TimestampType).Unit.Multiplier())
			m := int64(cfg.EventTime.MaxOutOfOrderness)
			s.etMargin = (m + s.etMult - 1) / s.etMult * s.etMult
		}
	}
	s.schema = arrow.NewSchema(fields, nil)
	if s.etCol >= 0 {
		sch, err := arrowflow.WithEventTimeColumn(s.schema, cfg.EventTime.Column)
		if err != nil {
			return nil, fmt.Errorf("datagen: %w", err)
		}
		s.schema = sch
	}
	return s, nil
}

// Config returns the source's configuration with defaults applied.
func (s *Source) Config() Config {
	c := s.cfg
	c.Fields = append([]Field(nil), c.Fields...)
	for i := range c.Fields {
		c.Fields[i].Values = append([]string(nil), c.Fields[i].Values...)
	}
	return c
}

// Schema returns the schema of the generated batches; its metadata names
// the event-time column, if one is configured.
func (s *Source) Schema() *arrow.Schema { return s.schema }

// Splits returns the split ids "datagen-0" to "datagen-(Splits-1)".
func (s *Source) Splits(context.Context) ([]string, error) {
	ids := make([]string, s.cfg.Splits)
	for i := range ids {
		ids[i] = SplitPrefix + strconv.Itoa(i)
	}
	return ids, nil
}

// Row returns the values of global row r, one per field in schema order:
// int8 ... uint64, float32, float64, bool and string values as the Go
// types of those names, arrow.Timestamp and arrow.Date32 for timestamps
// and dates, nil for nulls. It is the definition of what the readers
// generate, for any r >= 0 (rows at or beyond Rows, if bounded, are never
// generated).
func (s *Source) Row(r int64) []any {
	row := make([]any, len(s.gens))
	for i, g := range s.gens {
		row[i] = g.value(r)
	}
	return row
}

// Open returns a reader over the given splits, each resuming from its
// Position: 8 bytes, the big-endian number of the next row to generate
// (nil: the split's first row). The reader allocates from
// info.Allocator (memory.DefaultAllocator when info or it is nil).
func (s *Source) Open(info *arrowflow.TaskInfo, splits []arrowflow.SplitState) (arrowflow.SourceReader, error) {
	mem := memory.Allocator(memory.DefaultAllocator)
	if info != nil && info.Allocator != nil {
		mem = info.Allocator
	}
	cursors := make([]cursor, len(splits))
	seen := make(map[int]bool, len(splits))
	for i, st := range splits {
		c, err := s.parseSplit(st)
		if err != nil {
			return nil, err
		}
		if seen[c.split] {
			return nil, fmt.Errorf("datagen: split %q given twice", st.Split)
		}
		seen[c.split] = true
		cursors[i] = c
	}
	return newReader(s, mem, cursors), nil
}

// parseSplit checks a split id and position and returns its cursor.
func (s *Source) parseSplit(st arrowflow.SplitState) (cursor, error) {
	num, ok := strings.CutPrefix(st.Split, SplitPrefix)
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 0 || n >= s.cfg.Splits || strconv.Itoa(n) != num {
		return cursor{}, fmt.Errorf("datagen: unknown split %q: splits are %s0 to %s%d", st.Split, SplitPrefix, SplitPrefix, s.cfg.Splits-1)
	}
	c := cursor{split: n, next: int64(n), id: st.Split}
	if st.Position == nil {
		return c, nil
	}
	if len(st.Position) != 8 {
		return cursor{}, fmt.Errorf("datagen: split %q: malformed position %x: want 8 bytes, got %d", st.Split, st.Position, len(st.Position))
	}
	next := int64(binary.BigEndian.Uint64(st.Position))
	if next < 0 || next%int64(s.cfg.Splits) != int64(n) {
		return cursor{}, fmt.Errorf("datagen: split %q: position row %d does not belong to it "+
			"(row r belongs to split r mod %d); was Splits changed since the checkpoint?", st.Split, next, s.cfg.Splits)
	}
	c.next = next
	return c, nil
}

// encodePosition returns the position of a split whose next row is next.
func encodePosition(next int64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(next))
}
