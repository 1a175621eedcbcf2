package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/format"
	"github.com/weirflow/weir/internal/failpoint"
	kafkasrc "github.com/weirflow/weir/sources/kafka"
)

// Guarantee is the sink's delivery guarantee (Flink's
// 'sink.delivery-guarantee').
type Guarantee string

const (
	// ExactlyOnce writes each epoch of each subtask in one Kafka
	// transaction, committed once the epoch's checkpoint is recorded.
	// read_committed consumers see every record exactly once.
	ExactlyOnce Guarantee = "exactly-once"
	// AtLeastOnce writes with an idempotent producer and flushes at every
	// epoch barrier: nothing is lost, but records written after the last
	// checkpoint are written again after a failure.
	AtLeastOnce Guarantee = "at-least-once"
)

// Partitioners for Options.Partitioner (Flink's 'sink.partitioner').
const (
	// PartitionDefault hashes the record key with Kafka's murmur2, as the
	// Java client does, so that keys land where other producers put them;
	// records without a key are spread in sticky batches.
	PartitionDefault = "default"
	// PartitionFixed sends each subtask's records to one partition:
	// subtask mod partitions.
	PartitionFixed = "fixed"
	// PartitionRoundRobin spreads records over all partitions in turn.
	PartitionRoundRobin = "round-robin"
)

// DefaultTransactionTimeout is the default transaction timeout: a job may
// be down about this long between pre-committing an epoch and committing
// it before the broker aborts the transaction (weir then recomputes the
// epoch; see the package documentation).
const DefaultTransactionTimeout = 15 * time.Minute

// DefaultPool is the default number of transactional ids per subtask.
const DefaultPool = 8

// Options configure a Kafka sink. Flink's Kafka connector option names are
// given where one exists.
type Options struct {
	// Brokers are the seed brokers ('properties.bootstrap.servers').
	Brokers []string
	// Topic is the topic written to ('topic').
	Topic string
	// Encoder serializes rows into record values ('value.format'). A
	// format.ChangeEncoder (debezium-json) is given each batch's row
	// kinds, so the sink writes an updating query's changelog; any other
	// encoder takes append-only rows, and a batch retracting rows
	// (UpdateBefore, Delete) is an error.
	Encoder format.Encoder
	// KeyColumns are the columns forming the record key ('key.fields');
	// none means records have no key.
	KeyColumns []string
	// ValueColumns are the columns the value encoder is given, in order;
	// nil gives it every column. Flink's 'value.fields-include' =
	// 'EXCEPT_KEY' leaves the key columns out of the value.
	ValueColumns []string
	// Upsert makes the sink Flink's upsert-kafka sink: the input is a
	// changelog keyed by KeyColumns (the table's PRIMARY KEY), whose
	// inserts and update-afters are written as key and value, deletes as
	// a tombstone (the key and a null value), and update-befores dropped
	// (counted by UpdateBeforesDropped): the last record of a key in the
	// topic is its latest value, or a tombstone once deleted. It needs key
	// columns and a value encoder of rows (not a format.ChangeEncoder),
	// and partitions by the key (PartitionDefault) so that a key's records
	// stay in order in one partition.
	Upsert bool
	// BufferFlushMaxRows and BufferFlushInterval, both positive, make an
	// upsert sink keep only the latest change of each key in a buffer
	// flushed when it holds BufferFlushMaxRows keys, when
	// BufferFlushInterval has passed since the last flush (checked as
	// rows arrive), and at every epoch barrier ('sink.buffer-flush.max-rows',
	// 'sink.buffer-flush.interval'; Flink's defaults, 0, leave buffering
	// off). A key updated many times in an epoch is then written once.
	BufferFlushMaxRows  int
	BufferFlushInterval time.Duration
	// KeyEncoder serializes the key columns ('key.format'). Nil with one
	// key column writes that column's value as the key's raw bytes
	// (strings and binaries as they are, integers as decimal text).
	KeyEncoder format.Encoder
	// TimestampColumn, when set, names a timestamp column whose value
	// becomes each record's timestamp; otherwise the producer's clock
	// sets it.
	TimestampColumn string
	// Partitioner picks records' partitions ('sink.partitioner'):
	// PartitionDefault (empty), PartitionFixed or PartitionRoundRobin.
	Partitioner string
	// DeliveryGuarantee is ExactlyOnce (the default) or AtLeastOnce
	// ('sink.delivery-guarantee').
	DeliveryGuarantee Guarantee
	// TransactionalIDPrefix prefixes the sink's transactional ids
	// ('sink.transactional-id-prefix'); the job's name by default. Two
	// jobs writing to one cluster must not share a prefix.
	TransactionalIDPrefix string
	// TransactionTimeout is the producers' transaction timeout
	// ('properties.transaction.timeout.ms'); DefaultTransactionTimeout
	// when zero. It must not exceed the brokers'
	// transaction.max.timeout.ms.
	TransactionTimeout time.Duration
	// Pool is the number of transactional ids (and producers) per
	// subtask, DefaultPool when zero: an id is reused Pool epochs later,
	// so up to Pool-2 epochs may be pre-committed and not yet recorded
	// before a writer waits.
	Pool int
	// Security is how every client of the sink reaches the brokers: TLS,
	// mTLS, SASL PLAIN or SCRAM ('properties.security.protocol',
	// 'properties.sasl.*', 'properties.ssl.*'; see kafkasrc.ParseSecurity
	// of package sources/kafka).
	Security kafkasrc.Security
	// ClientOpts are added to every client the sink creates, after
	// Security's (see docs/kafka.md).
	ClientOpts []kgo.Opt
	// Logger receives recovery messages; slog.Default() when nil.
	Logger *slog.Logger
}

