package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	icebergsink "github.com/weirflow/weir/sinks/iceberg"
)

// icebergFlags select an Iceberg table through its catalog; the defaults
// are the embedded SQL catalog on SQLite in a local warehouse folder.
type icebergFlags struct {
	table       string
	warehouse   string
	catalogURI  string
	catalogType string
	catalogName string
	props       []string
}

func (f *icebergFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.table, "table", "", "Iceberg table namespace.name to write (instead of the Parquet folder --out)")
	fs.StringVar(&f.warehouse, "warehouse", "warehouse", "Iceberg warehouse: a local folder (file://) or an object store URL")
	fs.StringVar(&f.catalogURI, "catalog-uri", "", "Iceberg catalog URI: a SQLite file (default WAREHOUSE/catalog.db; sqlite:PATH for any name), postgres://user:pw@host/db or a key=value PostgreSQL connection string, or the REST catalog's URL (docs/iceberg.md)")
	fs.StringVar(&f.catalogType, "catalog-type", "sql", "Iceberg catalog type: sql or rest")
	fs.StringVar(&f.catalogName, "catalog-name", "weir", "Iceberg catalog name")
	fs.StringArrayVar(&f.props, "catalog-prop", nil, "Iceberg catalog or file IO property key=value (repeatable): credential, token, s3.region, ...")
}

// properties parses the --catalog-prop flags.
func (f *icebergFlags) properties() (map[string]string, error) {
	props := map[string]string{}
	for _, kv := range f.props {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--catalog-prop %q: want key=value", kv)
		}
		props[k] = v
	}
	return props, nil
}

// catalog returns the catalog options the flags describe.
func (f *icebergFlags) catalog() (icebergsink.CatalogOptions, error) {
	props, err := f.properties()
	return icebergsink.CatalogOptions{Name: f.catalogName, Type: f.catalogType, URI: f.catalogURI, Warehouse: f.warehouse, Properties: props}, err
}
