package kafka

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Headers added to every dead-letter record, after the original record's
// own headers. Its key, value and timestamp are the original record's.
const (
	// HeaderError holds the decoder's reason for rejecting the record.
	HeaderError = "weir.error"
	// HeaderTopic holds the topic the record was read from.
	HeaderTopic = "weir.source.topic"
	// HeaderPartition holds its partition, in decimal.
	HeaderPartition = "weir.source.partition"
	// HeaderOffset holds its offset, in decimal.
	HeaderOffset = "weir.source.offset"
)

// deadLetterFlushTimeout bounds how long a barrier waits for dead-letter
// records to be acknowledged.
const deadLetterFlushTimeout = 30 * time.Second

// deadLetters produces rejected records to the dead-letter topic through
// the reader's client. Sends are asynchronous; flush, called before the
// reader reports positions, waits for them, so a checkpoint never covers
// a rejected record whose dead letter is not written (at least once).
type deadLetters struct {
	cl    *kgo.Client
	topic string
	stats *stats

	mu  sync.Mutex
	err error // the first failed send
}

func (d *deadLetters) send(rec *kgo.Record, reason error) {
	hs := slices.Grow(slices.Clone(rec.Headers), 4)
	hs = append(hs,
		kgo.RecordHeader{Key: HeaderError, Value: []byte(reason.Error())},
		kgo.RecordHeader{Key: HeaderTopic, Value: []byte(rec.Topic)},
		kgo.RecordHeader{Key: HeaderPartition, Value: strconv.AppendInt(nil, int64(rec.Partition), 10)},
		kgo.RecordHeader{Key: HeaderOffset, Value: strconv.AppendInt(nil, rec.Offset, 10)},
	)
	dl := &kgo.Record{Topic: d.topic, Key: rec.Key, Value: rec.Value, Headers: hs, Timestamp: rec.Timestamp}
	src := Partition{Topic: rec.Topic, Partition: rec.Partition}
	off := rec.Offset
	d.cl.Produce(context.Background(), dl, func(_ *kgo.Record, err error) {
		if err == nil {
			d.stats.deadLettered.Add(1)
			return
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.err == nil {
			d.err = fmt.Errorf("kafka source: write record %s offset %d to dead-letter topic %q: %w", src, off, d.topic, err)
		}
	})
}

// failed returns the first failed send, if any.
func (d *deadLetters) failed() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// flush waits until every record sent is acknowledged.
func (d *deadLetters) flush() error {
	ctx, cancel := context.WithTimeout(context.Background(), deadLetterFlushTimeout)
	defer cancel()
	if err := d.cl.Flush(ctx); err != nil {
		return fmt.Errorf("kafka source: flush dead-letter topic %q: %w", d.topic, err)
	}
	return d.failed()
}