// Sink writes rows to a Kafka topic. With ExactlyOnce, each subtask writes
// each epoch in its own transaction under one of Pool transactional ids,
// prefix-<subtask>-<epoch mod Pool>: PreCommit flushes the transaction and
// records its producer id and epoch in the checkpoint; Commit ends it. On
// recovery, Commit completes the recorded transactions with raw EndTxn
// requests and Recover aborts every open transaction under the prefix.
type Sink struct {
	opts   Options
	logger *slog.Logger
	// secOpts are Options.Security's client options, built once.
	secOpts []kgo.Opt

	mu        sync.Mutex
	slots     map[slotKey]*slot
	committed uint64        // highest epoch committed by this process
	changed   chan struct{} // closed and replaced when committed grows
	writers   int           // open writers
	closed    bool
	produced  atomic.Int64
	// droppedUB counts update-befores an upsert sink did not write;
	// folded counts changes a buffer replaced by a later one of the key.
	droppedUB, folded atomic.Int64
	// claimJob, claimID and claimData are the job, owner ID and owner
	// record of the last Claim (see owner.go): commits check the record
	// still names claimID; claimRecorded is set once it was written.
	claimJob, claimID, claimData string
	claimRecorded                bool
}

// Produced is the number of records the brokers acknowledged, in
// committed transactions or not.
func (s *Sink) Produced() int64 { return s.produced.Load() }

// UpdateBeforesDropped is the number of update-before rows an upsert sink
// left out: the update-after that follows replaces the key's value.
func (s *Sink) UpdateBeforesDropped() int64 { return s.droppedUB.Load() }

// Folded is the number of changes an upsert sink's buffer
// (BufferFlushMaxRows) did not write because a later change of the same
// key replaced them before a flush.
func (s *Sink) Folded() int64 { return s.folded.Load() }

type slotKey struct {
	subtask int
	index   int
}

// slot is one transactional id of a subtask and its producer.
type slot struct {
	txnID  string
	client *kgo.Client
	// pending is the epoch whose pre-committed transaction the client
	// holds open, 0 when none.
	pending uint64
	pid     int64
	pepoch  int16
}

