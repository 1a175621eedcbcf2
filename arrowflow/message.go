package arrowflow

import "fmt"

// MessageKind says what a Message carries.
type MessageKind uint8

const (
	// KindBatch carries a Batch of rows.
	KindBatch MessageKind = iota + 1
	// KindWatermark carries a watermark: no row with an event time at or
	// before it will follow on this input.
	KindWatermark
	// KindBarrier carries an epoch barrier: every row of epoch N precedes
	// barrier N, every row after it belongs to a later epoch.
	KindBarrier
	// KindEndOfStream says the input will carry nothing more.
	KindEndOfStream
	// KindIdle carries a change of the channel's watermark status
	// (Message.Idle): an idle channel sends nothing for a while and must
	// not hold back the watermark of its consumer, which takes the minimum
	// over its active inputs only. Rows from an idle channel are still
	// processed; its watermarks are remembered for when it is active again.
	KindIdle
)

// String names the kind.
func (k MessageKind) String() string {
	switch k {
	case KindBatch:
		return "batch"
	case KindWatermark:
		return "watermark"
	case KindBarrier:
		return "barrier"
	case KindEndOfStream:
		return "end-of-stream"
	case KindIdle:
		return "idle-status"
	}
	return fmt.Sprintf("MessageKind(%d)", uint8(k))
}

// Barrier marks the end of an epoch in a stream.
type Barrier struct {
	// Epoch is the epoch the barrier closes.
	Epoch uint64
	// Savepoint is set when the checkpoint was requested as a savepoint.
	Savepoint bool
	// Stop is set on the barrier of a stop-with-savepoint: sources emit
	// nothing after it, and the job stops once its epoch is committed.
	Stop bool
}

// Message is what travels on the queues between tasks, in order. Exactly
// the field matching Kind is meaningful.
type Message struct {
	Kind      MessageKind
	Batch     Batch
	Watermark EventTime
	Barrier   Barrier
	Idle      bool // KindIdle: true when the channel turned idle, false when active again
}

// release frees what the message owns (only batches own anything).
func (m *Message) release() {
	if m.Kind == KindBatch {
		m.Batch.Release()
		m.Batch = Batch{}
	}
}
