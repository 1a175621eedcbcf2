package kafka

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"
)

// headersType is the type of MetaHeaders columns.
var headersType = arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.Binary)

// metadataField returns the schema field of a metadata column.
func metadataField(m MetadataColumn) (arrow.Field, error) {
	f := arrow.Field{Name: m.name()}
	switch m.Key {
	case MetaTopic, MetaTimestampType:
		f.Type = arrow.BinaryTypes.String
	case MetaPartition:
		f.Type = arrow.PrimitiveTypes.Int32
	case MetaOffset:
		f.Type = arrow.PrimitiveTypes.Int64
	case MetaTimestamp:
		f.Type = arrow.FixedWidthTypes.Timestamp_ms
	case MetaKey:
		f.Type, f.Nullable = arrow.BinaryTypes.Binary, true
	case MetaHeaders:
		f.Type = headersType
	case MetaLeaderEpoch:
		f.Type, f.Nullable = arrow.PrimitiveTypes.Int32, true
	default:
		return arrow.Field{}, fmt.Errorf("kafka source: unknown metadata key %q: want topic, partition, offset, timestamp, timestamp-type, key, headers or leader-epoch", m.Key)
	}
	return f, nil
}

// metaBuilder appends one metadata column's value of each accepted record.
type metaBuilder interface {
	append(r *kgo.Record)
	newArray() arrow.Array
	release()
}

// newMetaBuilder returns the builder of a metadata key checked by
// metadataField.
func newMetaBuilder(mem memory.Allocator, key string) metaBuilder {
	switch key {
	case MetaTopic:
		return &topicBuilder{b: array.NewStringBuilder(mem)}
	case MetaTimestampType:
		return &timestampTypeBuilder{b: array.NewStringBuilder(mem)}
	case MetaPartition:
		return &partitionBuilder{b: array.NewInt32Builder(mem)}
	case MetaOffset:
		return &offsetBuilder{b: array.NewInt64Builder(mem)}
	case MetaTimestamp:
		return &timestampBuilder{b: array.NewTimestampBuilder(mem, arrow.FixedWidthTypes.Timestamp_ms.(*arrow.TimestampType))}
	case MetaKey:
		return &keyBuilder{b: array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)}
	case MetaHeaders:
		mb := array.NewMapBuilderWithType(mem, headersType)
		return &headersBuilder{b: mb, keys: mb.KeyBuilder().(*array.StringBuilder), vals: mb.ItemBuilder().(*array.BinaryBuilder)}
	case MetaLeaderEpoch:
		return &leaderEpochBuilder{b: array.NewInt32Builder(mem)}
	}
	panic("BUG: kafka source: unchecked metadata key " + key)
}

type topicBuilder struct{ b *array.StringBuilder }

func (m *topicBuilder) append(r *kgo.Record)  { m.b.Append(r.Topic) }
func (m *topicBuilder) newArray() arrow.Array { return m.b.NewArray() }
func (m *topicBuilder) release()              { m.b.Release() }

type timestampTypeBuilder struct{ b *array.StringBuilder }

func (m *timestampTypeBuilder) append(r *kgo.Record)  { m.b.Append(timestampTypeName(r.Attrs)) }
func (m *timestampTypeBuilder) newArray() arrow.Array { return m.b.NewArray() }
func (m *timestampTypeBuilder) release()              { m.b.Release() }

// timestampTypeName names a record's timestamp type as Kafka's Java
// TimestampType does (and so Flink's 'timestamp-type' metadata).
func timestampTypeName(a kgo.RecordAttrs) string {
	switch a.TimestampType() {
	case 0:
		return "CreateTime"
	case 1:
		return "LogAppendTime"
	}
	return "NoTimestampType"
}

type partitionBuilder struct{ b *array.Int32Builder }

func (m *partitionBuilder) append(r *kgo.Record)  { m.b.Append(r.Partition) }
func (m *partitionBuilder) newArray() arrow.Array { return m.b.NewArray() }
func (m *partitionBuilder) release()              { m.b.Release() }

type offsetBuilder struct{ b *array.Int64Builder }

func (m *offsetBuilder) append(r *kgo.Record)  { m.b.Append(r.Offset) }
func (m *offsetBuilder) newArray() arrow.Array { return m.b.NewArray() }
func (m *offsetBuilder) release()              { m.b.Release() }

type timestampBuilder struct{ b *array.TimestampBuilder }

func (m *timestampBuilder) append(r *kgo.Record) {
	m.b.Append(arrow.Timestamp(r.Timestamp.UnixMilli()))
}
func (m *timestampBuilder) newArray() arrow.Array { return m.b.NewArray() }
func (m *timestampBuilder) release()              { m.b.Release() }

type keyBuilder struct{ b *array.BinaryBuilder }

func (m *keyBuilder) append(r *kgo.Record) {
	if r.Key == nil {
		m.b.AppendNull()
		return
	}
	m.b.Append(r.Key)
}
func (m *keyBuilder) newArray() arrow.Array { return m.b.NewArray() }
func (m *keyBuilder) release()              { m.b.Release() }

type headersBuilder struct {
	b    *array.MapBuilder
	keys *array.StringBuilder
	vals *array.BinaryBuilder
}

func (m *headersBuilder) append(r *kgo.Record) {
	m.b.Append(true)
	hs := r.Headers
	for i := range hs {
		if laterKey(hs, i) {
			continue // the last value of a repeated key wins
		}
		m.keys.Append(hs[i].Key)
		if hs[i].Value == nil {
			m.vals.AppendNull()
		} else {
			m.vals.Append(hs[i].Value)
		}
	}
}

// laterKey reports whether hs[i]'s key appears again after i. Records
// carry few headers, so the quadratic scan is cheaper than a map.
func laterKey(hs []kgo.RecordHeader, i int) bool {
	for j := i + 1; j < len(hs); j++ {
		if hs[j].Key == hs[i].Key {
			return true
		}
	}
	return false
}

func (m *headersBuilder) newArray() arrow.Array { return m.b.NewArray() }
func (m *headersBuilder) release()              { m.b.Release() }

type leaderEpochBuilder struct{ b *array.Int32Builder }

func (m *leaderEpochBuilder) append(r *kgo.Record) {
	if r.LeaderEpoch < 0 {
		m.b.AppendNull()
		return
	}
	m.b.Append(r.LeaderEpoch)
}
func (m *leaderEpochBuilder) newArray() arrow.Array { return m.b.NewArray() }
func (m *leaderEpochBuilder) release()              { m.b.Release() }
