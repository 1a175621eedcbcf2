package format

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
)

// Config selects and configures a format.
type Config struct {
	// Name is the format: "json", "csv", "raw", "avro", "avro-confluent",
	// "debezium-json", "canal-json", "maxwell-json" or
	// "debezium-avro-confluent" (see Names).
	Name string
	// Schema is the schema of the values' columns. It may be nil for raw
	// (one nullable binary column "value"), for avro when avro.schema is
	// given, and for avro-confluent decoders, which then take the Arrow
	// form of avro-confluent.schema or of the latest schema registered
	// under avro-confluent.subject (see ArrowSchemaFromAvro).
	Schema *arrow.Schema
	// Options are the format's options, under Flink's names without the
	// connector's "value." prefix. An option the format does not know is
	// an error naming it. Bad-record policy options (json.ignore-parse-errors,
	// csv.ignore-parse-errors) belong to the connector and are refused.
	//
	// json:
	//   json.timestamp-format.standard  RFC-3339 (default), SQL or ISO-8601:
	//                                   how timestamps are written; all are read
	//   json.fail-on-missing-field      a missing nullable field is an error (false)
	//   json.encode.ignore-null-fields  leave null fields out when writing (false)
	//   json.map-null-key.mode/literal  accepted for Flink DDL; Arrow map keys are never null
	// csv:
	//   csv.field-delimiter             one character (,); \t for a tab
	//   csv.quote-character             one character (")
	//   csv.disable-quote-character     no quoting (false)
	//   csv.escape-character            one character (none)
	//   csv.null-literal                the text of a null ("", an empty unquoted field)
	// raw:
	//   raw.charset                     UTF-8 only
	//   raw.endianness                  big-endian or little-endian; no effect on bytes and strings
	// avro:
	//   avro.schema                     the writer schema (JSON); default: AvroSchema(Schema)
	// avro-confluent:
	//   avro-confluent.url              the registry's URL (also avro-confluent.schema-registry.url);
	//                                   several separated by commas
	//   avro-confluent.subject          the subject encoders register under (required for
	//                                   encoders) and decoders without Schema read
	//   avro-confluent.schema           the Avro schema to register (default: AvroSchema(Schema))
	//                                   or, for a decoder without Schema, to take the columns from
	//   avro-confluent.basic-auth.user-info   user:password for the registry
	//   avro-confluent.basic-auth.credentials-source  USER_INFO only
	//   avro-confluent.bearer-auth.token      a bearer token for the registry
	//   avro-confluent.bearer-auth.credentials-source STATIC_TOKEN only
	// debezium-json, canal-json, maxwell-json (change events: decoders are
	// ChangeDecoders, encoders ChangeEncoders; rows are read and written
	// with the json format's rules). <f> is the format's name:
	//   <f>.timestamp-format.standard   as json.timestamp-format.standard
	//   <f>.map-null-key.mode/literal   as json's
	//   <f>.encode.decimal-as-plain-number  accepted; decimals are always plain numbers
	//   debezium-json.schema-include    messages are {"schema":..., "payload": event} (false);
	//                                   for decoders only (Flink refuses it for writing too)
	//   canal-json.database.include     read only events of databases matching this regular
	//                                   expression (whole name; RE2: no back-references or
	//                                   look-arounds); encoders accept and ignore it
	//   canal-json.table.include        the same for tables
	//   <f>.ignore-parse-errors is the connector's bad-record policy and refused here.
	Options map[string]string
	// Registry is the avro-confluent format's schema registry client; when
	// nil, one is built from avro-confluent.url.
	Registry *sr.Client
}

// Names returns the formats' names, sorted.
func Names() []string {
	return []string{"avro", "avro-confluent", CanalJSON, "csv", DebeziumAvroConfluent, DebeziumJSON, "json", MaxwellJSON, "raw"}
}

func unknownFormat(name string) error {
	return fmt.Errorf("format: unknown format %q (known: %s)", name, strings.Join(Names(), ", "))
}

func needSchema(cfg Config) error {
	if cfg.Schema == nil {
		return fmt.Errorf("%s: a schema is required", cfg.Name)
	}
	return nil
}

