package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
)

// requestTimeout bounds the metadata and offset requests of Splits, Open,
// EpochCommitted and partition discovery.
const requestTimeout = 30 * time.Second

// Source is a Kafka source: an arrowflow.Source whose splits are the
// partitions of its topics. It is safe for concurrent use, but serves one
// running job at a time: Splits remembers the partitions and start offsets
// it listed for the readers that Open starts next.
type Source struct {
	opts   Options // defaults applied
	schema *arrow.Schema
	// nValue is the number of physical columns (the value's, or with a
	// key decoder the key's and the value's), before the metadata ones.
	nValue int
	// cols says where each physical column comes from with a key
	// decoder (nil without).
	cols []colSource
	// etCol is the index of the event-time column, -1 without one.
	etCol  int
	etUnit arrow.TimeUnit

	stats stats
	// secOpts are Options.Security's client options, built once.
	secOpts []kgo.Opt

	mu   sync.Mutex
	plan *startPlan // from the last Splits call
	// clients are the clients of the open readers, which EpochCommitted
	// and Lag borrow rather than connecting anew each time.
	clients map[*kgo.Client]bool
	// committed is each partition's position of the last committed epoch,
	// or where it started before the first (for Lag). Splits resets it.
	committed map[Partition]position
}

var (
	_ arrowflow.Source         = (*Source)(nil)
	_ arrowflow.CommitObserver = (*Source)(nil)
)

// startPlan is what Splits resolved when the job started: the partitions
// and where each starts and ends without a restored position.
type startPlan struct {
	ids    []string
	known  map[string]bool
	starts map[Partition]int64
	ends   map[Partition]int64 // -1 when unbounded
}

// stats are a source's counters, shared by its readers.
type stats struct {
	records, skipped, deadLettered, deadLetterTruncated, tombstones, discovered, dataLoss atomic.Int64
}

// Stats is a snapshot of a source's counters, summed over its readers
// (subtasks) since the Source was created.
type Stats struct {
	// Records is the number of rows the source produced.
	Records int64
	// Skipped is the number of records the decoder rejected and
	// SkipOnError dropped.
	Skipped int64
	// DeadLettered is the number of rejected records written to the
	// dead-letter topic (DeadLetterOnError).
	DeadLettered int64
	// DeadLetterTruncated is the number of those dead letters that were
	// larger than the dead-letter topic accepts (its max.message.bytes)
	// and were written cut, marked with HeaderTruncated.
	DeadLetterTruncated int64
	// Tombstones is the number of records with a null value, which are
	// dropped as Flink's Kafka source drops them, or under Upsert read as
	// deletes of their key.
	Tombstones int64
	// Discovered is the number of partitions adopted while running.
	Discovered int64
	// DataLoss counts the times a partition's next offset was no longer
	// in the log (deleted by retention, or lost by the broker) and
	// reading resumed at the log start.
	DataLoss int64
}

// NewSource checks opts and returns a source. It does not contact the
// brokers; Splits does, when a job starts.
func NewSource(opts Options) (*Source, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	vs := o.Decoder.Schema()
	fields := slices.Clone(vs.Fields())
	var cols []colSource
	if o.KeyDecoder != nil {
		var err error
		if fields, cols, err = keyedColumns(&o); err != nil {
			return nil, err
		}
	}
	nPhys := len(fields)
	names := make(map[string]bool, len(fields))
	for _, f := range fields {
		names[f.Name] = true
	}
	for _, m := range o.Metadata {
		f, err := metadataField(m)
		if err != nil {
			return nil, err
		}
		if names[f.Name] {
			return nil, fmt.Errorf("kafka source: metadata column %q (%s) clashes with another column of that name; set MetadataColumn.Name", f.Name, m.Key)
		}
		names[f.Name] = true
		fields = append(fields, f)
	}
	md := vs.Metadata()
	s := &Source{opts: o, nValue: nPhys, cols: cols, etCol: -1, schema: arrow.NewSchema(fields, &md)}
	secOpts, err := o.Security.Opts()
	if err != nil {
		return nil, fmt.Errorf("kafka source: %w", err)
	}
	s.secOpts = secOpts
	s.opts.Security = o.Security.Redacted() // the options hold the secrets from here on
	if o.EventTime != "" {
		sch, err := arrowflow.WithEventTimeColumn(s.schema, o.EventTime)
		if err != nil {
			return nil, fmt.Errorf("kafka source: %w", err)
		}
		s.schema = sch
		s.etCol, _ = arrowflow.EventTimeColumn(sch)
		s.etUnit = sch.Field(s.etCol).Type.(*arrow.TimestampType).Unit
	}
	return s, nil
}