// New checks opts and returns a sink.
func New(opts Options) (*Sink, error) {
	if len(opts.Brokers) == 0 {
		return nil, errors.New("kafka sink: no brokers (properties.bootstrap.servers)")
	}
	if opts.Topic == "" {
		return nil, errors.New("kafka sink: no topic")
	}
	if opts.Encoder == nil {
		return nil, errors.New("kafka sink: no value encoder (value.format)")
	}
	switch opts.DeliveryGuarantee {
	case "":
		opts.DeliveryGuarantee = ExactlyOnce
	case ExactlyOnce, AtLeastOnce:
	default:
		return nil, fmt.Errorf("kafka sink: delivery guarantee %q: want %q or %q", opts.DeliveryGuarantee, ExactlyOnce, AtLeastOnce)
	}
	switch opts.Partitioner {
	case "":
		opts.Partitioner = PartitionDefault
	case PartitionDefault, PartitionFixed, PartitionRoundRobin:
	default:
		return nil, fmt.Errorf("kafka sink: partitioner %q: want %q, %q or %q", opts.Partitioner, PartitionDefault, PartitionFixed, PartitionRoundRobin)
	}
	if len(opts.KeyColumns) > 1 && opts.KeyEncoder == nil {
		return nil, fmt.Errorf("kafka sink: key columns %v need a key format (key.format)", opts.KeyColumns)
	}
	if err := checkUpsert(&opts); err != nil {
		return nil, err
	}
	if opts.TransactionTimeout == 0 {
		opts.TransactionTimeout = DefaultTransactionTimeout
	}
	if opts.Pool == 0 {
		opts.Pool = DefaultPool
	}
	if opts.Pool < 3 {
		return nil, fmt.Errorf("kafka sink: pool %d: at least 3 transactional ids per subtask", opts.Pool)
	}
	if strings.ContainsAny(opts.TransactionalIDPrefix, " \t\n") {
		return nil, fmt.Errorf("kafka sink: transactional id prefix %q contains white space", opts.TransactionalIDPrefix)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	secOpts, err := opts.Security.Opts()
	if err != nil {
		return nil, fmt.Errorf("kafka sink: %w", err)
	}
	opts.Security = opts.Security.Redacted() // secOpts hold the secrets from here on
	return &Sink{opts: opts, logger: logger, secOpts: secOpts, slots: map[slotKey]*slot{}, changed: make(chan struct{})}, nil
}

// PreCommitsExpire implements arrowflow.ExpiringSink: with ExactlyOnce,
// the broker aborts a pre-committed transaction when its timeout expires.
func (s *Sink) PreCommitsExpire() bool { return s.opts.DeliveryGuarantee == ExactlyOnce }

func (s *Sink) prefix(job string) string {
	if s.opts.TransactionalIDPrefix != "" {
		return s.opts.TransactionalIDPrefix
	}
	return job
}

// baseOpts are the options of every client the sink creates: the
// brokers, Options.Security's options, then Options.ClientOpts.
func (s *Sink) baseOpts() []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(s.opts.Brokers...), kgo.DefaultProduceTopic(s.opts.Topic)}
	opts = append(opts, s.secOpts...)
	return append(opts, s.opts.ClientOpts...)
}

func (s *Sink) producerOpts(subtask int) []kgo.Opt {
	// As the Java producer does, ask for the topic to be created when it
	// is missing; brokers decide (auto.create.topics.enable).
	opts := append(s.baseOpts(), kgo.AllowAutoTopicCreation())
	switch s.opts.Partitioner {
	case PartitionFixed:
		opts = append(opts, kgo.RecordPartitioner(kgo.BasicConsistentPartitioner(func(string) func(*kgo.Record, int) int {
			return func(_ *kgo.Record, n int) int { return subtask % n }
		})))
	case PartitionRoundRobin:
		opts = append(opts, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	default:
		opts = append(opts, kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	}
	return opts
}

// Open implements arrowflow.Sink.
func (s *Sink) Open(info *arrowflow.TaskInfo) (arrowflow.SinkWriter, error) {
	w := &writer{s: s, info: info, epoch: info.FirstEpoch, prefix: s.prefix(info.Job)}
	if w.epoch == 0 {
		w.epoch = 1
	}
	if s.opts.Upsert && s.opts.BufferFlushMaxRows > 0 {
		w.buf = &upsertBuffer{byKey: map[string]int{}, last: w.now()}
	}
	if s.opts.DeliveryGuarantee == AtLeastOnce {
		cl, err := kgo.NewClient(s.producerOpts(info.Subtask)...)
		if err != nil {
			return nil, fmt.Errorf("kafka sink: %w", err)
		}
		w.alo = cl
	}
	s.mu.Lock()
	s.writers++
	s.mu.Unlock()
	return w, nil
}

// acquire returns subtask's slot for epoch, once it may be reused: the
// slot's previous epoch (epoch - Pool) must be committed, and so must
// epoch - Pool + 1, so that no checkpoint recovery could still commit
// again (or recompute from) an epoch whose id the new transaction fences.
// Epochs before the run's first are free: recovery committed or aborted
// them.
func (s *Sink) acquire(ctx context.Context, w *writer) (*slot, error) {
	pool := uint64(s.opts.Pool)
	epoch := w.epoch
	first := w.info.FirstEpoch
	key := slotKey{w.info.Subtask, int(epoch % pool)}
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, errors.New("kafka sink: closed")
		}
		need := epoch + 1 // epoch - pool + 1, without underflow
		free := need <= pool || need-pool+1 < first || s.committed+pool >= need
		sl := s.slots[key]
		if free && (sl == nil || sl.pending == 0) {
			if sl == nil {
				sl = &slot{txnID: fmt.Sprintf("%s-%d-%d", w.prefix, w.info.Subtask, key.index)}
				s.slots[key] = sl
			}
			if sl.client == nil {
				opts := append(s.producerOpts(w.info.Subtask), kgo.TransactionalID(sl.txnID), kgo.TransactionTimeout(s.opts.TransactionTimeout))
				cl, err := kgo.NewClient(opts...)
				if err != nil {
					s.mu.Unlock()
					return nil, fmt.Errorf("kafka sink: %w", err)
				}
				sl.client = cl
			}
			s.mu.Unlock()
			return sl, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ch:
		}
	}
}