// NewDecoder returns a decoder of cfg's format. ctx bounds the schema
// registry requests made here (avro-confluent without Schema); schemas
// that decoding meets later are fetched with a timeout of their own.
func NewDecoder(ctx context.Context, cfg Config) (Decoder, error) {
	o := newOptions(cfg.Name, cfg.Options)
	var dec Decoder
	var err error
	switch cfg.Name {
	case "json":
		dec, err = newJSONDecoderConfig(cfg, o)
	case "csv":
		dec, err = newCSVDecoderConfig(cfg, o)
	case "raw":
		dec, err = newRawDecoderConfig(cfg, o)
	case "avro":
		dec, err = newAvroDecoderConfig(cfg, o)
	case "avro-confluent":
		dec, err = newConfluentDecoderConfig(ctx, cfg, o)
	case DebeziumJSON:
		dec, err = newDebeziumDecoderConfig(cfg, o)
	case CanalJSON:
		dec, err = newCanalDecoderConfig(cfg, o)
	case MaxwellJSON:
		dec, err = newMaxwellDecoderConfig(cfg, o)
	case DebeziumAvroConfluent:
		dec, err = newDebeziumAvroDecoderConfig(ctx, cfg, o)
	default:
		return nil, unknownFormat(cfg.Name)
	}
	if err != nil {
		return nil, err
	}
	if err := o.unknown(); err != nil {
		return nil, err
	}
	return dec, nil
}

// NewEncoder returns an encoder of cfg's format. ctx bounds the schema
// registration of avro-confluent.
func NewEncoder(ctx context.Context, cfg Config) (Encoder, error) {
	o := newOptions(cfg.Name, cfg.Options)
	var enc Encoder
	var err error
	switch cfg.Name {
	case "json":
		enc, err = newJSONEncoderConfig(cfg, o)
	case "csv":
		enc, err = newCSVEncoderConfig(cfg, o)
	case "raw":
		enc, err = newRawEncoderConfig(cfg, o)
	case "avro":
		enc, err = newAvroEncoderConfig(cfg, o)
	case "avro-confluent":
		enc, err = newConfluentEncoderConfig(ctx, cfg, o)
	case DebeziumJSON:
		enc, err = newDebeziumEncoderConfig(cfg, o)
	case CanalJSON:
		enc, err = newCanalEncoderConfig(cfg, o)
	case MaxwellJSON:
		enc, err = newMaxwellEncoderConfig(cfg, o)
	case DebeziumAvroConfluent:
		enc, err = newDebeziumAvroEncoderConfig(ctx, cfg, o)
	default:
		return nil, unknownFormat(cfg.Name)
	}
	if err != nil {
		return nil, err
	}
	if err := o.unknown(); err != nil {
		return nil, err
	}
	return enc, nil
}

func newJSONDecoderConfig(cfg Config, o *options) (Decoder, error) {
	opts, err := parseJSONOptions(o)
	if err != nil {
		return nil, err
	}
	if err := needSchema(cfg); err != nil {
		return nil, err
	}
	return newJSONDecoder(cfg.Schema, opts)
}

func newJSONEncoderConfig(cfg Config, o *options) (Encoder, error) {
	opts, err := parseJSONOptions(o)
	if err != nil {
		return nil, err
	}
	if err := needSchema(cfg); err != nil {
		return nil, err
	}
	return newJSONEncoder(cfg.Schema, opts)
}

func newCSVDecoderConfig(cfg Config, o *options) (Decoder, error) {
	opts, err := parseCSVOptions(o)
	if err != nil {
		return nil, err
	}
	if err := needSchema(cfg); err != nil {
		return nil, err
	}
	return newCSVDecoder(cfg.Schema, opts)
}

func newCSVEncoderConfig(cfg Config, o *options) (Encoder, error) {
	opts, err := parseCSVOptions(o)
	if err != nil {
		return nil, err
	}
	if err := needSchema(cfg); err != nil {
		return nil, err
	}
	return newCSVEncoder(cfg.Schema, opts)
}

func rawSchemaOf(cfg Config, o *options) (*arrow.Schema, error) {
	if err := parseRawOptions(o); err != nil {
		return nil, err
	}
	schema := cfg.Schema
	if schema == nil {
		schema = rawSchema
	}
	return schema, checkRawSchema(schema)
}

func newRawDecoderConfig(cfg Config, o *options) (Decoder, error) {
	schema, err := rawSchemaOf(cfg, o)
	if err != nil {
		return nil, err
	}
	return &rawDecoder{schema: schema}, nil
}

func newRawEncoderConfig(cfg Config, o *options) (Encoder, error) {
	schema, err := rawSchemaOf(cfg, o)
	if err != nil {
		return nil, err
	}
	return &rawEncoder{schema: schema}, nil
}

