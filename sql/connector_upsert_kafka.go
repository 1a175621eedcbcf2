package sql

import (
	"context"
	"errors"

	"github.com/weirflow/weir/arrowflow"
)

// upsertKafkaSource opens Flink's upsert-kafka source (docs/cdc.md).
func upsertKafkaSource(ctx context.Context, s scanSpec) (scanSource, error) {
	return scanSource{}, errors.New("upsert-kafka: the source is being built")
}

// upsertKafkaSink opens Flink's upsert-kafka sink (docs/cdc.md).
func upsertKafkaSink(ctx context.Context, s sinkSpec) (arrowflow.Sink, error) {
	return nil, errors.New("upsert-kafka: the sink is being built")
}
