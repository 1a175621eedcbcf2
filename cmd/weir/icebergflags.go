package main

import (
	"strings"

	"github.com/spf13/cobra"
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

func (f *icebergFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.table, "table", "", "Iceberg table namespace.name to write (instead of the Parquet folder --out)")
	fs.StringVar(&f.warehouse, "warehouse", "warehouse", "Iceberg warehouse: a local folder (file://) or an object store URL")
	fs.StringVar(&f.catalogURI, "catalog-uri", "", "Iceberg catalog URI: a SQLite file (default WAREHOUSE/catalog.db), postgres://..., or the REST catalog's URL")
	fs.StringVar(&f.catalogType, "catalog-type", "sql", "Iceberg catalog type: sql or rest")
	fs.StringVar(&f.catalogName, "catalog-name", "weir", "Iceberg catalog name")
	fs.StringArrayVar(&f.props, "catalog-prop", nil, "Iceberg catalog or file IO property key=value (repeatable): credential, token, s3.region, ...")
}

func (f *icebergFlags) catalog() icebergsink.CatalogOptions {
	props := map[string]string{}
	for _, kv := range f.props {
		k, v, _ := strings.Cut(kv, "=")
		props[k] = v
	}
	return icebergsink.CatalogOptions{Name: f.catalogName, Type: f.catalogType, URI: f.catalogURI, Warehouse: f.warehouse, Properties: props}
}
