package format

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/weirflow/weir/arrowflow"
)

// Decoder turns serialized record values into rows of an Arrow schema. A
// Decoder is safe for concurrent use; each goroutine builds batches through
// its own BatchBuilder.
type Decoder interface {
	// Schema is the schema of the batches the decoder builds.
	Schema() *arrow.Schema
	// NewBuilder starts a batch builder allocating from mem.
	NewBuilder(mem memory.Allocator) BatchBuilder
}

// BatchBuilder accumulates decoded rows into one batch at a time. It is
// not safe for concurrent use.
type BatchBuilder interface {
	// Append decodes value as the next row. On error the record is
	// rejected: it is not part of the batch, the builder stays usable, and
	// the error (a *RecordError) says what is wrong and where in the value.
	// An error that is not a *RecordError is not about the record (the
	// schema registry could not be reached): the same value may decode
	// later, and a connector should not count it as a bad record.
	Append(value []byte) error
	// Len is the number of rows accepted since the last NewRecord.
	Len() int
	// NewRecord returns the accepted rows as a record batch (the caller
	// owns its reference) and starts an empty batch.
	NewRecord() arrow.RecordBatch
	// Release frees the builder's buffers. The builder holds no allocator
	// memory between NewRecord calls (its scratch is Go memory), so
	// Release only drops rows not yet returned.
	Release()
}

// Encoder serializes rows of record batches. An Encoder is safe for
// concurrent use. Its schema is fixed when it is made: a batch whose
// column types differ is an error.
type Encoder interface {
	// Encode serializes every row of rec in order, calling emit with the
	// row index and its bytes; value is only valid during the call. An
	// error from emit stops the encoding and is returned.
	Encode(rec arrow.RecordBatch, emit func(row int, value []byte) error) error
}

// ChangeEncoder is an Encoder of a format that carries row kinds, such as
// debezium-json: it writes the rows of a changelog (arrowflow.Batch.Kinds)
// so that a reader can apply them, retractions included. A sink given a
// ChangeEncoder passes each batch's row kinds; other encoders see
// append-only rows only.
type ChangeEncoder interface {
	Encoder
	// EncodeChanges serializes every row of rec in order, kinds[row]
	// being the row's kind (nil: every row is an insert), calling emit
	// with the row index and its bytes, one value per row; value is only
	// valid during the call. An error from emit stops the encoding and is
	// returned.
	EncodeChanges(rec arrow.RecordBatch, kinds []arrowflow.RowKind, emit func(row int, value []byte) error) error
}

// CarriesChanges reports whether the format named name writes row kinds
// (its encoders are ChangeEncoders), so that a sink writing it takes an
// updating query's changelog.
func CarriesChanges(name string) bool {
	switch name {
	case DebeziumJSON, CanalJSON, MaxwellJSON, DebeziumAvroConfluent:
		return true
	}
	return false
}

// ChangeDecoder is a Decoder of a format whose records are change events
// (debezium-json, canal-json, maxwell-json, debezium-avro-confluent): one
// record decodes into no row, one row, or several rows (an update's
// before and after images), each with its row kind. A connector given a
// ChangeDecoder builds batches with NewChangeBuilder and passes the row
// kinds on (arrowflow.Batch.Kinds).
type ChangeDecoder interface {
	Decoder
	// NewChangeBuilder starts a change batch builder allocating from mem.
	NewChangeBuilder(mem memory.Allocator) ChangeBatchBuilder
}

// ChangeBatchBuilder accumulates the rows of decoded change events. It is
// not safe for concurrent use. Its Append decodes a change event as
// AppendChange does, and its NewRecord drops the row kinds.
type ChangeBatchBuilder interface {
	BatchBuilder
	// AppendChange decodes value, one change event, and returns how many
	// rows it added to the batch (0 for an event that changes nothing).
	// On error nothing is added, the builder stays usable, and the error
	// is a *RecordError when the record is at fault (as Append).
	AppendChange(value []byte) (int, error)
	// NewChangeRecord returns the accepted rows as a record batch (the
	// caller owns its reference) with one row kind per row, and starts an
	// empty batch.
	NewChangeRecord() (arrow.RecordBatch, []arrowflow.RowKind)
}

// RecordError describes why one record was rejected.
type RecordError struct {
	// Format is the format's name ("json", "avro-confluent", ...).
	Format string
	// Field is the column being decoded, when known.
	Field string
	// Offset is the byte offset in the value where decoding failed, or -1.
	Offset int
	// Err is the reason.
	Err error
}

// Error says "<format>: field <field>: at byte <offset>: <reason>", leaving
// out the parts that are unknown.
func (e *RecordError) Error() string {
	s := e.Format + ": "
	if e.Field != "" {
		s += "field " + e.Field + ": "
	}
	if e.Offset >= 0 {
		s += "at byte " + itoa(e.Offset) + ": "
	}
	return s + e.Err.Error()
}

// Unwrap returns Err.
func (e *RecordError) Unwrap() error { return e.Err }

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
