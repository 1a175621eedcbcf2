package format

import "errors"

// CanalJSON is the name of the canal-json format (Alibaba Canal's change events).
const CanalJSON = "canal-json"

func newCanalDecoderConfig(cfg Config, o *options) (Decoder, error) {
	return nil, errors.New("canal-json: being built")
}

func newCanalEncoderConfig(cfg Config, o *options) (Encoder, error) {
	return nil, errors.New("canal-json: being built")
}
