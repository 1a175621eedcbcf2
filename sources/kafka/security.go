package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// SecurityProtocol is Kafka's security.protocol.
type SecurityProtocol string

// Security protocols, named as Kafka's clients name them.
const (
	// Plaintext: no TLS, no authentication (the default).
	Plaintext SecurityProtocol = "PLAINTEXT"
	// SSL: TLS, optionally with a client certificate (mTLS).
	SSL SecurityProtocol = "SSL"
	// SASLPlaintext: SASL authentication without TLS.
	SASLPlaintext SecurityProtocol = "SASL_PLAINTEXT"
	// SASLSSL: SASL authentication over TLS.
	SASLSSL SecurityProtocol = "SASL_SSL"
)

// SASLMechanism is Kafka's sasl.mechanism.
type SASLMechanism string

// SASL mechanisms weir supports. GSSAPI (Kerberos) and OAUTHBEARER are
// not supported from properties; Go programs can pass franz-go's
// mechanisms through ClientOpts.
const (
	SASLPlain       SASLMechanism = "PLAIN"
	SASLScramSHA256 SASLMechanism = "SCRAM-SHA-256"
	SASLScramSHA512 SASLMechanism = "SCRAM-SHA-512"
)

// Security is how every client of a Kafka source or sink (readers,
// dead-letter producer, metadata, lag and offset-commit clients,
// transactional producers) reaches a secured cluster: TLS with a CA and a
// client certificate, SASL PLAIN and SCRAM. The zero value is PLAINTEXT.
// ParseSecurity reads it from Kafka (and Flink 'properties.*') client
// properties.
//
// Its String, GoString and LogValue never show the password or the
// private key.
type Security struct {
	// Protocol is security.protocol; empty means Plaintext.
	Protocol SecurityProtocol
	// Mechanism is sasl.mechanism, for SASLPlaintext and SASLSSL.
	Mechanism SASLMechanism
	// User and Password are the SASL credentials (the username and
	// password of sasl.jaas.config).
	User, Password string
	// ScramToken: the SCRAM credentials are a delegation token
	// (tokenauth="true" in the JAAS configuration).
	ScramToken bool

	// CAFile is a PEM file of the CA certificates to trust
	// (ssl.truststore.location with ssl.truststore.type PEM); CAPEM holds
	// them inline (ssl.truststore.certificates). Neither: the system's
	// roots.
	CAFile, CAPEM string
	// KeyStoreFile is a PEM file holding the client's private key and
	// certificate chain (ssl.keystore.location with ssl.keystore.type
	// PEM); CertPEM and KeyPEM hold them inline
	// (ssl.keystore.certificate.chain, ssl.keystore.key). For mTLS.
	KeyStoreFile, CertPEM, KeyPEM string
	// KeyPassword decrypts an encrypted private key (ssl.key.password):
	// PKCS#8 "ENCRYPTED PRIVATE KEY" (PBES2) or legacy
	// "Proc-Type: 4,ENCRYPTED" PEM.
	KeyPassword string
	// NoHostnameVerification skips checking that a broker's certificate
	// names its host (ssl.endpoint.identification.algorithm empty); the
	// chain is still verified.
	NoHostnameVerification bool
}

// SecurityProperties are the client properties ParseSecurity reads
// (without Flink's "properties." prefix).
var SecurityProperties = []string{
	"security.protocol", "sasl.mechanism", "sasl.jaas.config",
	"ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.certificates", "ssl.truststore.password",
	"ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.certificate.chain", "ssl.keystore.key",
	"ssl.keystore.password", "ssl.key.password", "ssl.endpoint.identification.algorithm",
}

// PropertyError is an error about one client property. Its text never
// holds the property's value.
type PropertyError struct {
	// Property is the property's name, e.g. "sasl.jaas.config".
	Property string
	// Reason says what is wrong and what to do.
	Reason string
}

// Error returns "property 'name': reason".
func (e *PropertyError) Error() string {
	return fmt.Sprintf("property '%s': %s", e.Property, e.Reason)
}

func propErr(prop, format string, args ...any) error {
	return &PropertyError{Property: prop, Reason: fmt.Sprintf(format, args...)}
}

// JAAS login modules, by the suffix of their class name (Flink's shaded
// "org.apache.flink.kafka.shaded.org.apache.kafka..." names end the same).
const (
	plainModule = ".security.plain.PlainLoginModule"
	scramModule = ".security.scram.ScramLoginModule"
)

