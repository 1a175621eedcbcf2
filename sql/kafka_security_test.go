package sql

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/kafkatest"
)

// secret is every password in these tests: it must never show.
const secret = "hunter2-s3cr3t"

// saslUsers are the broker's users, one per mechanism.
var saslUsers = map[string]string{"PLAIN": "alice", "SCRAM-SHA-256": "bob", "SCRAM-SHA-512": "carol"}

// jaas is the JAAS configuration of a mechanism's user.
func jaas(mech, user, pass string) string {
	module := "org.apache.kafka.common.security.plain.PlainLoginModule"
	if strings.HasPrefix(mech, "SCRAM") {
		module = "org.apache.kafka.common.security.scram.ScramLoginModule"
	}
	return fmt.Sprintf(`%s required username="%s" password="%s";`, module, user, pass)
}

// secureBroker starts kfake on loopback with TLS (requiring a client
// certificate when mtls) and, when sasl, a superuser per mechanism.
func secureBroker(t *testing.T, pki *kafkatest.PKI, sasl, mtls bool) *kafkatest.Broker {
	opts := []kfake.Opt{kfake.TLS(pki.ServerTLS(mtls))}
	if sasl {
		opts = append(opts, kfake.EnableSASL())
		for mech, user := range saslUsers {
			opts = append(opts, kfake.Superuser(mech, user, secret))
		}
	}
	return kafkatest.Start(t, "", 2, opts...)
}

// clientOpts are a test client's options for b: TLS with the client
// certificate, and SASL as the mechanism's user unless mech is empty.
func clientOpts(pki *kafkatest.PKI, mech string) []kgo.Opt {
	opts := []kgo.Opt{kgo.DialTLSConfig(pki.ClientTLS())}
	switch mech {
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: saslUsers[mech], Pass: secret}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: saslUsers[mech], Pass: secret}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: saslUsers[mech], Pass: secret}.AsSha512Mechanism()))
	}
	return opts
}

// produceRows writes n JSON rows {"id": i, "name": "n<i>"} to topic.
func produceRows(t *testing.T, b *kafkatest.Broker, topic string, n int, opts []kgo.Opt) []string {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.AllowAutoTopicCreation()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var want []string
	var recs []*kgo.Record
	for i := range n {
		v := fmt.Sprintf(`{"id":%d,"name":"n%d"}`, i, i)
		want = append(want, fmt.Sprintf("%d/n%d", i, i))
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	slices.Sort(want)
	return want
}

// secureScript copies table in to table out, both on b, with the WITH
// options security.
func secureScript(addr, security string) string {
	return fmt.Sprintf(`CREATE TABLE src (id BIGINT, name STRING) WITH ('connector' = 'kafka', 'topic' = 'in',
  'properties.bootstrap.servers' = '%[1]s', 'format' = 'json', 'scan.bounded.mode' = 'latest-offset',
%[2]s);
CREATE TABLE dst (id BIGINT, name STRING) WITH ('connector' = 'kafka', 'topic' = 'out',
  'properties.bootstrap.servers' = '%[1]s', 'format' = 'json',
%[2]s);
INSERT INTO dst SELECT id, name FROM src;
`, addr, security)
}

// sqlString quotes s as a SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// runKafkaScript compiles and runs a script to its end.
func runKafkaScript(t *testing.T, script string, timeout time.Duration) (*Job, error) {
	t.Helper()
	job, err := Compile(context.Background(), script, Options{Parallelism: 2, ForceParallelism: true, JobName: "secure"})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	run, err := job.Graph.Plan(arrowflow.Options{Allocator: mem, CheckpointInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return job, run.Run(ctx)
}

// outRows reads topic out as "id/name", sorted.
func outRows(t *testing.T, b *kafkatest.Broker, opts []kgo.Opt) []string {
	t.Helper()
	var got []string
	for _, r := range kafkatest.ReadCommitted(t, []string{b.Addr()}, "out", opts...) {
		var row struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		}
		if err := json.Unmarshal([]byte(r.Value), &row); err != nil {
			t.Fatalf("output %q: %v", r.Value, err)
		}
		got = append(got, fmt.Sprintf("%d/%s", row.ID, row.Name))
	}
	slices.Sort(got)
	return got
}

// TestKafkaSASLSSL: a SQL job reads from and writes to a SASL_SSL
// cluster, with each mechanism, trusting the test CA from a PEM file;
// the output is exactly the input.
func TestKafkaSASLSSL(t *testing.T) {
	pki := kafkatest.NewPKI(t)
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			b := secureBroker(t, pki, true, false)
			opts := clientOpts(pki, mech)
			want := produceRows(t, b, "in", 200, opts)
			security := fmt.Sprintf(`  'properties.security.protocol' = 'SASL_SSL', 'properties.sasl.mechanism' = '%s',
  'properties.sasl.jaas.config' = %s,
  'properties.ssl.truststore.type' = 'PEM', 'properties.ssl.truststore.location' = %s,
  'properties.ssl.endpoint.identification.algorithm' = 'https'`, mech, sqlString(jaas(mech, saslUsers[mech], secret)), sqlString(pki.CAFile))
			if _, err := runKafkaScript(t, secureScript(b.Addr(), security), 90*time.Second); err != nil {
				t.Fatal(err)
			}
			if got := outRows(t, b, opts); !slices.Equal(got, want) {
				t.Fatalf("output has %d rows, want the %d input rows exactly", len(got), len(want))
			}
		})
	}
}

