package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
)

// noteStarts records where partitions start reading, as their committed
// positions until an epoch commits (for Lag). A partition already known
// keeps its position.
func (s *Source) noteStarts(add []newSplit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.committed == nil {
		s.committed = map[Partition]position{}
	}
	for _, a := range add {
		if _, ok := s.committed[a.tp]; !ok {
			s.committed[a.tp] = a.pos
		}
	}
}

// noteCommitted records an epoch's committed positions (for Lag).
func (s *Source) noteCommitted(positions []arrowflow.SplitState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.committed == nil {
		s.committed = map[Partition]position{}
	}
	for _, st := range positions {
		if st.Position == nil {
			continue
		}
		tp, err := ParsePartition(st.Split)
		if err != nil {
			continue
		}
		if p, err := decodePosition(st.Split, st.Position); err == nil {
			s.committed[tp] = p
		}
	}
}

// Lag returns the number of records the running job has still to commit:
// over the partitions the source reads, the end offset (the last stable
// offset under ReadCommitted, which a read_committed consumer reads up
// to; a bounded partition's end when that is lower) minus the position of
// the last committed epoch, or where the partition started before the
// first. It is the consumer lag kadm.Lag computes for a group from its
// committed offsets, without needing a group: EpochCommitted commits the
// same positions as Options.GroupID's offsets when one is set. Records of
// aborted transactions and transaction markers count until passed.
//
// Lag lists offsets on the brokers (through an open reader's connection
// when there is one) and fails before the job opened its readers.
func (s *Source) Lag(ctx context.Context) (int64, error) {
	s.mu.Lock()
	committed := make(map[Partition]position, len(s.committed))
	for tp, p := range s.committed {
		committed[tp] = p
	}
	var borrowed *kgo.Client
	for cl := range s.clients {
		borrowed = cl
		break
	}
	s.mu.Unlock()
	if len(committed) == 0 {
		return 0, errors.New("kafka source: no lag before the job reads its partitions")
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	list := func(cl *kgo.Client) (kadm.ListedOffsets, error) {
		adm := kadm.NewClient(cl)
		if s.opts.Isolation == ReadCommitted {
			return adm.ListCommittedOffsets(ctx, s.opts.Topics...)
		}
		return adm.ListEndOffsets(ctx, s.opts.Topics...)
	}
	err := errors.New("no reader open")
	var ends kadm.ListedOffsets
	if borrowed != nil {
		ends, err = list(borrowed)
	}
	if err != nil && ctx.Err() == nil {
		// No reader open (the job ended, or has not started), or it
		// closed meanwhile: connect for this listing.
		cl, cerr := s.newClient()
		if cerr != nil {
			return 0, cerr
		}
		defer cl.Close()
		ends, err = list(cl)
	}
	if err != nil {
		return 0, fmt.Errorf("kafka source: list end offsets of %v: %w", s.opts.Topics, s.opts.Security.ExplainError(err, s.opts.Brokers))
	}
	var lag int64
	for tp, p := range committed {
		lo, ok := ends.Lookup(tp.Topic, tp.Partition)
		if !ok {
			return 0, fmt.Errorf("kafka source: list end offsets: no answer for partition %s", tp)
		}
		if lo.Err != nil {
			return 0, fmt.Errorf("kafka source: end offset of partition %s: %w", tp, lo.Err)
		}
		end := lo.Offset
		if p.end >= 0 && p.end < end {
			end = p.end
		}
		lag += max(0, end-p.next)
	}
	return lag, nil
}