// ParseSecurity reads the security properties of a Kafka client (keys as
// Kafka names them, without Flink's "properties." prefix; see
// SecurityProperties). Keystores and truststores must be PEM; files are
// read later, by Opts. Errors are *PropertyError and never quote a
// value.
func ParseSecurity(props map[string]string) (Security, error) {
	var s Security
	get := func(k string) string { return strings.TrimSpace(props[k]) }
	if p := strings.ToUpper(get("security.protocol")); p != "" {
		switch s.Protocol = SecurityProtocol(p); s.Protocol {
		case Plaintext, SSL, SASLPlaintext, SASLSSL:
		default:
			return Security{}, propErr("security.protocol", "%q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", props["security.protocol"])
		}
	}
	if s.sasl() {
		if err := s.parseSASL(get("sasl.mechanism"), props["sasl.jaas.config"]); err != nil {
			return Security{}, err
		}
	} else {
		for _, k := range []string{"sasl.mechanism", "sasl.jaas.config"} {
			if _, ok := props[k]; ok {
				return Security{}, propErr(k, "needs 'security.protocol' SASL_PLAINTEXT or SASL_SSL (it is %s)", s.protocol())
			}
		}
	}
	if !s.tls() {
		for _, k := range SecurityProperties {
			if _, ok := props[k]; ok && strings.HasPrefix(k, "ssl.") {
				return Security{}, propErr(k, "needs 'security.protocol' SSL or SASL_SSL (it is %s)", s.protocol())
			}
		}
		return s, nil
	}
	for _, k := range []string{"ssl.truststore.type", "ssl.keystore.type"} {
		if t := strings.ToUpper(get(k)); t != "" && t != "PEM" {
			return Security{}, propErr(k, "%s stores are not supported: use PEM (Flink/Kafka accept %s=PEM); convert with keytool and openssl", t, k)
		}
	}
	if _, ok := props["ssl.truststore.password"]; ok {
		return Security{}, propErr("ssl.truststore.password", "a PEM truststore has no password; remove it")
	}
	if _, ok := props["ssl.keystore.password"]; ok {
		return Security{}, propErr("ssl.keystore.password", "a PEM keystore has no store password; an encrypted private key's password is 'ssl.key.password'")
	}
	s.CAFile, s.CAPEM = get("ssl.truststore.location"), get("ssl.truststore.certificates")
	if s.CAFile != "" && s.CAPEM != "" {
		return Security{}, propErr("ssl.truststore.certificates", "give either it or 'ssl.truststore.location', not both")
	}
	s.KeyStoreFile, s.CertPEM, s.KeyPEM = get("ssl.keystore.location"), get("ssl.keystore.certificate.chain"), get("ssl.keystore.key")
	switch {
	case s.KeyStoreFile != "" && (s.CertPEM != "" || s.KeyPEM != ""):
		return Security{}, propErr("ssl.keystore.location", "give either it or 'ssl.keystore.certificate.chain' and 'ssl.keystore.key', not both")
	case s.CertPEM != "" && s.KeyPEM == "":
		return Security{}, propErr("ssl.keystore.certificate.chain", "needs 'ssl.keystore.key'")
	case s.KeyPEM != "" && s.CertPEM == "":
		return Security{}, propErr("ssl.keystore.key", "needs 'ssl.keystore.certificate.chain'")
	}
	s.KeyPassword = props["ssl.key.password"]
	switch a := strings.ToLower(get("ssl.endpoint.identification.algorithm")); {
	case a == "https":
	case a == "" && hasKey(props, "ssl.endpoint.identification.algorithm"):
		s.NoHostnameVerification = true
	case a != "":
		return Security{}, propErr("ssl.endpoint.identification.algorithm", "%q: want https or empty (no hostname verification)", a)
	}
	return s, nil
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// parseSASL reads the mechanism and the JAAS configuration.
func (s *Security) parseSASL(mech, jaas string) error {
	switch m := SASLMechanism(strings.ToUpper(mech)); m {
	case SASLPlain, SASLScramSHA256, SASLScramSHA512, "":
		s.Mechanism = m
	case "GSSAPI", "OAUTHBEARER", "AWS_MSK_IAM":
		return propErr("sasl.mechanism", "%s is not supported: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (Go programs can pass franz-go's mechanism in ClientOpts)", m)
	default:
		return propErr("sasl.mechanism", "%q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
	}
	if strings.TrimSpace(jaas) == "" {
		return propErr("sasl.jaas.config", "is required with 'security.protocol' %s", s.Protocol)
	}
	module, opts, err := parseJAAS(jaas)
	if err != nil {
		return propErr("sasl.jaas.config", "%v", err)
	}
	switch {
	case strings.HasSuffix(module, plainModule):
		if s.Mechanism == "" {
			s.Mechanism = SASLPlain // what the module implies (Kafka's own default, GSSAPI, is not supported)
		}
		if s.Mechanism != SASLPlain {
			return propErr("sasl.jaas.config", "PlainLoginModule does not authenticate with 'sasl.mechanism' %s: use ScramLoginModule", s.Mechanism)
		}
	case strings.HasSuffix(module, scramModule):
		if s.Mechanism == "" {
			return propErr("sasl.mechanism", "is required with ScramLoginModule: SCRAM-SHA-256 or SCRAM-SHA-512")
		}
		if s.Mechanism == SASLPlain {
			return propErr("sasl.jaas.config", "ScramLoginModule does not authenticate with 'sasl.mechanism' PLAIN: use PlainLoginModule")
		}
		s.ScramToken = strings.EqualFold(opts["tokenauth"], "true")
	default:
		return propErr("sasl.jaas.config", "login module %s is not supported: use org.apache.kafka.common.security.plain.PlainLoginModule or org.apache.kafka.common.security.scram.ScramLoginModule (OAUTHBEARER and GSSAPI/Kerberos are not supported)", module)
	}
	s.User, s.Password = opts["username"], opts["password"]
	if s.User == "" {
		return propErr("sasl.jaas.config", "has no username=\"...\"")
	}
	if _, ok := opts["password"]; !ok {
		return propErr("sasl.jaas.config", "has no password=\"...\"")
	}
	return nil
}

var jaasHead = regexp.MustCompile(`^\s*([A-Za-z_$][\w.$]*)\s+(required|requisite|sufficient|optional)\b`)

// parseJAAS reads one JAAS login module entry:
//
//	module.Class required key="value" key2=value2;
//
// Values are bare words or double-quoted (with \" and \\ escapes). Errors
// never quote the text (it holds a password).
func parseJAAS(s string) (module string, opts map[string]string, err error) {
	m := jaasHead.FindStringSubmatchIndex(s)
	if m == nil {
		return "", nil, errors.New("want `<LoginModule class> required username=\"...\" password=\"...\";`")
	}
	module = s[m[2]:m[3]]
	rest := s[m[1]:]
	opts = map[string]string{}
	i := 0
	skip := func() {
		for i < len(rest) && (rest[i] == ' ' || rest[i] == '\t' || rest[i] == '\n' || rest[i] == '\r') {
			i++
		}
	}
	for {
		skip()
		if i >= len(rest) {
			return "", nil, errors.New("does not end with ';'")
		}
		if rest[i] == ';' {
			i++
			skip()
			if i != len(rest) {
				return "", nil, errors.New("holds more than one login module entry, or text after ';'")
			}
			return module, opts, nil
		}
		j := i
		for j < len(rest) && rest[j] != '=' && rest[j] != ' ' && rest[j] != ';' {
			j++
		}
		key := rest[i:j]
		i = j
		skip()
		if key == "" || i >= len(rest) || rest[i] != '=' {
			return "", nil, fmt.Errorf("option %q has no =value", key)
		}
		i++
		skip()
		var val strings.Builder
		if i < len(rest) && rest[i] == '"' {
			i++
			for ; i < len(rest) && rest[i] != '"'; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
				}
				val.WriteByte(rest[i])
			}
			if i >= len(rest) {
				return "", nil, fmt.Errorf("the value of %s has no closing quote", key)
			}
			i++
		} else {
			for ; i < len(rest) && rest[i] != ' ' && rest[i] != ';' && rest[i] != '\t' && rest[i] != '\n'; i++ {
				val.WriteByte(rest[i])
			}
		}
		opts[key] = val.String()
	}
}

