package format

import (
	"context"
	"errors"
)

// DebeziumAvroConfluent is the name of the debezium-avro-confluent format:
// Debezium change events in Avro through a Confluent schema registry.
const DebeziumAvroConfluent = "debezium-avro-confluent"

func newDebeziumAvroDecoderConfig(ctx context.Context, cfg Config, o *options) (Decoder, error) {
	return nil, errors.New("debezium-avro-confluent: being built")
}

func newDebeziumAvroEncoderConfig(ctx context.Context, cfg Config, o *options) (Encoder, error) {
	return nil, errors.New("debezium-avro-confluent: being built")
}