// TestKafkaWrongPassword: a wrong password fails the job with an error
// naming the broker and the mechanism, without the password.
func TestKafkaWrongPassword(t *testing.T) {
	pki := kafkatest.NewPKI(t)
	b := secureBroker(t, pki, true, false)
	const wrong = "not-the-password-7f3a"
	security := fmt.Sprintf(`  'properties.security.protocol' = 'SASL_SSL', 'properties.sasl.mechanism' = 'SCRAM-SHA-256',
  'properties.sasl.jaas.config' = %s,
  'properties.ssl.truststore.certificates' = %s`, sqlString(jaas("SCRAM-SHA-256", "bob", wrong)), sqlString(string(pki.CAPEM)))
	start := time.Now()
	_, err := runKafkaScript(t, secureScript(b.Addr(), security), 90*time.Second)
	if err == nil {
		t.Fatal("job with a wrong password succeeded")
	}
	msg := err.Error()
	t.Logf("after %s: %v", time.Since(start).Round(time.Millisecond), msg)
	for _, want := range []string{"SASL SCRAM-SHA-256", `user "bob"`, b.Addr(), "sasl.jaas.config"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q: %v", want, msg)
		}
	}
	if strings.Contains(msg, wrong) {
		t.Errorf("error shows the password: %v", msg)
	}
}

// TestKafkaMutualTLS: a broker requiring a client certificate is read
// and written with the certificate of a PEM keystore file, or of inline
// PEM options; without one the job fails.
func TestKafkaMutualTLS(t *testing.T) {
	pki := kafkatest.NewPKI(t)
	cases := map[string]string{
		"keystore file": fmt.Sprintf(`  'properties.security.protocol' = 'SSL',
  'properties.ssl.truststore.location' = %s,
  'properties.ssl.keystore.type' = 'PEM', 'properties.ssl.keystore.location' = %s`, sqlString(pki.CAFile), sqlString(pki.KeyStoreFile)),
		// Inline PEM on one line, its line breaks turned into spaces,
		// as Kafka accepts it.
		"inline": fmt.Sprintf(`  'properties.security.protocol' = 'SSL',
  'properties.ssl.truststore.certificates' = %s,
  'properties.ssl.keystore.certificate.chain' = %s, 'properties.ssl.keystore.key' = %s`,
			sqlString(string(pki.CAPEM)), sqlString(strings.ReplaceAll(string(pki.ClientCertPEM), "\n", " ")), sqlString(string(pki.ClientKeyPEM))),
	}
	for name, security := range cases {
		t.Run(name, func(t *testing.T) {
			b := secureBroker(t, pki, false, true)
			opts := clientOpts(pki, "")
			want := produceRows(t, b, "in", 100, opts)
			if _, err := runKafkaScript(t, secureScript(b.Addr(), security), 90*time.Second); err != nil {
				t.Fatal(err)
			}
			if got := outRows(t, b, opts); !slices.Equal(got, want) {
				t.Fatalf("output has %d rows, want the %d input rows exactly", len(got), len(want))
			}
		})
	}
	t.Run("no client certificate", func(t *testing.T) {
		b := secureBroker(t, pki, false, true)
		produceRows(t, b, "in", 1, clientOpts(pki, ""))
		security := fmt.Sprintf(`  'properties.security.protocol' = 'SSL', 'properties.ssl.truststore.location' = %s`, sqlString(pki.CAFile))
		_, err := runKafkaScript(t, secureScript(b.Addr(), security), 60*time.Second)
		if err == nil {
			t.Fatal("job without the client certificate the broker requires succeeded")
		}
		if !strings.Contains(err.Error(), "requires a client certificate") || !strings.Contains(err.Error(), b.Addr()) {
			t.Errorf("error does not say the broker wants a client certificate: %v", err)
		}
	})
}