func (s Security) protocol() SecurityProtocol {
	if s.Protocol == "" {
		return Plaintext
	}
	return s.Protocol
}

func (s Security) sasl() bool { return s.Protocol == SASLPlaintext || s.Protocol == SASLSSL }
func (s Security) tls() bool  { return s.Protocol == SSL || s.Protocol == SASLSSL }

// String describes s without secrets, e.g. "SASL_SSL, SCRAM-SHA-256 as
// user alice, client certificate".
func (s Security) String() string {
	var b strings.Builder
	b.WriteString(string(s.protocol()))
	if s.sasl() {
		fmt.Fprintf(&b, ", %s as user %q", s.Mechanism, s.User)
	}
	if s.tls() {
		if s.KeyStoreFile != "" || s.CertPEM != "" {
			b.WriteString(", client certificate")
		}
		if s.NoHostnameVerification {
			b.WriteString(", no hostname verification")
		}
	}
	return b.String()
}

// Redacted returns s with its secrets (Password, KeyPEM, KeyPassword)
// replaced by "xxxxx": what a source or sink keeps once it built its
// client options, so that printing it (even with %v of a struct holding
// it) shows no secret.
func (s Security) Redacted() Security {
	for _, f := range []*string{&s.Password, &s.KeyPEM, &s.KeyPassword} {
		if *f != "" {
			*f = redactedMask
		}
	}
	return s
}

