package iceberg_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirflow/weir/sinks/iceberg"

	"github.com/weirflow/weir/internal/testutil"
)

// cwdEntries lists the current folder.
func cwdEntries(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// A PostgreSQL catalog that cannot be reached fails, and the error shows
// none of the password forms: user-info, ?password=, ?sslpassword=, an
// unescaped @ in the password, a key=value DSN. No SQLite file is made
// of any of them, in the current folder or elsewhere.
func TestCatalogURIErrorsHidePasswords(t *testing.T) {
	t.Chdir(t.TempDir())
	port := testutil.FreeLoopbackPort(t)
	wh := filepath.Join(t.TempDir(), "wh")
	for _, c := range []struct{ uri, secret string }{
		{fmt.Sprintf("postgres://weir:s3cr3tUI@127.0.0.1:%d/cat?sslmode=disable", port), "s3cr3tUI"},
		{fmt.Sprintf("postgresql://weir@127.0.0.1:%d/cat?sslmode=disable&password=s3cr3tQ", port), "s3cr3tQ"},
		{fmt.Sprintf("postgres://weir@127.0.0.1:%d/cat?sslmode=disable&sslpassword=s3cr3tSSL&password=s3cr3tQ2", port), "s3cr3t"},
		{fmt.Sprintf("postgres://weir:p@ss3cr3t@127.0.0.1:%d/cat?sslmode=disable", port), "ss3cr3t"},
		{fmt.Sprintf("host=127.0.0.1 port=%d user=weir password=s3cr3tDSN dbname=cat sslmode=disable", port), "s3cr3tDSN"},
		{fmt.Sprintf("host=127.0.0.1 port=%d user=weir password='s3cr3t Q' dbname=cat sslmode=disable", port), "s3cr3t"},
		{fmt.Sprintf("host=127.0.0.1 port=%d user=weir PGPASSWORD=s3cr3tPG dbname=cat", port), "s3cr3tPG"},
		{"mysql://weir:s3cr3tMY@127.0.0.1/cat", "s3cr3tMY"},
		{"jdbc:postgresql://127.0.0.1/cat?user=weir&password=s3cr3tJ", "s3cr3tJ"},
		{"postgres://weir:s3/cr3t@127.0.0.1/cat", "cr3t"},
	} {
		cat, err := iceberg.OpenCatalog(context.Background(), iceberg.CatalogOptions{URI: c.uri, Warehouse: wh})
		if err == nil {
			closeCat(cat)
			t.Errorf("catalog uri %q: opened, want an error", c.uri)
		} else if strings.Contains(err.Error(), c.secret) {
			t.Errorf("catalog uri %q: the error shows the password: %v", c.uri, err)
		} else {
			t.Logf("%v", err)
		}
		if names := cwdEntries(t); len(names) != 0 {
			t.Fatalf("catalog uri %q: files made in the current folder: %q", c.uri, names)
		}
	}
	if entries, _ := os.ReadDir(wh); len(entries) != 0 {
		t.Errorf("files made in the warehouse: %v", entries)
	}
}

// The catalog kind is decided by explicit rules, never guessed from a
// malformed URI: a scheme weir does not know, a path with '=' or spaces,
// a key=value string with a key libpq does not know are refused with a
// message saying what to write instead, and nothing is created.
func TestCatalogURIKindIsNeverGuessed(t *testing.T) {
	t.Chdir(t.TempDir())
	wh := filepath.Join(t.TempDir(), "wh")
	for _, c := range []struct{ uri, want string }{
		{"mysql://weir@127.0.0.1/cat", `scheme "mysql"`},
		{"jdbc:postgresql://127.0.0.1/cat", "postgres://"},
		{"https://catalog.example/api", "--catalog-type rest"},
		{"my catalog.db", "sqlite:"},
		{"cat=1.db", "sqlite:"},
		{"cat.db?mode=ro", "sqlite:"},
		{"host=127.0.0.1 dbname=cat search_path=x", `"search_path"`},
		{"host=127.0.0.1 dbname='cat", "quote"},
		{"catalog:1.db", `scheme "catalog"`},
	} {
		cat, err := iceberg.OpenCatalog(context.Background(), iceberg.CatalogOptions{URI: c.uri, Warehouse: wh})
		if err == nil {
			closeCat(cat)
			t.Errorf("catalog uri %q: opened, want an error", c.uri)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("catalog uri %q: %v, want an error saying %q", c.uri, err, c.want)
		} else {
			t.Logf("%v", err)
		}
		if names := cwdEntries(t); len(names) != 0 {
			t.Fatalf("catalog uri %q: files made in the current folder: %q", c.uri, names)
		}
	}
}

// SQLite catalogs: a plain path, sqlite: and file: URIs (a path with '='
// or spaces among them) each make one database file there.
func TestCatalogURISQLiteForms(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for _, c := range []struct{ uri, file string }{
		{filepath.Join(dir, "plain.db"), filepath.Join(dir, "plain.db")},
		{"sqlite:" + filepath.Join(dir, "a=b c.db"), filepath.Join(dir, "a=b c.db")},
		{"sqlite://" + filepath.Join(dir, "sub", "s.db"), filepath.Join(dir, "sub", "s.db")},
		{"file:" + filepath.Join(dir, "f%#.db"), filepath.Join(dir, "f%#.db")},
		{"file://" + filepath.Join(dir, "g.db") + "?ignored=1", filepath.Join(dir, "g.db")},
	} {
		cat, err := iceberg.OpenCatalog(ctx, iceberg.CatalogOptions{URI: c.uri, Warehouse: filepath.Join(dir, "wh")})
		if err != nil {
			t.Errorf("catalog uri %q: %v", c.uri, err)
			continue
		}
		if _, err := cat.ListNamespaces(ctx, nil); err != nil {
			t.Errorf("catalog uri %q: %v", c.uri, err)
		}
		closeCat(cat)
		if _, err := os.Stat(c.file); err != nil {
			t.Errorf("catalog uri %q: no database at %s: %v", c.uri, c.file, err)
		}
	}
}

// A key=value DSN is a PostgreSQL catalog (through pgx), on a real
// server: the sink writes and commits through it, and another catalog
// opened with the same server's URL sees the table.
func TestCatalogDSNIsPostgres(t *testing.T) {
	uri := startPostgres(t)
	ctx := context.Background()
	t.Chdir(t.TempDir())
	port := strings.TrimPrefix(strings.SplitN(strings.TrimPrefix(uri, "postgres://postgres@127.0.0.1:"), "/", 2)[0], ":")
	// The server trusts loopback connections: any password is accepted.
	dsn := fmt.Sprintf("host=127.0.0.1 port=%s user=postgres password='s3cr3t pw' dbname=postgres sslmode=disable", port)
	wh := t.TempDir()
	co := iceberg.CatalogOptions{URI: dsn, Warehouse: wh}
	s := newSink(t, wh, func(o *iceberg.Options) { o.Catalog = co })
	ws := openWriters(t, s, "job", 1, 1)
	p := writeEpoch(t, ws, 1, 0, 100)
	if err := s.Commit(ctx, 1, p); err != nil {
		t.Fatal(err)
	}
	if got := pgScanKeys(t, iceberg.CatalogOptions{URI: uri, Warehouse: wh}); len(got) != 100 {
		t.Fatalf("the table read through the URL has %d rows, want 100", len(got))
	}
	if names := cwdEntries(t); len(names) != 0 {
		t.Fatalf("files made in the current folder: %q", names)
	}
}