// avroSchemas returns the Arrow schema and the Avro schema of a format
// whose Avro schema may come from option (JSON text) and whose Arrow
// schema may come from cfg; either is derived from the other.
func avroSchemas(cfg Config, o *options, option string) (*arrow.Schema, avro.Schema, string, error) {
	text, hasText := o.get(option)
	schema := cfg.Schema
	switch {
	case hasText:
		w, err := parseAvroSchema(text)
		if err != nil {
			return nil, nil, "", fmt.Errorf("%s: option %s: %w", cfg.Name, option, err)
		}
		if schema == nil {
			if schema, err = arrowSchemaOf(w); err != nil {
				return nil, nil, "", fmt.Errorf("%s: option %s: %w", cfg.Name, option, err)
			}
		}
		return schema, w, text, nil
	case schema != nil:
		text, err := AvroSchema(schema)
		if err != nil {
			return nil, nil, "", err
		}
		w, err := parseAvroSchema(text)
		if err != nil {
			return nil, nil, "", fmt.Errorf("BUG: %s: %w", cfg.Name, err)
		}
		return schema, w, text, nil
	}
	return nil, nil, "", nil
}

func newAvroDecoderConfig(cfg Config, o *options) (Decoder, error) {
	schema, w, _, err := avroSchemas(cfg, o, "avro.schema")
	if err != nil {
		return nil, err
	}
	if schema == nil {
		return nil, errors.New("avro: a schema or the option avro.schema is required")
	}
	return newAvroDecoder(schema, w)
}

func newAvroEncoderConfig(cfg Config, o *options) (Encoder, error) {
	schema, w, _, err := avroSchemas(cfg, o, "avro.schema")
	if err != nil {
		return nil, err
	}
	if schema == nil {
		return nil, errors.New("avro: a schema or the option avro.schema is required")
	}
	return newAvroEncoder("avro", w, schema, nil)
}

func newConfluentDecoderConfig(ctx context.Context, cfg Config, o *options) (Decoder, error) {
	client, err := registryClient(o, cfg.Registry)
	if err != nil {
		return nil, err
	}
	subject, hasSubject := o.get("avro-confluent.subject")
	schema, _, _, err := avroSchemas(cfg, o, "avro-confluent.schema")
	if err != nil {
		return nil, err
	}
	if err := o.unknown(); err != nil { // before asking the registry anything
		return nil, err
	}
	if schema == nil {
		if !hasSubject {
			return nil, errors.New("avro-confluent: without a schema, the option avro-confluent.subject (or avro-confluent.schema) is required")
		}
		ss, err := client.SchemaByVersion(ctx, subject, -1)
		if err != nil {
			return nil, fmt.Errorf("avro-confluent: the latest schema of subject %q: %w", subject, err)
		}
		w, err := writerSchema(ss.Schema)
		if err != nil {
			return nil, fmt.Errorf("avro-confluent: subject %q version %d: %w", subject, ss.Version, err)
		}
		if schema, err = arrowSchemaOf(w); err != nil {
			return nil, fmt.Errorf("avro-confluent: subject %q version %d: %w", subject, ss.Version, err)
		}
	}
	if _, err := newColumns(schema); err != nil {
		return nil, fmt.Errorf("avro-confluent: %w", err)
	}
	return &confluentDecoder{schema: schema, client: client}, nil
}

func newConfluentEncoderConfig(ctx context.Context, cfg Config, o *options) (Encoder, error) {
	client, err := registryClient(o, cfg.Registry)
	if err != nil {
		return nil, err
	}
	subject, hasSubject := o.get("avro-confluent.subject")
	schema, w, text, err := avroSchemas(cfg, o, "avro-confluent.schema")
	if err != nil {
		return nil, err
	}
	if schema == nil {
		return nil, errors.New("avro-confluent: a schema or the option avro-confluent.schema is required")
	}
	if !hasSubject || subject == "" {
		return nil, errors.New("avro-confluent: the option avro-confluent.subject is required to register the schema")
	}
	if err := o.unknown(); err != nil { // before registering anything
		return nil, err
	}
	// Compile before registering, so that a schema that cannot encode the
	// columns is not registered.
	if _, err := newAvroEncoder("avro-confluent", w, schema, nil); err != nil {
		return nil, err
	}
	id, err := client.RegisterSchema(ctx, subject, sr.Schema{Schema: text, Type: sr.TypeAvro}, -1, -1)
	if err != nil {
		return nil, fmt.Errorf("avro-confluent: registering the schema under subject %q: %w", subject, err)
	}
	// A reply without an id reads as 0; ids are positive 32-bit integers
	// (the header has 4 bytes, which Java reads as a signed int).
	if id < 1 || id > math.MaxInt32 {
		return nil, fmt.Errorf("avro-confluent: registering the schema under subject %q: the registry replied schema id %d, not a schema id (1 to 2^31-1)", subject, id)
	}
	return newAvroEncoder("avro-confluent", w, schema, confluentPrefix(id))
}
