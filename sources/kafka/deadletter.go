package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Headers added to every dead-letter record, after the original record's
// own headers. Its key, value and timestamp are the original record's,
// unless the record is larger than the dead-letter topic accepts: then it
// carries HeaderTruncated and HeaderOriginalSize, and its value is cut.
const (
	// HeaderError holds the decoder's reason for rejecting the record.
	HeaderError = "weir.error"
	// HeaderTopic holds the topic the record was read from.
	HeaderTopic = "weir.source.topic"
	// HeaderPartition holds its partition, in decimal.
	HeaderPartition = "weir.source.partition"
	// HeaderOffset holds its offset, in decimal.
	HeaderOffset = "weir.source.offset"
	// HeaderTruncated is "true" on a dead letter whose value was cut, and
	// its error text clipped, to fit the dead-letter topic's
	// max.message.bytes (or, when even the cut record was refused, whose
	// key, value and original headers were dropped). Counted in
	// Stats.DeadLetterTruncated.
	HeaderTruncated = "weir.truncated"
	// HeaderOriginalSize holds the original value's length in bytes, in
	// decimal, on a truncated dead letter.
	HeaderOriginalSize = "weir.original.size"
)

// DefaultMaxMessageBytes is Kafka's default max.message.bytes (the
// broker's message.max.bytes), which the dead-letter writer assumes when
// it cannot read the dead-letter topic's configuration.
const DefaultMaxMessageBytes = 1048588

const (
	// deadLetterFlushTimeout bounds how long a barrier waits for
	// dead-letter records to be acknowledged.
	deadLetterFlushTimeout = 30 * time.Second
	// batchOverhead is the size of a record batch's header (magic v2),
	// which one record alone in a batch pays.
	batchOverhead = 61
	// recordHeadroom covers a record's framing (length, attributes,
	// timestamp and offset deltas, lengths of key, value and header
	// count) with room to spare.
	recordHeadroom = 64
	// keepOnRetry: a dead letter refused as too large is written again
	// as it was when its estimated size is at most this (it was refused
	// for the batch it shared with a larger one), else without key,
	// value and original headers.
	keepOnRetry = 1024
	// maxRetryError bounds the error text of a dead letter written again
	// without its payload.
	maxRetryError = 512
)

// deadLetters produces rejected records to the dead-letter topic through
// a producer of its own, whose batches are bounded by the topic's
// max.message.bytes. Sends are asynchronous; flush, called before the
// reader reports positions, waits for them, so a checkpoint never covers
// a rejected record whose dead letter is not written (at least once).
//
// A record larger than the topic accepts is cut to fit (HeaderTruncated);
// if the broker still refuses it (MESSAGE_TOO_LARGE, e.g. because the
// limit could not be read), it is written once more without key, value
// and original headers, keeping the error and source headers. Only a
// refusal of that last form fails the job.
type deadLetters struct {
	cl    *kgo.Client
	topic string
	limit int // the topic's max.message.bytes
	stats *stats

	pending sync.WaitGroup // sends and retries whose promise has not run
	retryMu sync.Mutex     // retries go one at a time, each in its own batch

	mu  sync.Mutex
	err error // the first failed send
}

// deadLetterLimit reads the max.message.bytes of the dead-letter topic,
// DefaultMaxMessageBytes when the broker does not say (no permission to
// describe configurations, an older broker).
func (s *Source) deadLetterLimit(ctx context.Context, adm *kadm.Client) int {
	rcs, err := adm.DescribeTopicConfigs(ctx, s.opts.DeadLetterTopic)
	if err != nil {
		return DefaultMaxMessageBytes
	}
	rc, err := rcs.On(s.opts.DeadLetterTopic, nil)
	if err != nil || rc.Err != nil {
		return DefaultMaxMessageBytes
	}
	for _, c := range rc.Configs {
		if c.Key == "max.message.bytes" && c.Value != nil {
			if n, err := strconv.Atoi(*c.Value); err == nil && n > 0 {
				return n
			}
		}
	}
	return DefaultMaxMessageBytes
}

// newDeadLetters opens the dead-letter producer for a topic accepting
// records of up to limit bytes.
func (s *Source) newDeadLetters(limit int) (*deadLetters, error) {
	// franz-go accepts batch limits from 512 bytes; below that, the cut
	// and the retry still bound each record.
	cl, err := s.newClient(kgo.ProducerBatchMaxBytes(int32(min(max(limit, 512), 1<<30))), kgo.DefaultProduceTopic(s.opts.DeadLetterTopic))
	if err != nil {
		return nil, err
	}
	return &deadLetters{cl: cl, topic: s.opts.DeadLetterTopic, limit: limit, stats: &s.stats}, nil
}

// deadLetter is one dead letter being written.
type deadLetter struct {
	rec       *kgo.Record
	src       Partition
	offset    int64
	reason    string
	origSize  int  // the original value's length
	truncated bool // rec is cut
	retried   bool
}

func (d *deadLetters) send(rec *kgo.Record, reason error) {
	dl := &deadLetter{src: Partition{Topic: rec.Topic, Partition: rec.Partition}, offset: rec.Offset,
		reason: reason.Error(), origSize: len(rec.Value)}
	dl.rec = d.fit(rec, dl)
	d.pending.Add(1)
	d.cl.Produce(context.Background(), dl.rec, func(_ *kgo.Record, err error) { d.done(dl, err) })
}

