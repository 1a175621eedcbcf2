// Package format will convert between bytes and Arrow record batches for
// connectors: JSON, CSV, Avro (with the Confluent Schema Registry wire
// format) and raw values, decoding straight into Arrow builders.
package format
