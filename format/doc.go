// Package format converts between bytes and Arrow record batches for
// connectors: JSON, CSV, Avro (plain and with the Confluent Schema Registry
// wire format) and raw values. Decoders write straight into Arrow builders
// from a plan compiled once per schema; no record goes through a
// map[string]any.
//
// A connector asks for a format by name (New*), gets a Decoder or Encoder,
// and applies its own bad-record policy to the errors a BatchBuilder
// returns: a rejected record is never part of the batch.
package format
