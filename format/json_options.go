package format

import (
	"fmt"
	"strings"
)

// parseJSONOptions reads the json format's options.
func parseJSONOptions(o *options) (jsonOptions, error) {
	var opts jsonOptions
	var err error
	if opts.failOnMissing, err = o.boolean("json.fail-on-missing-field", false); err != nil {
		return opts, err
	}
	if opts.ignoreNullFields, err = o.boolean("json.encode.ignore-null-fields", false); err != nil {
		return opts, err
	}
	switch v := o.str("json.timestamp-format.standard", "RFC-3339"); strings.ToUpper(v) {
	case "RFC-3339", "RFC3339":
		opts.tsStyle = styleRFC3339
	case "SQL":
		opts.tsStyle = styleSQL
	case "ISO-8601", "ISO8601":
		opts.tsStyle = styleISO
	default:
		return opts, fmt.Errorf("json: option json.timestamp-format.standard: %q is not SQL, ISO-8601 or RFC-3339", v)
	}
	// Arrow map keys are never null, so the null-key policy never applies;
	// the options are accepted (and checked) for DDL written for Flink.
	switch v := o.str("json.map-null-key.mode", "FAIL"); strings.ToUpper(v) {
	case "FAIL", "DROP", "LITERAL":
	default:
		return opts, fmt.Errorf("json: option json.map-null-key.mode: %q is not FAIL, DROP or LITERAL", v)
	}
	o.str("json.map-null-key.literal", "null")
	if err := o.reject("json.ignore-parse-errors", "bad records are the connector's policy"); err != nil {
		return opts, err
	}
	return opts, nil
}
