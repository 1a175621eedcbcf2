package kafka

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestParseSecurityJAAS(t *testing.T) {
	cases := []struct {
		props map[string]string
		want  Security
	}{
		{map[string]string{"security.protocol": "sasl_ssl",
			"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="p\"w d";`},
			Security{Protocol: SASLSSL, Mechanism: SASLPlain, User: "alice", Password: `p"w d`}},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
			"sasl.jaas.config": "org.apache.flink.kafka.shaded.org.apache.kafka.common.security.scram.ScramLoginModule required\n username=bob password=pw tokenauth=\"true\" ;"},
			Security{Protocol: SASLPlaintext, Mechanism: SASLScramSHA512, User: "bob", Password: "pw", ScramToken: true}},
		{map[string]string{"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": ""},
			Security{Protocol: SSL, NoHostnameVerification: true}},
		{map[string]string{}, Security{}},
	}
	for _, c := range cases {
		got, err := ParseSecurity(c.props)
		if err != nil {
			t.Errorf("%v: %v", c.props, err)
		} else if got != c.want {
			t.Errorf("%v: got %#v (%+v), want %+v", c.props, got, got, c.want)
		}
	}
}

func TestParseSecurityErrorsHideValues(t *testing.T) {
	const pw = "s3cr3t-value"
	for _, jaas := range []string{
		`PlainLoginModule required username="a" password="` + pw,
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="` + pw + `"`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="` + pw + `"; extra`,
		`org.apache.kafka.common.security.plain.PlainLoginModule required password="` + pw + `";`,
		pw,
	} {
		_, err := ParseSecurity(map[string]string{"security.protocol": "SASL_SSL", "sasl.jaas.config": jaas})
		var pe *PropertyError
		if !errors.As(err, &pe) || pe.Property != "sasl.jaas.config" {
			t.Errorf("%q: error %v, want one about sasl.jaas.config", jaas, err)
		} else if strings.Contains(err.Error(), pw) {
			t.Errorf("%q: error shows the password: %v", jaas, err)
		}
	}
}

func TestSecurityPrintsNoSecret(t *testing.T) {
	s := Security{Protocol: SASLSSL, Mechanism: SASLScramSHA256, User: "bob", Password: "s3cr3t", KeyPEM: "KEYDATA", KeyPassword: "kp"}
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "security", s)
	out := fmt.Sprintf("%v %+v %#v %s", s, s, s, logged.String())
	type holder struct{ sec Security }
	out += fmt.Sprintf("%+v", holder{s.Redacted()})
	for _, secret := range []string{"s3cr3t", "KEYDATA", "kp\""} {
		if strings.Contains(out, secret) {
			t.Fatalf("printed security shows %q: %s", secret, out)
		}
	}
	if !strings.Contains(out, `SCRAM-SHA-256 as user "bob"`) {
		t.Fatalf("printed security does not describe itself: %s", out)
	}
}

// encryptPKCS8 is what `openssl pkcs8 -topk8 -v2 aes-256-cbc -v2prf
// hmacWithSHA256` writes.
func encryptPKCS8(t *testing.T, der []byte, password string) []byte {
	salt, iv := make([]byte, 16), make([]byte, 16)
	rand.Read(salt)
	rand.Read(iv)
	key, err := pbkdf2.Key(sha256.New, password, salt, 2048, 32)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := aes.NewCipher(key)
	n := aes.BlockSize - len(der)%aes.BlockSize
	plain := append(append([]byte{}, der...), bytes.Repeat([]byte{byte(n)}, n)...)
	enc := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(enc, plain)
	must := func(b []byte, err error) asn1.RawValue {
		if err != nil {
			t.Fatal(err)
		}
		return asn1.RawValue{FullBytes: b}
	}
	kdf := must(asn1.Marshal(pbkdf2Params{Salt: salt, Iterations: 2048, KeyLength: 32, PRF: pkix.AlgorithmIdentifier{Algorithm: oidHMACSHA256, Parameters: asn1.NullRawValue}}))
	encParams := must(asn1.Marshal(iv))
	params := must(asn1.Marshal(pbes2Params{KDF: pkix.AlgorithmIdentifier{Algorithm: oidPBKDF2, Parameters: kdf}, Enc: pkix.AlgorithmIdentifier{Algorithm: oidAES256CBC, Parameters: encParams}}))
	out, err := asn1.Marshal(encryptedPrivateKeyInfo{Algorithm: pkix.AlgorithmIdentifier{Algorithm: oidPBES2, Parameters: params}, Data: enc})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEncryptedPKCS8Key(t *testing.T) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	blk := &pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: encryptPKCS8(t, der, "kpass")}
	got, err := decryptKey(blk, "kpass")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, der) {
		t.Fatal("decrypted key differs")
	}
	// Bad padding catches most wrong passwords; the rest do not parse.
	if wrong, err := decryptKey(blk, "wrong"); err == nil {
		if _, err := parsePrivateKey(wrong); err == nil {
			t.Fatal("a wrong password gave a key")
		}
	}
	if _, err := decryptKey(blk, ""); err == nil || !strings.Contains(err.Error(), "ssl.key.password") {
		t.Fatalf("no password: %v", err)
	}
}
