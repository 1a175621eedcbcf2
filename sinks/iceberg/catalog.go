package iceberg

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/catalog/rest" // registers the "rest" catalog type
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for the SQL catalog on PostgreSQL
	_ "modernc.org/sqlite"             // database/sql driver "sqlite", pure Go, for the embedded SQL catalog
)

// CatalogOptions say which Iceberg catalog holds the table. The names
// follow Flink's Iceberg connector ('catalog-name', 'catalog-type', 'uri',
// 'warehouse'); Properties pass anything else through to iceberg-go
// ('credential', 'token', 's3.region', 's3.access-key-id', 'gcs.*',
// 'adls.*', ...).
type CatalogOptions struct {
	// Name is the catalog's name ('catalog-name'); default "weir".
	Name string
	// Type is "sql" (the default) or "rest" ('catalog-type').
	Type string
	// URI is the catalog's address ('uri'). For "sql": a SQLite database
	// file (a path, "file:..." or "sqlite:..."; default: catalog.db in a
	// local Warehouse) or a PostgreSQL URL ("postgres://user:pw@host/db").
	// For "rest": the service's base URL.
	URI string
	// Warehouse is where new tables' files go ('warehouse'): a local
	// folder or file:// URL for the embedded default, or an object store
	// URL (s3://, gs://, abfs://) with its credentials in Properties. For
	// "rest" it is the warehouse name the service expects, if any.
	Warehouse string
	// Properties are passed to iceberg-go's catalog and file IO as they
	// are.
	Properties map[string]string
}

// OpenCatalog opens the catalog o describes. A SQL catalog creates its
// tables in the database when missing.
func OpenCatalog(ctx context.Context, o CatalogOptions) (catalog.Catalog, error) {
	props := iceberg.Properties{}
	for k, v := range o.Properties {
		props[k] = v
	}
	name := o.Name
	if name == "" {
		name = "weir"
	}
	typ := strings.ToLower(o.Type)
	if typ == "" {
		typ = "sql"
	}
	warehouse, err := warehouseURL(o.Warehouse)
	if err != nil {
		return nil, err
	}
	if warehouse != "" {
		props["warehouse"] = warehouse
	}
	switch typ {
	case "sql":
		driver, dialect, dsn, err := sqlDSN(o.URI, warehouse)
		if err != nil {
			return nil, err
		}
		props["type"] = "sql"
		props["uri"] = dsn
		props[sqlcat.DriverKey] = driver
		props[sqlcat.DialectKey] = dialect
		if _, ok := props["init_catalog_tables"]; !ok {
			props["init_catalog_tables"] = "true"
		}
		if props["warehouse"] == "" {
			return nil, errors.New("iceberg: the SQL catalog needs a warehouse ('warehouse')")
		}
	case "rest":
		if o.URI == "" {
			return nil, errors.New("iceberg: the REST catalog needs its URL ('uri')")
		}
		props["type"] = "rest"
		props["uri"] = o.URI
	default:
		return nil, fmt.Errorf("iceberg: catalog type %q: want sql or rest", o.Type)
	}
	cat, err := catalog.Load(ctx, name, props)
	if err != nil {
		return nil, fmt.Errorf("iceberg: open %s catalog %q at %s: %w", typ, name, redact(props["uri"]), err)
	}
	return cat, nil
}

// warehouseURL turns a local folder into an absolute file:// URL (created
// when missing); URLs with a scheme stay as they are.
func warehouseURL(w string) (string, error) {
	if w == "" || strings.Contains(w, "://") {
		if p, ok := strings.CutPrefix(w, "file://"); ok {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return "", fmt.Errorf("iceberg: warehouse %s: %w", w, err)
			}
		}
		return w, nil
	}
	abs, err := filepath.Abs(w)
	if err != nil {
		return "", fmt.Errorf("iceberg: warehouse %s: %w", w, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", fmt.Errorf("iceberg: warehouse %s: %w", w, err)
	}
	return "file://" + abs, nil
}

// sqlDSN picks the database/sql driver and bun dialect for a SQL catalog
// URI. SQLite waits for other processes' locks (busy_timeout) and uses a
// write-ahead log, so a job and `weir table` can share the catalog.
func sqlDSN(uri, warehouse string) (driver, dialect, dsn string, err error) {
	switch {
	case strings.HasPrefix(uri, "postgres://"), strings.HasPrefix(uri, "postgresql://"):
		return "pgx", string(sqlcat.Postgres), uri, nil
	case strings.Contains(uri, "://") && !strings.HasPrefix(uri, "sqlite://") && !strings.HasPrefix(uri, "file://"):
		return "", "", "", fmt.Errorf("iceberg: SQL catalog uri %s: want a SQLite file or a postgres:// URL", redact(uri))
	}
	path := uri
	for _, p := range []string{"sqlite://", "sqlite:", "file://", "file:"} {
		if rest, ok := strings.CutPrefix(path, p); ok {
			path = rest
			break
		}
	}
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if path == "" {
		local, ok := strings.CutPrefix(warehouse, "file://")
		if !ok {
			return "", "", "", errors.New("iceberg: the SQL catalog needs 'uri' (a SQLite file or postgres:// URL) when the warehouse is not a local folder")
		}
		path = filepath.Join(local, "catalog.db")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", "", "", fmt.Errorf("iceberg: SQL catalog %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	return "sqlite", string(sqlcat.SQLite), "file:" + path + "?" + q.Encode(), nil
}

// redact hides a password in a URL for error messages.
func redact(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.User == nil {
		return uri
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
