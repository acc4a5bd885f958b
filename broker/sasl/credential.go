package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"

	"weir/broker/metadata"
)

// ScramCredential is what the server keeps of a SCRAM user for one
// mechanism (RFC 5802 section 3): the salt and iteration count the client
// derives its salted password with, StoredKey = H(HMAC(salted, "Client
// Key")) to verify the client's proof, ServerKey = HMAC(salted, "Server
// Key") to sign the server's answer. The password and the salted
// password are not in it.
type ScramCredential struct {
	Mechanism  string
	Salt       []byte
	Iterations int32
	StoredKey  []byte
	ServerKey  []byte
}

// Kafka's limits on SCRAM iterations (ScramMechanism, both mechanisms).
const (
	MinScramIterations = 4096
	MaxScramIterations = 16384
	// DefaultScramIterations is kafka-configs' default.
	DefaultScramIterations = 4096
)

// ScramMechanismCode is the mechanism's number in
// AlterUserScramCredentials and DescribeUserScramCredentials (Kafka's
// ScramMechanism: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512), 0 if not SCRAM.
func ScramMechanismCode(mechanism string) int8 {
	switch mechanism {
	case ScramSHA256:
		return 1
	case ScramSHA512:
		return 2
	}
	return 0
}

// ScramMechanismName is the inverse of ScramMechanismCode ("" if unknown).
func ScramMechanismName(code int8) string {
	switch code {
	case 1:
		return ScramSHA256
	case 2:
		return ScramSHA512
	}
	return ""
}

func scramHash(mechanism string) (func() hash.Hash, error) {
	switch mechanism {
	case ScramSHA256:
		return sha256.New, nil
	case ScramSHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("unknown SCRAM mechanism %q (%s or %s)", mechanism, ScramSHA256, ScramSHA512)
}

// CheckIterations returns Kafka's text for an iteration count out of
// range ("Too few iterations", "Too many iterations"), "" if it is
// acceptable.
func CheckIterations(iterations int32) string {
	if iterations < MinScramIterations {
		return "Too few iterations"
	}
	if iterations > MaxScramIterations {
		return "Too many iterations"
	}
	return ""
}

// CredentialFromSaltedPassword derives the stored credential from a salted
// password (what AlterUserScramCredentials carries).
func CredentialFromSaltedPassword(mechanism string, salt, salted []byte, iterations int32) (ScramCredential, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	if len(salt) == 0 {
		return ScramCredential{}, fmt.Errorf("empty salt")
	}
	if len(salted) != h().Size() {
		return ScramCredential{}, fmt.Errorf("salted password of %d bytes, %s needs %d", len(salted), mechanism, h().Size())
	}
	clientKey := hmacOf(h, salted, "Client Key")
	stored := h()
	stored.Write(clientKey)
	return ScramCredential{
		Mechanism: mechanism, Salt: append([]byte(nil), salt...), Iterations: iterations,
		StoredKey: stored.Sum(nil), ServerKey: hmacOf(h, salted, "Server Key"),
	}, nil
}

// NewScramCredential salts password (a random salt when salt is nil) and
// derives the stored credential, as Kafka's ScramFormatter does (the
// password's UTF-8 bytes, no SASLprep).
func NewScramCredential(mechanism, password string, salt []byte, iterations int32) (ScramCredential, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	if msg := CheckIterations(iterations); msg != "" {
		return ScramCredential{}, fmt.Errorf("%s iterations %d: %s (%d..%d)", mechanism, iterations, msg, MinScramIterations, MaxScramIterations)
	}
	if salt == nil {
		salt = make([]byte, 32)
		rand.Read(salt)
	}
	salted, err := pbkdf2.Key(h, password, salt, int(iterations), h().Size())
	if err != nil {
		return ScramCredential{}, err
	}
	return CredentialFromSaltedPassword(mechanism, salt, salted, iterations)
}

func hmacOf(h func() hash.Hash, key []byte, s string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

// MetadataStore is the ScramStore of the replicated metadata: image
// returns the current metadata image.
func MetadataStore(image func() *metadata.Image) ScramStore {
	return func(mechanism, user string) (ScramCredential, bool) {
		im := image()
		if im == nil {
			return ScramCredential{}, false
		}
		c, ok := im.ScramCredential(user, mechanism)
		if !ok {
			return ScramCredential{}, false
		}
		return ScramCredential{Mechanism: c.Mechanism, Salt: c.Salt, Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey}, true
	}
}
