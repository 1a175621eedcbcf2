// Package format converts between bytes and Arrow record batches for
// connectors: JSON, CSV, Avro (plain and with the Confluent Schema Registry
// wire format), raw values, and change events (debezium-json, canal-json,
// maxwell-json). Decoders write straight into columns from a
// plan compiled once per schema (per writer schema for Avro); no record
// goes through a map[string]any, reflection or encoding/json, and decoding
// allocates nothing per record in steady state.
//
// A connector asks for a format by name (NewDecoder, NewEncoder with a
// Config), gets a Decoder or Encoder, and applies its own bad-record
// policy to the errors a BatchBuilder returns: a rejected record is never
// part of the batch (the builder cuts every column back to the accepted
// rows), and the *RecordError says which field and byte offset are at
// fault.
//
// # Strings and UTF-8
//
// One rule in every format: a string column (string, large_string, at any
// depth: a struct field, a list element, a map key or value) holds only
// valid UTF-8. Flink's json format rejects malformed UTF-8 (Jackson does);
// weir does so in every format, so that a string is always text. A value
// that would put anything else in a string column is a malformed record:
// Append rejects it with a *RecordError naming the field and the offset of
// the first byte that does not begin a valid UTF-8 sequence, wrapping
// ErrInvalidUTF8, and the connector applies its bad-record policy to it
// like to any other malformed record. For json this covers the whole text
// (RFC 8259 JSON is UTF-8): keys, skipped fields, and the strings inside
// an object or array taken as a string column's text. csv checks the
// fields of string columns as written, raw a string column's whole value,
// avro every Avro string or bytes value read into a string column (Avro
// bytes read into a binary column, and writer fields no column takes, are
// not text and not checked). Binary columns take any bytes.
//
// Encoders never fail on text: a string column built elsewhere may hold
// invalid UTF-8 (Arrow does not check), and every encoder writes each byte
// of it that does not begin a valid sequence as U+FFFD, as Flink does when
// it turns such a string into text and as encoding/json does, so that what
// weir writes is well-formed and reads back. A binary column written as an
// Avro string is the exception: bytes that are not text have no faithful
// repair, so invalid UTF-8 there is an encoding error.
//
// # Types
//
// The columns may be of the Arrow types bool, int8-64, uint8-64, float32,
// float64, string, large_string, binary, large_binary, fixed_size_binary,
// decimal128, date32, time32 (s, ms), time64 (us, ns), timestamp (any unit,
// with or without time zone), and, for json and avro, struct, list and
// map with string keys, nested freely. csv takes the scalar types, raw one
// binary or string column.
//
// # json
//
// One object per value, fields matched by name (case-sensitive): unknown
// fields are skipped (but must be valid JSON), a missing nullable field is
// null, a missing or null non-nullable field rejects the record, and so do
// a duplicate field, trailing data, invalid UTF-8 anywhere in the text and
// lone surrogates in \u escapes. Integers must be integer literals in
// range; like Flink, numbers and booleans are also read from strings
// ("42"), and a string column takes any other value as its JSON text.
// Floats read NaN and ±Infinity from strings. Decimals are read exactly
// from numbers or strings, rounding half away from zero past the scale.
// Timestamps read RFC 3339, ISO-8601 and SQL ("2006-01-02 15:04:05.999")
// text, with an optional zone (none means UTC), or an integer count of the
// column's unit; dates read yyyy-MM-dd or days, times HH:mm[:ss[.f]] or
// the unit. Binary is base64. The encoder writes what the decoder reads back:
// timestamps in RFC 3339 (or json.timestamp-format.standard), decimals as
// plain numbers, NaN and infinities as strings, dates and timestamps
// outside years 0000-9999 as integers.
//
// # csv
//
// One line per value (a final line break is allowed), fields in schema
// order. Quotes double to escape ("a ""b"""); nulls follow PostgreSQL's
// convention: an unquoted field equal to the null literal (by default
// empty) is null, a quoted "" is an empty string.
//
// # avro and avro-confluent
//
// Avro binary encoding, resolved against the columns as Avro schema
// resolution does (the columns play the reader's schema): fields by name,
// writer fields without a column skipped, columns without a writer field
// null, unions by branch, numeric promotions, timestamps between units,
// enums as strings. avro-confluent values carry the Confluent header
// (magic byte 0, 4-byte big-endian schema id); the decoder fetches each
// writer schema from the registry once and compiles a program per id; the
// encoder registers its schema (AvroSchema of the columns, or
// avro-confluent.schema) under avro-confluent.subject at construction.
// Package registry is an in-memory registry speaking the same API.
//
// # Change events: debezium-json, canal-json, maxwell-json
//
// Their decoders are ChangeDecoders: a connector type-asserts the Decoder
// to ChangeDecoder, builds batches with NewChangeBuilder, and gets 0, 1
// or more rows per record from AppendChange (an update is two rows, a
// Canal event holds several) and their row kinds (arrowflow.RowKind) from
// NewChangeRecord. The row images are read with the json format's rules
// (the decoder is the json decoder's, compiled once per schema); the
// envelope's other members are skipped but must be valid JSON, and
// nothing is allocated per event in steady state. As in Flink:
//
//	debezium-json  op "c", "r": +I after; "u": -U before, +U after;
//	               "d": -D before; an empty value (a tombstone): no row.
//	               An update or delete without "before" is an error (the
//	               message says to set REPLICA IDENTITY FULL in Postgres).
//	               debezium-json.schema-include: read the "payload" of
//	               {"schema": ..., "payload": ...}.
//	canal-json     "INSERT": +I per "data" row; "UPDATE": per row i, -U
//	               data[i] with old[i]'s members in its place (old holds
//	               the changed columns), +U data[i]; "DELETE": -D per
//	               row; "CREATE" or "isDdl": true: no row.
//	               canal-json.database.include, canal-json.table.include:
//	               only events whose whole names match (RE2 syntax).
//	maxwell-json   "insert": +I data; "update": -U data with "old"'s
//	               members in its place, +U data; "delete": -D data.
//
// Other ops and types, a missing image and a malformed row are
// *RecordErrors naming the member (after.price, data[1].id, old.name) and
// the byte offset; the event adds no row. Their encoders are
// ChangeEncoders writing Flink's events, an update as a delete and an
// insert: {"before":null,"after":row,"op":"c"} and {"before":row,
// "after":null,"op":"d"}; {"data":[row],"type":"INSERT"|"DELETE"};
// {"data":row,"type":"insert"|"delete"}.
package format
