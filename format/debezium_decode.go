package format

import "errors"

// newDebeziumDecoderConfig makes a debezium-json decoder (being built).
func newDebeziumDecoderConfig(cfg Config, o *options) (Decoder, error) {
	return nil, errors.New("debezium-json: reading Debezium change events is being built")
}