// Commit implements arrowflow.Sink: it ends every subtask's transaction
// of the epoch with a commit, through the producer that wrote it when this
// process still has it, else with an EndTxn request carrying the recorded
// transactional id, producer id and epoch. Committing a committed
// transaction again succeeds. When the broker answers that a transaction
// was aborted, the error is an *arrowflow.AbortedEpochError.
func (s *Sink) Commit(ctx context.Context, epoch uint64, payloads [][]byte) error {
	if s.opts.DeliveryGuarantee != ExactlyOnce {
		return nil
	}
	if slices.ContainsFunc(payloads, func(p []byte) bool { return p != nil }) {
		if err := s.checkOwner(ctx); err != nil {
			return err
		}
	}
	e := s.ender()
	defer e.close()
	var aborted, committed []int
	var reason error
	for sub, p := range payloads {
		if p == nil {
			continue
		}
		t, err := decodeTxn(epoch, sub, p)
		if err != nil {
			return err
		}
		wasAborted, err := e.end(ctx, sub, epoch, t, true)
		switch {
		case wasAborted:
			aborted = append(aborted, sub)
			reason = err
		case err != nil:
			return fmt.Errorf("kafka sink: commit epoch %d of subtask %d (transaction %s): %w", epoch, sub, t.TxnID, err)
		default:
			committed = append(committed, sub)
			failpoint.Inject(failpoint.MidCommit)
		}
	}
	if len(aborted) > 0 {
		return &arrowflow.AbortedEpochError{Epoch: epoch, Aborted: aborted, Committed: committed, Reason: reason}
	}
	s.mu.Lock()
	if epoch > s.committed {
		s.committed = epoch
		close(s.changed)
		s.changed = make(chan struct{})
	}
	s.mu.Unlock()
	return nil
}

func decodeTxn(epoch uint64, sub int, p []byte) (txnRecord, error) {
	var t txnRecord
	if err := json.Unmarshal(p, &t); err != nil {
		return t, fmt.Errorf("kafka sink: epoch %d subtask %d: bad pre-commit payload: %w", epoch, sub, err)
	}
	return t, nil
}

// txnEnder ends recorded transactions: through the producer that wrote
// one when this process still has it, else with a raw EndTxn from a
// plain client made on first need.
type txnEnder struct {
	s   *Sink
	raw *kgo.Client
}

func (s *Sink) ender() *txnEnder { return &txnEnder{s: s} }

// end commits or aborts t and reports whether the broker had aborted it.
func (e *txnEnder) end(ctx context.Context, sub int, epoch uint64, t txnRecord, commit bool) (aborted bool, err error) {
	if sl := e.s.live(sub, epoch, t); sl != nil {
		how := kgo.TryAbort
		if commit {
			how = kgo.TryCommit
		}
		err = sl.client.EndTransaction(ctx, how)
		e.s.release(sl)
		return err != nil && abortedAnswer(err), err
	}
	if e.raw == nil {
		if e.raw, err = kgo.NewClient(e.s.baseOpts()...); err != nil {
			return false, fmt.Errorf("kafka sink: %w", err)
		}
	}
	return endTxn(ctx, e.raw, t, commit)
}

func (e *txnEnder) close() {
	if e.raw != nil {
		e.raw.Close()
	}
}

