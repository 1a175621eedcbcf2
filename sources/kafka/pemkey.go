package kafka

import (
	"bytes"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
)

// Encrypted PKCS#8 private keys (RFC 5958, PBES2 of RFC 8018), which Kafka
// reads from PEM keystores with ssl.key.password and which
// `openssl pkcs8 -topk8 -v2 aes-256-cbc` writes. Go's standard library
// decrypts only the legacy PEM encryption.
var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

type encryptedPrivateKeyInfo struct {
	Algorithm pkix.AlgorithmIdentifier
	Data      []byte
}

type pbes2Params struct {
	KDF pkix.AlgorithmIdentifier
	Enc pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

// decryptKey returns the DER of a PEM private key block, decrypted with
// password when it is encrypted.
func decryptKey(blk *pem.Block, password string) ([]byte, error) {
	//lint:ignore SA1019 legacy PEM encryption is what older keystores hold; Kafka reads it too
	if x509.IsEncryptedPEMBlock(blk) { //nolint:staticcheck
		if password == "" {
			return nil, errors.New("it is encrypted: set 'ssl.key.password'")
		}
		der, err := x509.DecryptPEMBlock(blk, []byte(password)) //nolint:staticcheck
		if err != nil {
			return nil, errors.New("cannot decrypt it with 'ssl.key.password' (wrong password?)")
		}
		return der, nil
	}
	if blk.Type != "ENCRYPTED PRIVATE KEY" {
		return blk.Bytes, nil
	}
	if password == "" {
		return nil, errors.New("it is encrypted: set 'ssl.key.password'")
	}
	return decryptPKCS8(blk.Bytes, []byte(password))
}

func decryptPKCS8(der, password []byte) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if _, err := asn1.Unmarshal(der, &info); err != nil {
		return nil, fmt.Errorf("not an encrypted PKCS#8 key: %v", err)
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("encryption %v is not supported: re-encrypt with `openssl pkcs8 -topk8 -v2 aes-256-cbc`", info.Algorithm.Algorithm)
	}
	var p pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &p); err != nil {
		return nil, fmt.Errorf("bad PBES2 parameters: %v", err)
	}
	if !p.KDF.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("key derivation %v is not supported (want PBKDF2)", p.KDF.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(p.KDF.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("bad PBKDF2 parameters: %v", err)
	}
	var prf func() hash.Hash
	switch alg := kdf.PRF.Algorithm; {
	case len(alg) == 0 || alg.Equal(oidHMACSHA1):
		prf = sha1.New
	case alg.Equal(oidHMACSHA256):
		prf = sha256.New
	case alg.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, fmt.Errorf("PBKDF2 hash %v is not supported", alg)
	}
	var (
		keyLen int
		newCBC func(key []byte) (cipher.Block, error)
	)
	switch alg := p.Enc.Algorithm; {
	case alg.Equal(oidAES128CBC):
		keyLen, newCBC = 16, aes.NewCipher
	case alg.Equal(oidAES192CBC):
		keyLen, newCBC = 24, aes.NewCipher
	case alg.Equal(oidAES256CBC):
		keyLen, newCBC = 32, aes.NewCipher
	case alg.Equal(oidDESEDE3CBC):
		keyLen, newCBC = 24, des.NewTripleDESCipher
	default:
		return nil, fmt.Errorf("cipher %v is not supported (want AES-CBC or DES-EDE3-CBC)", alg)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(p.Enc.Parameters.FullBytes, &iv); err != nil {
		return nil, fmt.Errorf("bad cipher parameters: %v", err)
	}
	key, err := pbkdf2.Key(prf, string(password), kdf.Salt, kdf.Iterations, keyLen)
	if err != nil {
		return nil, err
	}
	block, err := newCBC(key)
	if err != nil {
		return nil, err
	}
	if len(iv) != block.BlockSize() || len(info.Data) == 0 || len(info.Data)%block.BlockSize() != 0 {
		return nil, errors.New("bad encrypted key length")
	}
	out := make([]byte, len(info.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, info.Data)
	// PKCS#7 padding; a wrong password shows as bad padding or bad DER.
	n := int(out[len(out)-1])
	if n == 0 || n > block.BlockSize() || !bytes.Equal(out[len(out)-n:], bytes.Repeat([]byte{byte(n)}, n)) {
		return nil, errors.New("cannot decrypt it with 'ssl.key.password' (wrong password?)")
	}
	return out[:len(out)-n], nil
}

// parsePrivateKey reads a PKCS#8, PKCS#1 (RSA) or SEC 1 (EC) key.
func parsePrivateKey(der []byte) (crypto.Signer, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
		return nil, fmt.Errorf("unsupported key type %T", k)
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return nil, errors.New("not a PKCS#8, PKCS#1 or EC private key (wrong 'ssl.key.password'?)")
}

// publicKeyMatches reports whether key is pub's private key.
func publicKeyMatches(pub any, key crypto.Signer) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	e, ok := key.Public().(equaler)
	return ok && e.Equal(pub)
}