// redactedMask is internal/redact's Mask.
const redactedMask = "xxxxx"

// GoString is String, so that %#v shows no secret either.
func (s Security) GoString() string { return "kafka.Security{" + s.String() + "}" }

// LogValue is String, so that slog shows no secret.
func (s Security) LogValue() slog.Value { return slog.StringValue(s.String()) }

// Opts returns the franz-go options that apply s: a TLS dialer
// (kgo.DialTLSConfig) and a SASL mechanism (kgo.SASL). It reads and checks
// the PEM files and inline certificates. Errors name the property.
func (s Security) Opts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if s.tls() {
		cfg, err := s.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if s.sasl() {
		switch s.Mechanism {
		case SASLPlain:
			opts = append(opts, kgo.SASL(plain.Auth{User: s.User, Pass: s.Password}.AsMechanism()))
		case SASLScramSHA256:
			opts = append(opts, kgo.SASL(scram.Auth{User: s.User, Pass: s.Password, IsToken: s.ScramToken}.AsSha256Mechanism()))
		case SASLScramSHA512:
			opts = append(opts, kgo.SASL(scram.Auth{User: s.User, Pass: s.Password, IsToken: s.ScramToken}.AsSha512Mechanism()))
		default:
			return nil, propErr("sasl.mechanism", "%q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.Mechanism)
		}
	} else if s.Protocol != "" && s.Protocol != Plaintext && s.Protocol != SSL {
		return nil, propErr("security.protocol", "%q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", s.Protocol)
	}
	return opts, nil
}

func (s Security) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	caPEM, caProp := []byte(s.CAPEM), "ssl.truststore.certificates"
	if s.CAFile != "" {
		b, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, propErr("ssl.truststore.location", "%v", err)
		}
		caPEM, caProp = b, "ssl.truststore.location"
	}
	if len(caPEM) > 0 {
		pool := x509.NewCertPool()
		n := 0
		for _, blk := range pemBlocks(caPEM) {
			if blk.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				return nil, propErr(caProp, "certificate %d: %v", n+1, err)
			}
			pool.AddCert(c)
			n++
		}
		if n == 0 {
			return nil, propErr(caProp, "holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
		}
		cfg.RootCAs = pool
	}
	if s.KeyStoreFile != "" || s.CertPEM != "" {
		cert, err := s.clientCert()
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if s.NoHostnameVerification {
		// Verify the chain, not the name (Kafka's empty
		// ssl.endpoint.identification.algorithm).
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("broker sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	}
	return cfg, nil
}

// clientCert reads the client's certificate chain and private key.
func (s Security) clientCert() (tls.Certificate, error) {
	certPEM, keyPEM := []byte(s.CertPEM), []byte(s.KeyPEM)
	certProp, keyProp := "ssl.keystore.certificate.chain", "ssl.keystore.key"
	if s.KeyStoreFile != "" {
		b, err := os.ReadFile(s.KeyStoreFile)
		if err != nil {
			return tls.Certificate{}, propErr("ssl.keystore.location", "%v", err)
		}
		certPEM, keyPEM, certProp, keyProp = b, b, "ssl.keystore.location", "ssl.keystore.location"
	}
	var cert tls.Certificate
	for _, blk := range pemBlocks(certPEM) {
		if blk.Type == "CERTIFICATE" {
			cert.Certificate = append(cert.Certificate, blk.Bytes)
		}
	}
	if len(cert.Certificate) == 0 {
		return tls.Certificate{}, propErr(certProp, "holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
	}
	var keyDER []byte
	for _, blk := range pemBlocks(keyPEM) {
		if !strings.HasSuffix(blk.Type, "PRIVATE KEY") {
			continue
		}
		der, err := decryptKey(blk, s.KeyPassword)
		if err != nil {
			return tls.Certificate{}, propErr(keyProp, "private key: %v", err)
		}
		keyDER = der
		break
	}
	if keyDER == nil {
		return tls.Certificate{}, propErr(keyProp, "holds no PEM private key (-----BEGIN PRIVATE KEY-----)")
	}
	key, err := parsePrivateKey(keyDER)
	if err != nil {
		return tls.Certificate{}, propErr(keyProp, "private key: %v", err)
	}
	cert.PrivateKey = key
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return tls.Certificate{}, propErr(certProp, "certificate: %v", err)
	}
	if !publicKeyMatches(leaf.PublicKey, key) {
		return tls.Certificate{}, propErr(keyProp, "the private key does not belong to the first certificate of the chain")
	}
	cert.Leaf = leaf
	return cert, nil
}

var pemLenient = regexp.MustCompile(`-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END ([A-Z0-9 ]+)-----`)

// pemBlocks decodes the PEM blocks of b. When pem.Decode finds none (a
// single-line property whose line breaks became spaces, which Kafka
// accepts), it rebuilds the blocks, dropping white space in their bodies.
func pemBlocks(b []byte) []*pem.Block {
	var out []*pem.Block
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		out = append(out, blk)
	}
	if len(out) > 0 {
		return out
	}
	for _, m := range pemLenient.FindAllSubmatch(b, -1) {
		body := strings.Join(strings.Fields(string(m[2])), "\n")
		blk, _ := pem.Decode([]byte("-----BEGIN " + string(m[1]) + "-----\n" + body + "\n-----END " + string(m[3]) + "-----\n"))
		if blk != nil {
			out = append(out, blk)
		}
	}
	return out
}

// ExplainError adds to err, an error of a client using s against brokers,
// what the security settings say about it: an authentication failure
// names the brokers, the mechanism and the user; a TLS failure names the
// property to check. Other errors are returned as they are.
func (s Security) ExplainError(err error, brokers []string) error {
	if err == nil {
		return nil
	}
	var (
		unknownCA *x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
		header    tls.RecordHeaderError
	)
	switch {
	case s.sasl() && (errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.IllegalSaslState) ||
		errors.Is(err, kerr.UnsupportedSaslMechanism) || closedEarly(err)):
		return fmt.Errorf("SASL %s authentication as user %q with broker %s failed or was cut off "+
			"(check the username and password of 'sasl.jaas.config' and 'sasl.mechanism'): %w",
			s.Mechanism, s.User, strings.Join(brokers, ","), err)
	case s.tls() && errors.As(err, &unknownCA):
		return fmt.Errorf("TLS with broker %s: its certificate is not signed by a trusted CA (check 'ssl.truststore.location' or 'ssl.truststore.certificates'): %w", strings.Join(brokers, ","), err)
	case s.tls() && errors.As(err, &hostErr):
		return fmt.Errorf("TLS with broker %s: its certificate does not name the host (fix the certificate, or set 'ssl.endpoint.identification.algorithm' empty): %w", strings.Join(brokers, ","), err)
	case s.tls() && errors.As(err, &invalid):
		return fmt.Errorf("TLS with broker %s: its certificate is invalid: %w", strings.Join(brokers, ","), err)
	case s.tls() && strings.Contains(err.Error(), "remote error: tls: certificate required"):
		return fmt.Errorf("TLS with broker %s: the broker requires a client certificate (set 'ssl.keystore.location', or 'ssl.keystore.certificate.chain' and 'ssl.keystore.key'): %w", strings.Join(brokers, ","), err)
	case s.tls() && strings.Contains(err.Error(), "remote error: tls: "):
		return fmt.Errorf("TLS with broker %s: the broker refused the handshake (check the client certificate, 'ssl.keystore.*'): %w", strings.Join(brokers, ","), err)
	case s.tls() && errors.As(err, &header):
		return fmt.Errorf("TLS with broker %s: the broker does not speak TLS (check 'security.protocol' and the port): %w", strings.Join(brokers, ","), err)
	case !s.tls() && closedEarly(err):
		return fmt.Errorf("broker %s closed the connection (a TLS or SASL listener? check 'security.protocol'): %w", strings.Join(brokers, ","), err)
	}
	return err
}

// closedEarly reports whether err is a connection closed by the broker,
// which is how some brokers answer a failed SASL authentication.
func closedEarly(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}