// TestKafkaSecurityOptionsRejected: what weir cannot do is refused at
// compile time, naming the option, never quoting a secret.
func TestKafkaSecurityOptionsRejected(t *testing.T) {
	cases := []struct {
		name, options string
		want          []string
	}{
		{"JKS truststore", `'properties.security.protocol' = 'SSL', 'properties.ssl.truststore.type' = 'JKS', 'properties.ssl.truststore.location' = 'ts.jks', 'properties.ssl.truststore.password' = '` + secret + `'`,
			[]string{"'properties.ssl.truststore.type'", "use PEM (Flink/Kafka accept ssl.truststore.type=PEM)"}},
		{"PKCS12 keystore", `'properties.security.protocol' = 'SSL', 'properties.ssl.keystore.type' = 'PKCS12', 'properties.ssl.keystore.location' = 'ks.p12'`,
			[]string{"'properties.ssl.keystore.type'", "use PEM (Flink/Kafka accept ssl.keystore.type=PEM)"}},
		{"OAUTHBEARER module", `'properties.security.protocol' = 'SASL_SSL', 'properties.sasl.jaas.config' = 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientSecret="` + secret + `";'`,
			[]string{"'properties.sasl.jaas.config'", "OAuthBearerLoginModule is not supported"}},
		{"GSSAPI", `'properties.security.protocol' = 'SASL_PLAINTEXT', 'properties.sasl.mechanism' = 'GSSAPI', 'properties.sasl.jaas.config' = 'com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;'`,
			[]string{"'properties.sasl.mechanism'", "GSSAPI is not supported"}},
		{"SCRAM without mechanism", `'properties.security.protocol' = 'SASL_SSL', 'properties.sasl.jaas.config' = '` + jaas("SCRAM-SHA-256", "bob", secret) + `'`,
			[]string{"'properties.sasl.mechanism'", "SCRAM-SHA-256 or SCRAM-SHA-512"}},
		{"jaas without SASL", `'properties.sasl.jaas.config' = '` + jaas("PLAIN", "alice", secret) + `'`,
			[]string{"'properties.sasl.jaas.config'", "SASL_PLAINTEXT or SASL_SSL"}},
		{"bad jaas", `'properties.security.protocol' = 'SASL_SSL', 'properties.sasl.jaas.config' = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="` + secret + `'`,
			[]string{"'properties.sasl.jaas.config'", "closing quote"}},
		{"unknown protocol", `'properties.security.protocol' = 'TLS'`, []string{"'properties.security.protocol'", "SASL_SSL"}},
		{"missing truststore file", `'properties.security.protocol' = 'SSL', 'properties.ssl.truststore.location' = '/nonexistent/ca.pem'`,
			[]string{"ssl.truststore.location", "no such file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			script := fmt.Sprintf(`CREATE TABLE src (id BIGINT) WITH ('connector' = 'kafka', 'topic' = 'in',
  'properties.bootstrap.servers' = '127.0.0.1:1', 'format' = 'json', %s);
CREATE TABLE dst (id BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO dst SELECT id FROM src;`, c.options)
			_, err := Compile(context.Background(), script, Options{})
			if err == nil {
				t.Fatal("compiled")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error shows the secret:\n%v", err)
			}
		})
	}
}

// TestKafkaSecretsNotShown: a syntax error on the line of a JAAS password
// echoes the line with the password masked (the caret still under the
// error), and the plan of --explain holds no secret.
func TestKafkaSecretsNotShown(t *testing.T) {
	security := `'properties.security.protocol' = 'SASL_SSL', 'properties.sasl.mechanism' = 'PLAIN', 'properties.sasl.jaas.config' = '` + jaas("PLAIN", "alice", secret) + `'`
	bad := `CREATE TABLE src (id BIGINT) WITH ('connector' = 'kafka', ` + security + ` oops 'topic' = 'in');`
	_, err := Compile(context.Background(), bad, Options{})
	if err == nil {
		t.Fatal("compiled a syntax error")
	}
	msg := err.Error()
	if strings.Contains(msg, secret) {
		t.Fatalf("syntax error shows the password:\n%s", msg)
	}
	lines := strings.Split(msg, "\n")
	if len(lines) < 3 || !strings.Contains(lines[1], "xxxxx") {
		t.Fatalf("want the masked line and a caret:\n%s", msg)
	}
	caret := strings.IndexByte(lines[2], '^')
	if caret < 0 || !strings.HasPrefix(lines[1][caret:], "oops") && !strings.HasPrefix(lines[1][caret:], "'topic'") {
		t.Errorf("caret not under the error:\n%s", msg)
	}

	good := fmt.Sprintf(`CREATE TABLE src (id BIGINT) WITH ('connector' = 'kafka', 'topic' = 'in',
  'properties.bootstrap.servers' = '127.0.0.1:1', 'format' = 'json', %s);
CREATE TABLE dst (id BIGINT) WITH ('connector' = 'kafka', 'topic' = 'out', 'properties.bootstrap.servers' = '127.0.0.1:1', 'format' = 'json', %s);
INSERT INTO dst SELECT id FROM src;`, security, security)
	job, err := Compile(context.Background(), good, Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if job.Plan == "" || strings.Contains(job.Plan, secret) {
		t.Fatalf("plan shows the password (or is empty):\n%s", job.Plan)
	}
	planned, err := job.Graph.Plan(arrowflow.Options{Allocator: memory.DefaultAllocator})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(planned.Explain(), secret) {
		t.Fatalf("explain shows the password:\n%s", planned.Explain())
	}
	for name, src := range job.Sources {
		if s := fmt.Sprintf("%v %+v %#v", src, src, src); strings.Contains(s, secret) {
			t.Fatalf("source %s printed shows the password", name)
		}
	}
}