// Options returns the source's options with defaults applied, and with
// Security's secrets masked (see Security.Redacted).
func (s *Source) Options() Options {
	o := s.opts.withDefaults()
	o.SpecificOffsets = cloneOffsets(o.SpecificOffsets)
	o.BoundedOffsets = cloneOffsets(o.BoundedOffsets)
	return o
}

func cloneOffsets(m map[Partition]int64) map[Partition]int64 {
	if m == nil {
		return nil
	}
	out := make(map[Partition]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Schema returns the schema of every batch: the decoder's value columns,
// then the metadata columns; its metadata names the event-time column when
// Options.EventTime is set.
func (s *Source) Schema() *arrow.Schema { return s.schema }

// Stats returns the source's counters.
func (s *Source) Stats() Stats {
	return Stats{
		Records:             s.stats.records.Load(),
		Skipped:             s.stats.skipped.Load(),
		DeadLettered:        s.stats.deadLettered.Load(),
		DeadLetterTruncated: s.stats.deadLetterTruncated.Load(),
		Tombstones:          s.stats.tombstones.Load(),
		Discovered:          s.stats.discovered.Load(),
		DataLoss:            s.stats.dataLoss.Load(),
	}
}

// bounded reports whether partitions end.
func (s *Source) bounded() bool { return s.opts.BoundedMode != Unbounded }

// discoveryInterval is how often readers look for new partitions, 0 when
// they do not (bounded sources do not, as in Flink).
func (s *Source) discoveryInterval() time.Duration {
	if s.bounded() || s.opts.PartitionDiscoveryInterval < 0 {
		return 0
	}
	return s.opts.PartitionDiscoveryInterval
}

// newClient returns a franz-go client for the source's brokers with
// Options.Security's options, extra options, then Options.ClientOpts.
// Every client of the source is made here.
func (s *Source) newClient(extra ...kgo.Opt) (*kgo.Client, error) {
	opts := append([]kgo.Opt{kgo.SeedBrokers(s.opts.Brokers...)}, s.secOpts...)
	opts = append(opts, extra...)
	opts = append(opts, s.opts.ClientOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka source: client: %w", err)
	}
	return cl, nil
}

// Splits lists the partitions of the source's topics as split ids
// "topic/partition", ordered by topic name and then partition number.
// It also resolves, once for all subtasks, where each partition starts
// (StartupMode) and ends (BoundedMode) unless a restored position says
// otherwise. Every topic must exist.
func (s *Source) Splits(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	cl, err := s.newClient()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	plan, err := s.makePlan(ctx, kadm.NewClient(cl))
	if err != nil {
		return nil, s.opts.Security.ExplainError(err, s.opts.Brokers)
	}
	s.mu.Lock()
	s.plan = plan
	s.committed = nil // a new run: its readers say where they start
	s.mu.Unlock()
	return slices.Clone(plan.ids), nil
}

// partitions lists the partitions of the source's topics, sorted.
func (s *Source) partitions(ctx context.Context, adm *kadm.Client) ([]Partition, error) {
	tds, err := adm.ListTopics(ctx, s.opts.Topics...)
	if err != nil {
		return nil, fmt.Errorf("kafka source: metadata of %v: %w", s.opts.Topics, err)
	}
	var parts []Partition
	for _, t := range s.opts.Topics {
		td, ok := tds[t]
		if !ok {
			return nil, fmt.Errorf("kafka source: topic %q: no metadata", t)
		}
		if td.Err != nil {
			return nil, fmt.Errorf("kafka source: topic %q: %w (does it exist? the source does not create topics)", t, td.Err)
		}
		for p := range td.Partitions {
			parts = append(parts, Partition{Topic: t, Partition: p})
		}
	}
	sortPartitions(parts)
	return parts, nil
}

func sortPartitions(parts []Partition) {
	slices.SortFunc(parts, func(a, b Partition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}

func (s *Source) makePlan(ctx context.Context, adm *kadm.Client) (*startPlan, error) {
	parts, err := s.partitions(ctx, adm)
	if err != nil {
		return nil, err
	}
	plan := &startPlan{known: map[string]bool{}, starts: map[Partition]int64{}, ends: map[Partition]int64{}}
	l := newOffsetLister(&s.opts, adm, parts)
	for _, p := range parts {
		id := p.String()
		plan.ids = append(plan.ids, id)
		plan.known[id] = true
		if plan.starts[p], err = l.start(ctx, p); err != nil {
			return nil, err
		}
		if plan.ends[p], err = l.end(ctx, p); err != nil {
			return nil, err
		}
	}
	return plan, nil
}

// Open starts a reader over the given splits with its own client, reading
// the partitions directly (no consumer group). A split's Position, when
// set, is where it resumes; otherwise it starts as Splits resolved. The
// reader allocates from info.Allocator (memory.DefaultAllocator when info
// or it is nil); without info, or with Parallelism 0, it acts as subtask 0
// of 1, which matters only for the owner of discovered partitions.
func (s *Source) Open(info *arrowflow.TaskInfo, splits []arrowflow.SplitState) (arrowflow.SourceReader, error) {
	rd, err := s.open(info, splits)
	if err != nil {
		return nil, s.opts.Security.ExplainError(err, s.opts.Brokers)
	}
	return rd, nil
}

func (s *Source) open(info *arrowflow.TaskInfo, splits []arrowflow.SplitState) (*reader, error) {
	ti := arrowflow.TaskInfo{Parallelism: 1}
	if info != nil {
		ti = *info
	}
	if ti.Allocator == nil {
		ti.Allocator = memory.DefaultAllocator
	}
	if ti.Logger == nil {
		ti.Logger = slog.New(slog.DiscardHandler)
	}
	if ti.Clock == nil {
		ti.Clock = arrowflow.SystemClock
	}
	if ti.Parallelism == 0 {
		ti.Parallelism = 1 // a TaskInfo built by hand
	}
	if ti.Parallelism < 1 || ti.Subtask < 0 || ti.Subtask >= ti.Parallelism {
		return nil, fmt.Errorf("kafka source: subtask %d of parallelism %d", ti.Subtask, ti.Parallelism)
	}
	type opened struct {
		id  string
		tp  Partition
		pos *position // nil: as planned
	}
	var (
		want []opened
		seen = map[string]bool{}
	)
	for _, st := range splits {
		tp, err := ParsePartition(st.Split)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(s.opts.Topics, tp.Topic) {
			return nil, fmt.Errorf("kafka source: split %s is not a partition of the source's topics %v; was 'topic' changed since the checkpoint?", st.Split, s.opts.Topics)
		}
		if seen[st.Split] {
			return nil, fmt.Errorf("kafka source: split %s given twice", st.Split)
		}
		seen[st.Split] = true
		o := opened{id: st.Split, tp: tp}
		if st.Position != nil {
			p, err := decodePosition(st.Split, st.Position)
			if err != nil {
				return nil, err
			}
			o.pos = &p
		}
		want = append(want, o)
	}

	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	cl, err := s.newClient(s.consumerOpts()...)
	if err != nil {
		return nil, err
	}
	var rd *reader
	ok := false
	defer func() {
		switch {
		case ok:
		case rd != nil:
			rd.Close() // closes cl too
		default:
			cl.Close()
		}
	}()
	adm := kadm.NewClient(cl)
	s.mu.Lock()
	plan := s.plan
	s.mu.Unlock()
	if plan == nil {
		// Open without Splits (a reader driven by hand): list now.
		if plan, err = s.makePlan(ctx, adm); err != nil {
			return nil, err
		}
	}
	dlqLimit := 0
	if s.opts.OnError == DeadLetterOnError {
		if err := s.checkTopic(ctx, adm, s.opts.DeadLetterTopic); err != nil {
			return nil, err
		}
		dlqLimit = s.deadLetterLimit(ctx, adm)
	}

	rd = newReader(s, &ti, cl)
	if dlqLimit > 0 {
		if rd.dlq, err = s.newDeadLetters(dlqLimit); err != nil {
			return nil, err
		}
	}
	var missing []Partition // splits the plan does not know (created since)
	for _, o := range want {
		if _, ok := plan.starts[o.tp]; !ok {
			missing = append(missing, o.tp)
		}
	}
	var (
		l   *offsetLister
		add []newSplit
	)
	if len(missing) > 0 {
		l = newOffsetLister(&s.opts, adm, missing)
	}
	for _, o := range want {
		start, planned := plan.starts[o.tp]
		end := plan.ends[o.tp]
		if !planned {
			if start, err = l.start(ctx, o.tp); err != nil {
				return nil, err
			}
			if end, err = l.end(ctx, o.tp); err != nil {
				return nil, err
			}
		}
		pos := position{next: start, end: end}
		if o.pos != nil {
			pos.next = o.pos.next
			if s.bounded() && o.pos.end >= 0 {
				pos.end = o.pos.end // the range of the run that started the job
			}
		}
		if !s.bounded() {
			pos.end = -1
		}
		add = append(add, newSplit{id: o.id, tp: o.tp, pos: pos})
	}
	rd.addSplits(add)
	known := make(map[string]bool, len(plan.known)+len(want))
	for id := range plan.known {
		known[id] = true
	}
	for _, o := range want {
		known[o.id] = true
	}
	rd.start(known)
	s.mu.Lock()
	if s.clients == nil {
		s.clients = map[*kgo.Client]bool{}
	}
	s.clients[cl] = true
	s.mu.Unlock()
	ok = true
	return rd, nil
}

// consumerOpts are the options of a reader's client.
func (s *Source) consumerOpts() []kgo.Opt {
	iso := kgo.ReadCommitted()
	if s.opts.Isolation == ReadUncommitted {
		iso = kgo.ReadUncommitted()
	}
	return []kgo.Opt{
		kgo.FetchIsolationLevel(iso),
		// Control records (transaction markers) come back so that a
		// position moves past them: a bounded partition whose last
		// offset is a commit marker reaches its end offset.
		kgo.KeepControlRecords(),
		// Where a position fell out of the log (retention), resume at the
		// log start, as Flink's earliest reset does.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// A partition adopted by discovery is fetched once the client's
		// metadata knows it and the fetch in flight (which the broker
		// holds up to FetchMaxWait when there is nothing new) returned:
		// franz-go's defaults of 5 s for both would delay new partitions
		// that long. 500 ms is the Java consumer's fetch.max.wait.ms.
		kgo.MetadataMinAge(500 * time.Millisecond),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}
}

// checkTopic fails unless topic exists.
func (s *Source) checkTopic(ctx context.Context, adm *kadm.Client, topic string) error {
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("kafka source: metadata of dead-letter topic %q: %w", topic, err)
	}
	if td, ok := tds[topic]; !ok || td.Err != nil {
		var terr error = errors.New("not found")
		if ok {
			terr = td.Err
		}
		return fmt.Errorf("kafka source: dead-letter topic %q: %w; create it first", topic, terr)
	}
	return nil
}

// EpochCommitted commits the epoch's positions as the offsets of
// Options.GroupID (when set), so that consumer-lag tools see the job's
// progress. It commits as an admin client, which Kafka accepts only for a
// group without active members. Nothing depends on these offsets except
// StartGroupOffsets; errors are returned for the runtime to log. The
// positions are also what Lag counts from.
func (s *Source) EpochCommitted(ctx context.Context, epoch uint64, positions []arrowflow.SplitState) error {
	s.noteCommitted(positions)
	if s.opts.GroupID == "" || len(positions) == 0 {
		return nil
	}
	offs := make(kadm.Offsets)
	for _, st := range positions {
		if st.Position == nil {
			continue
		}
		tp, err := ParsePartition(st.Split)
		if err != nil {
			return err
		}
		p, err := decodePosition(st.Split, st.Position)
		if err != nil {
			return err
		}
		offs.Add(kadm.Offset{Topic: tp.Topic, Partition: tp.Partition, At: p.next, LeaderEpoch: -1,
			Metadata: fmt.Sprintf("weir epoch %d", epoch)})
	}
	if len(offs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var borrowed *kgo.Client
	s.mu.Lock()
	for cl := range s.clients {
		borrowed = cl
		break
	}
	s.mu.Unlock()
	err := errors.New("no reader open")
	if borrowed != nil {
		err = kadm.NewClient(borrowed).CommitAllOffsets(ctx, s.opts.GroupID, offs)
	}
	if err != nil && ctx.Err() == nil {
		// No reader open any more (the final epoch of a bounded job), or
		// it closed meanwhile: connect for this commit.
		cl, cerr := s.newClient()
		if cerr != nil {
			return cerr
		}
		defer cl.Close()
		err = kadm.NewClient(cl).CommitAllOffsets(ctx, s.opts.GroupID, offs)
	}
	if err != nil {
		return fmt.Errorf("kafka source: commit offsets of epoch %d for group %q: %w", epoch, s.opts.GroupID, err)
	}
	return nil
}

// forget drops a closing reader's client from those EpochCommitted
// borrows.
func (s *Source) forget(cl *kgo.Client) {
	s.mu.Lock()
	delete(s.clients, cl)
	s.mu.Unlock()
}
