package nexmark

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/weirflow/weir/arrowflow"
)

// SplitPrefix starts every split id: split i is "nexmark-i".
const SplitPrefix = "nexmark-"

// Source is the Nexmark event generator as an arrowflow.Source. It is
// immutable and safe for concurrent use.
type Source struct {
	gen *generator
}

var _ arrowflow.Source = (*Source)(nil)

// New checks cfg and returns a Source generating it. Errors name the
// field at fault.
func New(cfg Config) (*Source, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Source{gen: newGenerator(cfg)}, nil
}

// Config returns the source's configuration with defaults applied.
func (s *Source) Config() Config { return s.gen.cfg }

// Schema returns EventSchema(): one event per row, dateTime the
// event-time column.
func (s *Source) Schema() *arrow.Schema { return eventSchema }

// Splits returns the split ids "nexmark-0" to "nexmark-(Splits-1)".
func (s *Source) Splits(context.Context) ([]string, error) {
	ids := make([]string, s.gen.cfg.Splits)
	for i := range ids {
		ids[i] = SplitPrefix + strconv.Itoa(i)
	}
	return ids, nil
}

// MaxOutOfOrderness bounds how far an event's time can be behind the
// time of an event emitted before it by the same split: the time spanned
// by one out-of-order group (0 with OutOfOrderGroupSize 1, when every
// split emits events in time order).
func (s *Source) MaxOutOfOrderness() time.Duration {
	g := s.gen.cfg.OutOfOrderGroupSize
	// Times are floor(n*1000/rate) ms: within a group of g events they
	// differ by at most ceil((g-1)*1000/rate) ms.
	span := ((g-1)*1000 + s.gen.cfg.EventsPerSecond - 1) / s.gen.cfg.EventsPerSecond
	return time.Duration(span) * time.Millisecond
}

// Open returns a reader over the given splits, each resuming from its
// Position: 8 bytes, the big-endian number of the next event position the
// split generates (nil: the split's first). The reader allocates from
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
			return nil, fmt.Errorf("nexmark: split %q given twice", st.Split)
		}
		seen[c.split] = true
		cursors[i] = c
	}
	return newReader(s, mem, cursors), nil
}

// parseSplit checks a split id and position and returns its cursor.
func (s *Source) parseSplit(st arrowflow.SplitState) (cursor, error) {
	k := s.gen.cfg.Splits
	num, ok := strings.CutPrefix(st.Split, SplitPrefix)
	i, err := strconv.Atoi(num)
	if !ok || err != nil || i < 0 || i >= k || strconv.Itoa(i) != num {
		return cursor{}, fmt.Errorf("nexmark: unknown split %q: splits are %s0 to %s%d", st.Split, SplitPrefix, SplitPrefix, k-1)
	}
	c := cursor{id: st.Split, split: i, next: int64(i)}
	if st.Position == nil {
		return c, nil
	}
	if len(st.Position) != 8 {
		return cursor{}, fmt.Errorf("nexmark: split %q: malformed position %x: want 8 bytes, got %d", st.Split, st.Position, len(st.Position))
	}
	next := int64(binary.BigEndian.Uint64(st.Position))
	if next < 0 || next%int64(k) != int64(i) {
		return cursor{}, fmt.Errorf("nexmark: split %q: position %d does not belong to it "+
			"(position n belongs to split n mod %d); was Splits changed since the checkpoint?", st.Split, next, k)
	}
	c.next = next
	return c, nil
}

// encodePosition returns the position of a split whose next event
// position is next.
func encodePosition(next int64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(next))
}
