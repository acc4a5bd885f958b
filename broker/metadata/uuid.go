package metadata

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// UUID is a Kafka topic id (16 bytes). The zero UUID means "no id".
type UUID [16]byte

// NewUUID returns a random (version 4) UUID that is never zero.
func NewUUID() UUID {
	var u UUID
	for u == (UUID{}) {
		_, _ = rand.Read(u[:])
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
	}
	return u
}

// String returns the URL-safe base64 form Kafka tools print for topic ids.
func (u UUID) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// MarshalText encodes the UUID as 32 hex digits.
func (u UUID) MarshalText() ([]byte, error) {
	b := make([]byte, 32)
	hex.Encode(b, u[:])
	return b, nil
}

// UnmarshalText decodes 32 hex digits.
func (u *UUID) UnmarshalText(b []byte) error {
	if len(b) != 32 {
		return fmt.Errorf("%w: uuid %q is not 32 hex digits", ErrCorruptRecord, b)
	}
	if _, err := hex.Decode(u[:], b); err != nil {
		return fmt.Errorf("%w: uuid %q: %v", ErrCorruptRecord, b, err)
	}
	return nil
}
