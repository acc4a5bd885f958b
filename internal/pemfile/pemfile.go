package pemfile

import (
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
)

// KeyStore reads a PEM key store: one private key ("PRIVATE KEY",
// PKCS#8; "ENCRYPTED PRIVATE KEY" with password; the older "RSA PRIVATE
// KEY" and "EC PRIVATE KEY" too) and the certificate chain, leaf first.
// Errors never contain key material or the password.
func KeyStore(certPEM, keyPEM []byte, password string) (tls.Certificate, error) {
	var cert tls.Certificate
	var key crypto.PrivateKey
	for _, data := range [][]byte{certPEM, keyPEM} {
		for len(data) > 0 {
			var b *pem.Block
			b, data = pem.Decode(data)
			if b == nil {
				break
			}
			switch b.Type {
			case "CERTIFICATE":
				cert.Certificate = append(cert.Certificate, b.Bytes)
			case "PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
				if key != nil {
					return cert, errors.New("more than one private key")
				}
				k, err := parsePrivateKey(b, password)
				if err != nil {
					return cert, err
				}
				key = k
			}
		}
	}
	if len(cert.Certificate) == 0 {
		return cert, errors.New("no PEM CERTIFICATE block")
	}
	if key == nil {
		return cert, errors.New("no PEM PRIVATE KEY block")
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return cert, fmt.Errorf("certificate: %w", err)
	}
	cert.Leaf, cert.PrivateKey = leaf, key
	// The key must belong to the leaf certificate.
	pub, ok := key.(interface{ Public() crypto.PublicKey })
	if !ok {
		return cert, errors.New("unsupported private key type")
	}
	eq, ok := pub.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !eq.Equal(leaf.PublicKey) {
		return cert, errors.New("the private key does not match the first certificate")
	}
	return cert, nil
}

func parsePrivateKey(b *pem.Block, password string) (crypto.PrivateKey, error) {
	switch b.Type {
	case "RSA PRIVATE KEY":
		return x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(b.Bytes)
	case "ENCRYPTED PRIVATE KEY":
		if password == "" {
			return nil, errors.New("the private key is encrypted: set ssl.key.password")
		}
		der, err := decryptPKCS8(b.Bytes, password)
		if err != nil {
			return nil, err
		}
		return x509.ParsePKCS8PrivateKey(der)
	}
	if _, legacy := b.Headers["Proc-Type"]; legacy {
		return nil, errors.New("legacy OpenSSL-encrypted keys are not supported: convert with openssl pkcs8 -topk8")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	return k, nil
}

// PKCS#5 v2 (RFC 8018) identifiers.
var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

type encryptedPrivateKeyInfo struct {
	Algo pkix.AlgorithmIdentifier
	Data []byte
}

type pbes2Params struct {
	KDF    pkix.AlgorithmIdentifier
	Scheme pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

// decryptPKCS8 decrypts an EncryptedPrivateKeyInfo encrypted with PBES2
// (PBKDF2 with HMAC-SHA1/256/384/512, AES-CBC or 3DES-CBC): what OpenSSL
// (openssl pkcs8 -topk8 -v2 ...) and Java's tools write, and what Kafka
// reads with ssl.key.password. PBES1 is refused.
func decryptPKCS8(der []byte, password string) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if _, err := asn1.Unmarshal(der, &info); err != nil {
		return nil, fmt.Errorf("encrypted private key: %w", err)
	}
	if !info.Algo.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("encrypted private key: algorithm %s is not supported (want PBES2: openssl pkcs8 -topk8 -v2 aes-256-cbc)", info.Algo.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algo.Parameters.FullBytes, &params); err != nil {
		return nil, fmt.Errorf("encrypted private key: PBES2 parameters: %w", err)
	}
	if !params.KDF.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("encrypted private key: key derivation %s is not supported (want PBKDF2)", params.KDF.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KDF.Parameters.FullBytes, &kdf); err != nil {
		return nil, fmt.Errorf("encrypted private key: PBKDF2 parameters: %w", err)
	}
	if kdf.Iterations <= 0 || kdf.Iterations > 10_000_000 {
		return nil, fmt.Errorf("encrypted private key: PBKDF2 iteration count %d out of range", kdf.Iterations)
	}
	var h func() hash.Hash
	switch prf := kdf.PRF.Algorithm; {
	case len(prf) == 0, prf.Equal(oidHMACSHA1):
		h = sha1.New
	case prf.Equal(oidHMACSHA256):
		h = sha256.New
	case prf.Equal(oidHMACSHA384):
		h = sha512.New384
	case prf.Equal(oidHMACSHA512):
		h = sha512.New
	default:
		return nil, fmt.Errorf("encrypted private key: PBKDF2 PRF %s is not supported", prf)
	}
	var keyLen int
	var newCipher func([]byte) (cipher.Block, error)
	switch s := params.Scheme.Algorithm; {
	case s.Equal(oidAES128CBC):
		keyLen, newCipher = 16, aes.NewCipher
	case s.Equal(oidAES192CBC):
		keyLen, newCipher = 24, aes.NewCipher
	case s.Equal(oidAES256CBC):
		keyLen, newCipher = 32, aes.NewCipher
	case s.Equal(oidDESEDE3CBC):
		keyLen, newCipher = 24, des.NewTripleDESCipher
	default:
		return nil, fmt.Errorf("encrypted private key: cipher %s is not supported (want AES-CBC)", s)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.Scheme.Parameters.FullBytes, &iv); err != nil {
		return nil, fmt.Errorf("encrypted private key: cipher IV: %w", err)
	}
	key, err := pbkdf2.Key(h, password, kdf.Salt, kdf.Iterations, keyLen)
	if err != nil {
		return nil, fmt.Errorf("encrypted private key: %w", err)
	}
	block, err := newCipher(key)
	if err != nil {
		return nil, err
	}
	if len(iv) != block.BlockSize() || len(info.Data) == 0 || len(info.Data)%block.BlockSize() != 0 {
		return nil, errors.New("encrypted private key: bad IV or data length")
	}
	out := make([]byte, len(info.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, info.Data)
	// PKCS#7 padding; a wrong password shows here (or in the parse after).
	pad := int(out[len(out)-1])
	if pad == 0 || pad > block.BlockSize() {
		return nil, errors.New("encrypted private key: wrong ssl.key.password (or a corrupt key)")
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, errors.New("encrypted private key: wrong ssl.key.password (or a corrupt key)")
		}
	}
	out = out[:len(out)-pad]
	if _, err := x509.ParsePKCS8PrivateKey(out); err != nil {
		return nil, errors.New("encrypted private key: wrong ssl.key.password (or a corrupt key)")
	}
	return out, nil
}

// TrustStore reads PEM CA certificates into a pool and returns how many
// it holds.
func TrustStore(data []byte) (*x509.CertPool, int, error) {
	pool := x509.NewCertPool()
	n := 0
	for len(data) > 0 {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, 0, fmt.Errorf("certificate %d: %w", n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, 0, errors.New("no PEM CERTIFICATE block")
	}
	return pool, n, nil
}
