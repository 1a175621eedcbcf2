package format

import "errors"

// MaxwellJSON is the name of the maxwell-json format (Maxwell's change events).
const MaxwellJSON = "maxwell-json"

func newMaxwellDecoderConfig(cfg Config, o *options) (Decoder, error) {
	return nil, errors.New("maxwell-json: being built")
}

func newMaxwellEncoderConfig(cfg Config, o *options) (Encoder, error) {
	return nil, errors.New("maxwell-json: being built")
}