// weirHeaders are the error and source headers of a dead letter.
func weirHeaders(dl *deadLetter, reason string) []kgo.RecordHeader {
	return []kgo.RecordHeader{
		{Key: HeaderError, Value: []byte(reason)},
		{Key: HeaderTopic, Value: []byte(dl.src.Topic)},
		{Key: HeaderPartition, Value: strconv.AppendInt(nil, int64(dl.src.Partition), 10)},
		{Key: HeaderOffset, Value: strconv.AppendInt(nil, dl.offset, 10)},
	}
}

func truncatedHeaders(dl *deadLetter) []kgo.RecordHeader {
	return []kgo.RecordHeader{
		{Key: HeaderTruncated, Value: []byte("true")},
		{Key: HeaderOriginalSize, Value: strconv.AppendInt(nil, int64(dl.origSize), 10)},
	}
}

// fit returns the dead letter of rec: the original key, value, headers
// and timestamp plus the error and source headers. When the whole would
// exceed the topic's limit, the error text is clipped to a quarter of the
// limit (decoders may quote the record) and the value is cut to the room
// left.
func (d *deadLetters) fit(rec *kgo.Record, dl *deadLetter) *kgo.Record {
	out := &kgo.Record{Topic: d.topic, Key: rec.Key, Value: rec.Value, Timestamp: rec.Timestamp}
	head := func(reason string) []kgo.RecordHeader {
		hs := slices.Grow(slices.Clone(rec.Headers), 6)
		return append(hs, weirHeaders(dl, reason)...)
	}
	if out.Headers = head(dl.reason); estimateSize(out) <= d.limit {
		return out
	}
	dl.truncated = true
	out.Headers = append(head(clip(dl.reason, max(maxRetryError, d.limit/4))), truncatedHeaders(dl)...)
	room := d.limit - estimateSize(&kgo.Record{Key: out.Key, Headers: out.Headers})
	if room > 0 {
		out.Value = rec.Value[:min(room, len(rec.Value))]
		return out
	}
	// The key and headers alone are too large: write what the retry
	// would.
	return d.bare(dl, rec.Timestamp)
}

// clip cuts s to at most n bytes (on a rune boundary), marked with "...".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n -= 3
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// bare is the dead letter without key, value and original headers: the
// error (clipped) and source headers, marked truncated.
func (d *deadLetters) bare(dl *deadLetter, ts time.Time) *kgo.Record {
	hs := append(weirHeaders(dl, clip(dl.reason, maxRetryError)), truncatedHeaders(dl)...)
	dl.truncated = true
	return &kgo.Record{Topic: d.topic, Headers: hs, Timestamp: ts}
}

// estimateSize bounds the bytes a record takes alone in a batch.
func estimateSize(r *kgo.Record) int {
	n := batchOverhead + recordHeadroom + len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += varintLen(len(h.Key)) + len(h.Key) + varintLen(len(h.Value)) + len(h.Value)
	}
	return n
}

func varintLen(n int) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], int64(n))
}

// done is a send's promise: it counts the dead letter, retries it once
// when the broker found it too large, or records the error.
func (d *deadLetters) done(dl *deadLetter, err error) {
	defer d.pending.Done()
	switch {
	case err == nil:
		d.stats.deadLettered.Add(1)
		if dl.truncated {
			d.stats.deadLetterTruncated.Add(1)
		}
		return
	case errors.Is(err, kerr.MessageTooLarge) && !dl.retried:
		retry := *dl
		retry.retried = true
		if estimateSize(dl.rec) > keepOnRetry {
			retry.rec = d.bare(&retry, dl.rec.Timestamp)
		} else {
			r := dl.rec
			retry.rec = &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}
		}
		// A promise must not produce synchronously (it could wait for
		// buffer space only promises free); pending keeps flush waiting.
		d.pending.Add(1)
		go d.retry(&retry)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err == nil {
		d.err = fmt.Errorf("kafka source: write record %s offset %d to dead-letter topic %q: %w", dl.src, dl.offset, d.topic, err)
	}
}

// retry writes a refused dead letter again, alone in its batch.
func (d *deadLetters) retry(dl *deadLetter) {
	d.retryMu.Lock()
	defer d.retryMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), deadLetterFlushTimeout)
	defer cancel()
	d.done(dl, d.cl.ProduceSync(ctx, dl.rec).FirstErr()) // done's Done is the one added for this retry
}

// failed returns the first failed send, if any.
func (d *deadLetters) failed() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// flush waits until every record sent (and every retry) is acknowledged.
func (d *deadLetters) flush() error {
	ctx, cancel := context.WithTimeout(context.Background(), deadLetterFlushTimeout)
	defer cancel()
	if err := d.cl.Flush(ctx); err != nil {
		return fmt.Errorf("kafka source: flush dead-letter topic %q: %w", d.topic, err)
	}
	waited := make(chan struct{})
	go func() {
		d.pending.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-ctx.Done():
		return fmt.Errorf("kafka source: flush dead-letter topic %q: %w", d.topic, ctx.Err())
	}
	return d.failed()
}

// close closes the producer; records not flushed fail.
func (d *deadLetters) close() { d.cl.Close() }
