package iceberg

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/catalog/rest" // registers the "rest" catalog type
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for the SQL catalog on PostgreSQL
	_ "modernc.org/sqlite"             // database/sql driver "sqlite", pure Go, for the embedded SQL catalog

	"github.com/weirflow/weir/internal/redact"
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
	// URI is the catalog's address ('uri'). For "sql", one of:
	//   - "" (the default): catalog.db in a local Warehouse;
	//   - "sqlite:PATH" or "file:PATH" (also "sqlite://", "file://"): a
	//     SQLite file, any name; a query string is ignored;
	//   - a plain path with no '=', '?' or whitespace and no "scheme:":
	//     a SQLite file;
	//   - "postgres://user:pw@host:5432/db?sslmode=..." or
	//     "postgresql://...": PostgreSQL through pgx, the password in the
	//     user-info (percent-encoded) or as ?password=;
	//   - "host=h port=5432 user=u password=pw dbname=db": PostgreSQL, a
	//     libpq key=value connection string (libpq's keywords only).
	// Anything else is refused, never taken as a file name: another
	// scheme, a path with '=' or spaces (write it "sqlite:PATH"), an
	// unknown key. For "rest": the service's base URL. Errors show the
	// URI with its passwords masked (internal/redact).
	URI string
	// Warehouse is where new tables' files go ('warehouse'): a local
	// folder or file:// URL for the embedded default, or an object store
	// URL (s3://, gs://, abfs://) with its credentials in Properties. For
	// "rest" it is the warehouse name the service expects, if any.
	Warehouse string
	// Properties are passed to iceberg-go's catalog and file IO as they
	// are.
	Properties map[string]string
	// Existing opens a SQL catalog only if it exists: no SQLite file,
	// folder, local warehouse folder or catalog table is created, and a
	// missing SQLite catalog fails with an error wrapping fs.ErrNotExist.
	// For tools that work on existing tables (weir table).
	Existing bool
}

// OpenCatalog opens the catalog o describes. A SQL catalog creates its
// database file and tables when missing, unless o.Existing is set.
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
	warehouse, err := warehouseURL(o.Warehouse, !o.Existing)
	if err != nil {
		return nil, err
	}
	if warehouse != "" {
		props["warehouse"] = warehouse
	}
	var where string
	switch typ {
	case "sql":
		db, err := sqlDatabase(o.URI, warehouse, o.Existing)
		if err != nil {
			return nil, err
		}
		where = db.where
		props["type"] = "sql"
		props["uri"] = db.dsn
		props[sqlcat.DriverKey] = db.driver
		props[sqlcat.DialectKey] = db.dialect
		if _, ok := props["init_catalog_tables"]; !ok {
			props["init_catalog_tables"] = strconv.FormatBool(!o.Existing)
		}
		if props["warehouse"] == "" {
			return nil, errors.New("iceberg: the SQL catalog needs a warehouse ('warehouse')")
		}
	case "rest":
		if o.URI == "" {
			return nil, errors.New("iceberg: the REST catalog needs its URL ('uri')")
		}
		where = redact.String(o.URI)
		props["type"] = "rest"
		props["uri"] = o.URI
	default:
		return nil, fmt.Errorf("iceberg: catalog type %q: want sql or rest", o.Type)
	}
	cat, err := catalog.Load(ctx, name, props)
	if err != nil {
		return nil, redactedError{fmt.Sprintf("iceberg: open %s catalog %q at %s", typ, name, where), err}
	}
	return cat, nil
}

// redactedError is context (secrets already masked) for an error whose
// text is masked when printed: a driver's message may quote the
// connection string. errors.Is and As still see the error it wraps.
type redactedError struct {
	context string
	err     error
}

func (e redactedError) Error() string { return e.context + ": " + redact.String(e.err.Error()) }
func (e redactedError) Unwrap() error { return e.err }