// live returns the slot whose producer holds t open for epoch, if this
// process has it.
func (s *Sink) live(sub int, epoch uint64, t txnRecord) *slot {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slots[slotKey{sub, int(epoch % uint64(s.opts.Pool))}]
	if sl == nil || sl.client == nil || sl.pending != epoch || sl.txnID != t.TxnID || sl.pid != t.ProducerID || sl.pepoch != t.ProducerEpoch {
		return nil
	}
	return sl
}

// release marks sl's transaction ended; without open writers its producer
// is closed.
func (s *Sink) release(sl *slot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl.pending = 0
	if s.writers == 0 && sl.client != nil {
		sl.client.Close()
		sl.client = nil
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// Abort implements arrowflow.Sink: it aborts the epoch's transactions.
func (s *Sink) Abort(ctx context.Context, epoch uint64, payloads [][]byte) error {
	if s.opts.DeliveryGuarantee != ExactlyOnce {
		return nil
	}
	e := s.ender()
	defer e.close()
	var errs []error
	for sub, p := range payloads {
		if p == nil {
			continue
		}
		t, err := decodeTxn(epoch, sub, p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// An aborted answer means it is already done.
		if aborted, err := e.end(ctx, sub, epoch, t, false); err != nil && !aborted {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// LastCommittedEpoch implements arrowflow.RecoverableSink. Kafka keeps no
// record of the job's epochs, and the sink needs none: a transaction is
// identified by its producer id and epoch, never by the job's epoch
// number. It returns 0.
func (s *Sink) LastCommittedEpoch(context.Context, string) (uint64, error) { return 0, nil }

// Recover implements arrowflow.RecoverableSink: it aborts every open
// transaction under the job's transactional id prefix, the leftovers of
// epochs pre-committed after the restored checkpoint (their output is
// computed again). It lists transactions with the ListTransactions API
// (Kafka 3.0+); where the cluster refuses, it logs a warning, and the
// leftovers are aborted when a writer reuses their ids or when their
// timeout expires, holding back read_committed consumers until then.
func (s *Sink) Recover(ctx context.Context, job string, committed uint64) error {
	if s.opts.DeliveryGuarantee != ExactlyOnce {
		return nil
	}
	cl, err := kgo.NewClient(s.baseOpts()...)
	if err != nil {
		return fmt.Errorf("kafka sink: %w", err)
	}
	defer cl.Close()
	prefix := s.prefix(job)
	listed, err := kadm.NewClient(cl).ListTransactions(ctx, nil, []string{"Ongoing", "PrepareCommit", "PrepareAbort", "Empty"})
	if err != nil {
		s.logger.Warn("kafka sink: cannot list transactions; open transactions of unfinished epochs are aborted when their ids are reused or time out",
			"topic", s.opts.Topic, "err", err)
		return nil
	}
	for _, t := range listed.Sorted() {
		if t.State != "Ongoing" || !ownTxnID(prefix, t.TxnID) {
			continue
		}
		s.logger.Info("kafka sink: aborting a transaction of an unfinished epoch", "transactional_id", t.TxnID, "producer_id", t.ProducerID)
		if err := fenceTxn(ctx, cl, t.TxnID, s.opts.TransactionTimeout); err != nil {
			return fmt.Errorf("kafka sink: %w", err)
		}
	}
	return nil
}

// ownTxnID reports whether id is one of the sink's transactional ids
// under prefix: prefix-<subtask>-<slot>.
func ownTxnID(prefix, id string) bool {
	rest, ok := strings.CutPrefix(id, prefix+"-")
	if !ok {
		return false
	}
	a, b, ok := strings.Cut(rest, "-")
	if !ok {
		return false
	}
	_, err1 := strconv.ParseUint(a, 10, 32)
	_, err2 := strconv.ParseUint(b, 10, 32)
	return err1 == nil && err2 == nil
}

// Close closes every producer the sink still holds, aborting nothing
// explicitly: open transactions are aborted by the broker when they time
// out, or by Recover on the next start. Call it when a job ends with an
// error.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, sl := range s.slots {
		if sl.client != nil {
			sl.client.Close()
			sl.client = nil
		}
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}

var _ arrowflow.RecoverableSink = (*Sink)(nil)
var _ arrowflow.ExpiringSink = (*Sink)(nil)

// columnIndex returns the index of the named column in schema.
func columnIndex(schema *arrow.Schema, name, what string) (int, error) {
	idx := schema.FieldIndices(name)
	if len(idx) != 1 {
		return 0, fmt.Errorf("kafka sink: %s column %q not in the input schema %s", what, name, schema)
	}
	return idx[0], nil
}
