package kafka

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
)

// offsetLister lists offsets of the source's topics, each kind of listing
// at most once (listings cover every partition of the topics).
type offsetLister struct {
	o      *Options
	adm    *kadm.Client
	topics []string
	cache  map[string]kadm.ListedOffsets
	group  kadm.OffsetResponses
}

func newOffsetLister(o *Options, adm *kadm.Client, parts []Partition) *offsetLister {
	var topics []string
	for _, p := range parts {
		if !slices.Contains(topics, p.Topic) {
			topics = append(topics, p.Topic)
		}
	}
	return &offsetLister{o: o, adm: adm, topics: topics, cache: map[string]kadm.ListedOffsets{}}
}

// list returns the offset of p in the named listing.
func (l *offsetLister) list(ctx context.Context, kind string, p Partition) (int64, error) {
	lo, ok := l.cache[kind]
	if !ok {
		var err error
		switch kind {
		case "earliest":
			lo, err = l.adm.ListStartOffsets(ctx, l.topics...)
		case "latest":
			if l.o.Isolation == ReadCommitted {
				lo, err = l.adm.ListCommittedOffsets(ctx, l.topics...) // last stable offsets
			} else {
				lo, err = l.adm.ListEndOffsets(ctx, l.topics...) // high watermarks
			}
		case "startup-timestamp":
			lo, err = l.adm.ListOffsetsAfterMilli(ctx, l.o.StartupTimestamp.UnixMilli(), l.topics...)
		case "bounded-timestamp":
			lo, err = l.adm.ListOffsetsAfterMilli(ctx, l.o.BoundedTimestamp.UnixMilli(), l.topics...)
		default:
			panic("BUG: kafka source: unknown offset listing " + kind)
		}
		if err != nil {
			return 0, fmt.Errorf("kafka source: list %s offsets of %v: %w", kind, l.topics, err)
		}
		l.cache[kind] = lo
	}
	o, ok := lo.Lookup(p.Topic, p.Partition)
	switch {
	case !ok:
		return 0, fmt.Errorf("kafka source: list %s offsets: no answer for partition %s", kind, p)
	case o.Err != nil:
		return 0, fmt.Errorf("kafka source: list %s offsets: partition %s: %w", kind, p, o.Err)
	case o.Offset < 0:
		return 0, fmt.Errorf("kafka source: list %s offsets: partition %s: broker answered offset %d", kind, p, o.Offset)
	}
	return o.Offset, nil
}

// groupOffset returns the offset GroupID committed for p, or -1.
func (l *offsetLister) groupOffset(ctx context.Context, p Partition) (int64, error) {
	if l.group == nil {
		resp, err := l.adm.FetchOffsetsForTopics(ctx, l.o.GroupID, l.topics...)
		if err != nil {
			return 0, fmt.Errorf("kafka source: fetch offsets of group %q: %w", l.o.GroupID, err)
		}
		l.group = resp
	}
	r, ok := l.group.Lookup(p.Topic, p.Partition)
	if !ok {
		return -1, nil
	}
	if r.Err != nil {
		return 0, fmt.Errorf("kafka source: offsets of group %q: partition %s: %w", l.o.GroupID, p, r.Err)
	}
	return r.At, nil
}

// start resolves where p starts under the startup mode.
func (l *offsetLister) start(ctx context.Context, p Partition) (int64, error) {
	switch l.o.StartupMode {
	case StartLatest:
		return l.list(ctx, "latest", p)
	case StartTimestamp:
		return l.list(ctx, "startup-timestamp", p)
	case StartSpecificOffsets:
		if off, ok := l.o.SpecificOffsets[p]; ok {
			return off, nil
		}
	case StartGroupOffsets:
		off, err := l.groupOffset(ctx, p)
		if err != nil || off >= 0 {
			return off, err
		}
	}
	return l.list(ctx, "earliest", p)
}

// end resolves the offset p ends before under the bounded mode, or -1 for
// an unbounded source.
func (l *offsetLister) end(ctx context.Context, p Partition) (int64, error) {
	switch l.o.BoundedMode {
	case BoundedLatest:
		return l.list(ctx, "latest", p)
	case BoundedByTimestamp:
		at, err := l.list(ctx, "bounded-timestamp", p)
		if err != nil {
			return 0, err
		}
		// Offsets by time ignore transactions; never wait beyond what
		// the isolation level lets us read now.
		latest, err := l.list(ctx, "latest", p)
		return min(at, latest), err
	case BoundedSpecificOffsets:
		off, ok := l.o.BoundedOffsets[p]
		if !ok {
			return 0, fmt.Errorf("kafka source: 'scan.bounded.specific-offsets' lists no end offset for partition %s: list every partition of the topics", p)
		}
		return off, nil
	}
	return -1, nil
}