// warehouseURL turns a local folder into an absolute file:// URL,
// created when missing if create is set; URLs with a scheme stay as they
// are.
func warehouseURL(w string, create bool) (string, error) {
	if w == "" || strings.Contains(w, "://") {
		if p, ok := strings.CutPrefix(w, "file://"); ok && create {
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
	if create {
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return "", fmt.Errorf("iceberg: warehouse %s: %w", w, err)
		}
	}
	return "file://" + abs, nil
}

// sqlDB is the database of a SQL catalog: the database/sql driver and
// DSN, the bun dialect, and how messages name it (passwords masked).
type sqlDB struct {
	driver, dialect, dsn, where string
}

var (
	// uriScheme is a URI's "scheme:" prefix (RFC 3986).
	uriScheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*):`)
	// dsnStart is how a libpq key=value connection string starts.
	dsnStart = regexp.MustCompile(`^\s*[A-Za-z_][A-Za-z0-9_]*\s*=`)
	// windowsDrive is a Windows path's drive letter, not a scheme.
	windowsDrive = regexp.MustCompile(`^[A-Za-z]:[\\/]`)
)

// sqlDatabase decides the database of a SQL catalog from its URI, by the
// rules CatalogOptions.URI lists; it never guesses. SQLite waits for
// other processes' locks (busy_timeout) and uses a write-ahead log, so a
// job and `weir table` can share the catalog.
func sqlDatabase(uri, warehouse string, existing bool) (sqlDB, error) {
	lower := strings.ToLower(uri)
	switch {
	case uri == "":
		local, ok := strings.CutPrefix(warehouse, "file://")
		if !ok {
			return sqlDB{}, errors.New("iceberg: the SQL catalog needs 'uri' (a SQLite file or a postgres:// URL) when the warehouse is not a local folder")
		}
		return sqliteDatabase(filepath.Join(local, "catalog.db"), existing)
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		if err := checkPostgresURL(uri); err != nil {
			return sqlDB{}, err
		}
		return sqlDB{driver: "pgx", dialect: string(sqlcat.Postgres), dsn: uri, where: redact.String(uri)}, nil
	case strings.HasPrefix(lower, "sqlite:"), strings.HasPrefix(lower, "file:"):
		path := uri[strings.IndexByte(uri, ':')+1:]
		path = strings.TrimPrefix(path, "//")
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
		if path == "" {
			return sqlDB{}, fmt.Errorf("iceberg: SQL catalog uri %s: no file name", redact.String(uri))
		}
		return sqliteDatabase(path, existing)
	case dsnStart.MatchString(uri):
		if err := checkKeywordValueDSN(uri); err != nil {
			return sqlDB{}, fmt.Errorf("iceberg: SQL catalog uri %s: %w", redact.String(uri), err)
		}
		return sqlDB{driver: "pgx", dialect: string(sqlcat.Postgres), dsn: uri, where: redact.String(uri)}, nil
	case uriScheme.MatchString(uri) && !windowsDrive.MatchString(uri):
		scheme := strings.ToLower(uriScheme.FindStringSubmatch(uri)[1])
		var hint string
		switch {
		case scheme == "http" || scheme == "https":
			hint = "an http(s) URL is a REST catalog's: set the catalog type to rest (--catalog-type rest, 'catalog-type' = 'rest')"
		case strings.HasPrefix(lower, "jdbc:postgres"):
			hint = "write a JDBC URL as a postgres:// URL: postgres://user:password@host:5432/db (drop jdbc:)"
		default:
			hint = fmt.Sprintf("unknown scheme %q: want a postgres:// URL, a key=value PostgreSQL connection string, or a SQLite file (sqlite:PATH or a plain path)", scheme)
		}
		return sqlDB{}, fmt.Errorf("iceberg: SQL catalog uri %s: %s", redact.String(uri), hint)
	case strings.ContainsAny(uri, "=?") || strings.IndexFunc(uri, unicode.IsSpace) >= 0:
		return sqlDB{}, fmt.Errorf("iceberg: SQL catalog uri %s: not a plain path (it has '=', '?' or whitespace); a SQLite file with such a name is written sqlite:PATH, PostgreSQL as postgres://user:password@host:5432/db", redact.String(uri))
	}
	return sqliteDatabase(uri, existing)
}

// checkPostgresURL refuses a postgres:// URL that url.Parse (and so pgx)
// would read otherwise than meant: unparsable, or with an @ after the
// host, which means a password with an unescaped / ? or #. The URL is
// not quoted: where it breaks is where a password would show.
func checkPostgresURL(uri string) error {
	const hint = "percent-encode @ : / ? # %% and spaces in the user name and password (@ as %%40)"
	scheme, rest, _ := strings.Cut(uri, "://")
	if _, err := url.Parse(uri); err != nil {
		return fmt.Errorf("iceberg: SQL catalog uri %s://...: not a valid URL; "+hint, scheme)
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 && strings.Contains(rest[i:], "@") {
		return fmt.Errorf("iceberg: SQL catalog uri %s://...: an @ after the host; "+hint, scheme)
	}
	return nil
}

// libpqKeywords are the connection keywords libpq (PostgreSQL 15 and
// later) accepts in a key=value connection string; like libpq, weir
// refuses other keys.
var libpqKeywords = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "password": true,
	"passfile": true, "require_auth": true, "channel_binding": true, "connect_timeout": true,
	"client_encoding": true, "options": true, "application_name": true, "fallback_application_name": true,
	"keepalives": true, "keepalives_idle": true, "keepalives_interval": true, "keepalives_count": true,
	"tcp_user_timeout": true, "replication": true, "gssencmode": true, "sslmode": true, "requiressl": true,
	"sslnegotiation": true, "sslcompression": true, "sslcert": true, "sslkey": true, "sslpassword": true,
	"sslcertmode": true, "sslrootcert": true, "sslcrl": true, "sslcrldir": true, "sslsni": true,
	"requirepeer": true, "ssl_min_protocol_version": true, "ssl_max_protocol_version": true,
	"krbsrvname": true, "gsslib": true, "gssdelegation": true, "service": true,
	"target_session_attrs": true, "load_balance_hosts": true,
}

// checkKeywordValueDSN checks a libpq key=value connection string:
// key = value pairs separated by whitespace, a value bare or in single
// quotes (backslash escapes ' and \), every key one of libpq's. Errors
// name keys, never values.
func checkKeywordValueDSN(s string) error {
	for {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return nil
		}
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return errors.New("not a key=value PostgreSQL connection string: a word without '='")
		}
		key := strings.TrimRightFunc(s[:eq], unicode.IsSpace)
		if key == "" || strings.IndexFunc(key, unicode.IsSpace) >= 0 {
			return errors.New("not a key=value PostgreSQL connection string: a word without '='")
		}
		if !libpqKeywords[strings.ToLower(key)] {
			hint := "a SQLite file whose name has '=' is written sqlite:PATH"
			if strings.Contains(strings.ToLower(key), "password") {
				hint = "the password goes in password=... (or pgx reads the PGPASSWORD environment variable)"
			}
			return fmt.Errorf("key %q is no PostgreSQL connection keyword (host, port, dbname, user, password, sslmode, ...); %s", key, hint)
		}
		s = strings.TrimLeftFunc(s[eq+1:], unicode.IsSpace)
		if strings.HasPrefix(s, "'") {
			end := -1
			for i := 1; i < len(s); i++ {
				if s[i] == '\\' {
					i++
					continue
				}
				if s[i] == '\'' {
					end = i
					break
				}
			}
			if end < 0 {
				return fmt.Errorf("the value of %s has no closing quote", key)
			}
			s = s[end+1:]
			continue
		}
		i := 0
		for i < len(s) && !unicode.IsSpace(rune(s[i])) {
			if s[i] == '\\' {
				i++
			}
			i++
		}
		s = s[min(i, len(s)):]
	}
}

// sqliteDatabase is the SQLite database at path; made (with its folder)
// when missing, unless existing is set: then a missing file is an error
// and SQLite is told not to create one (mode=rw).
func sqliteDatabase(path string, existing bool) (sqlDB, error) {
	if existing {
		if _, err := os.Stat(path); err != nil {
			return sqlDB{}, fmt.Errorf("iceberg: no catalog at %s: %w", path, err)
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return sqlDB{}, fmt.Errorf("iceberg: SQL catalog %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	if existing {
		q.Set("mode", "rw")
	}
	// In a file: URI, SQLite decodes %HH and ends the path at ? or #.
	escaped := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return sqlDB{driver: "sqlite", dialect: string(sqlcat.SQLite), dsn: "file:" + escaped + "?" + q.Encode(), where: "SQLite file " + path}, nil
}
