package redact

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	cases := []struct {
		in, secret string
		keep       []string
	}{
		{"postgres://weir:s3cr3t@db.local:5432/cat?sslmode=disable", "s3cr3t", []string{"weir:", "db.local:5432/cat", "sslmode=disable"}},
		{"postgres://db.local/cat?user=weir&password=s3cr3t&sslmode=disable", "s3cr3t", []string{"user=weir", "sslmode=disable"}},
		{"host=db.local user=weir password=s3cr3t dbname=cat", "s3cr3t", []string{"host=db.local", "dbname=cat"}},
		{"host=db.local password='s3 cr3t' dbname=cat", "s3 cr3t", []string{"dbname=cat"}},
		{`org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="s3cr3t";`, "s3cr3t", []string{`username="alice"`}},
		{`'properties.sasl.jaas.config' = 'org...ScramLoginModule required username="a" password="s3cr3t";'`, "s3cr3t", []string{"'properties.sasl.jaas.config'"}},
		{`'properties.ssl.key.password' = 's3cr3t', 'topic' = 'orders'`, "s3cr3t", []string{"'topic' = 'orders'"}},
		{`'uri' = 'postgres://u:s3cr3t@h/db'`, "s3cr3t", []string{"'uri'", "u:", "@h/db"}},
		{`'avro-confluent.basic-auth.user-info' = 'bob:s3cr3t'`, "s3cr3t", nil},
		{"iceberg: open sql catalog at postgres://u:p%40ss@h/db: refused", "p%40ss", []string{"refused"}},
		// A JAAS password inside a Go-quoted token of a SQL error, whole
		// or cut short.
		{`found "'org...PlainLoginModule required username=\"u\" password=\"s3cr3t\";'"`, "s3cr3t", []string{`username=\"u\"`, `;'"`}},
		{`found "'org...PlainLoginModule required password=\"s3cr3t..."`, "s3cr3t", []string{`found "'org`}},
	}
	for _, c := range cases {
		got := String(c.in)
		if strings.Contains(got, c.secret) {
			t.Errorf("String(%q) = %q: secret %q left", c.in, got, c.secret)
		}
		if !strings.Contains(got, Mask) {
			t.Errorf("String(%q) = %q: no mask", c.in, got)
		}
		for _, k := range c.keep {
			if !strings.Contains(got, k) {
				t.Errorf("String(%q) = %q: lost %q", c.in, got, k)
			}
		}
	}
}

func TestStringLeavesPlainText(t *testing.T) {
	for _, s := range []string{
		"",
		"SELECT a + 1 FROM t WHERE b = 'x'",
		"'connector' = 'kafka', 'topic' = 'orders'",
		"sink \"parquet\": commit epoch 3: file exists",
		"http://localhost:8081/status",
	} {
		if got := String(s); got != s {
			t.Errorf("String(%q) = %q, want it unchanged", s, got)
		}
	}
}

func TestOptions(t *testing.T) {
	got := Options(map[string]string{
		"properties.sasl.jaas.config":  `x required password="p";`,
		"properties.bootstrap.servers": "127.0.0.1:9092",
		"catalog-uri":                  "postgres://u:pw@h/db",
	})
	if got["properties.sasl.jaas.config"] != Mask || got["properties.bootstrap.servers"] != "127.0.0.1:9092" || strings.Contains(got["catalog-uri"], "pw@") {
		t.Fatalf("Options = %v", got)
	}
}

func TestSensitiveKey(t *testing.T) {
	for k, want := range map[string]bool{
		"password": true, "properties.sasl.jaas.config": true, "properties.ssl.key.password": true,
		"properties.ssl.keystore.key": true, "token": true, "client.secret": true,
		"topic": false, "key.fields": false, "properties.bootstrap.servers": false, "key.format": false,
	} {
		if got := SensitiveKey(k); got != want {
			t.Errorf("SensitiveKey(%q) = %v, want %v", k, got, want)
		}
	}
}

// A URL password with an unescaped @ (url.Parse, and so pgx, takes the
// user-info up to the authority's last @) is hidden whole; the host and
// the rest of the text stay.
func TestStringURLPasswordWithAt(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://weir:p@ss@db:5432/cat?sslmode=disable", "postgres://weir:" + Mask + "@db:5432/cat?sslmode=disable"},
		{"at postgres://weir:a@b@c@db/cat: refused by user@host", "at postgres://weir:" + Mask + "@db/cat: refused by user@host"},
		{"postgresql://:p@ss@db", "postgresql://:" + Mask + "@db"},
	} {
		if got := String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Masking masked text changes nothing: errors are often wrapped and
// masked again by each layer.
func TestStringIsIdempotent(t *testing.T) {
	for _, s := range []string{
		"open postgres: host=h password=s3cr3t: connection refused",
		"postgres://u:s3cr3t@h/db?password=x&sslmode=off: refused",
		`'properties.sasl.jaas.config' = 'x required password="p";'`,
		`token "username=\"a\" password=\"p\";"`,
	} {
		once := String(s)
		if strings.Contains(s, "s3cr3t: connection") && !strings.Contains(once, Mask+": connection") {
			t.Errorf("String(%q) = %q: the colon after the password is lost", s, once)
		}
		if twice := String(once); twice != once {
			t.Errorf("String(String(%q)) = %q, String once = %q", s, twice, once)
		}
	}
}
