package metadata

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
)

// TypeUserScramCredential sets or removes one user's SCRAM credential for
// one mechanism (Kafka's UserScramCredentialRecord and
// RemoveUserScramCredentialRecord).
const TypeUserScramCredential RecordType = "user_scram_credential"

// ErrUnknownScramCredential: a removal of a credential that does not exist.
var ErrUnknownScramCredential = errors.New("unknown SCRAM credential")

// UserScramCredential is a salted SCRAM credential: never a password.
// Delete removes the user's credential for Mechanism (the other fields
// are then empty).
type UserScramCredential struct {
	Name       string `json:"name"`
	Mechanism  string `json:"mechanism"`
	Salt       []byte `json:"salt,omitempty"`
	Iterations int32  `json:"iterations,omitempty"`
	StoredKey  []byte `json:"stored_key,omitempty"`
	ServerKey  []byte `json:"server_key,omitempty"`
	Delete     bool   `json:"delete,omitempty"`
}

// ScramAlterer is the optional Store capability of changing SCRAM
// credentials (AlterUserScramCredentials, weir broker --add-scram). The
// changes apply in order; the first that cannot apply (a removal of a
// credential that does not exist) stops them with an error wrapping
// ErrUnknownScramCredential.
type ScramAlterer interface {
	AlterScramCredentials(ctx context.Context, changes []UserScramCredential) error
}

// scramUsers maps user → mechanism → credential.
type scramUsers map[string]map[string]UserScramCredential

// ScramCredential returns user's credential for mechanism.
func (im *Image) ScramCredential(user, mechanism string) (UserScramCredential, bool) {
	c, ok := im.scram[user][mechanism]
	return c, ok
}

// ScramUsers returns the users with a SCRAM credential, sorted.
func (im *Image) ScramUsers() []string {
	out := make([]string, 0, len(im.scram))
	for u := range im.scram {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// ScramCredentials returns user's credentials sorted by mechanism.
func (im *Image) ScramCredentials(user string) []UserScramCredential {
	var out []UserScramCredential
	for _, c := range im.scram[user] {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Mechanism < out[j].Mechanism })
	return out
}

// applyScram applies a TypeUserScramCredential record to next.
func (im *Image) applyScram(next *Image, c *UserScramCredential) error {
	if c.Name == "" || c.Mechanism == "" {
		return fmt.Errorf("%w: SCRAM credential without a user or mechanism", ErrCorruptRecord)
	}
	if _, ok := im.scram[c.Name][c.Mechanism]; c.Delete && !ok {
		return fmt.Errorf("%s credential of user %q: %w", c.Mechanism, c.Name, ErrUnknownScramCredential)
	}
	if !c.Delete && (len(c.Salt) == 0 || len(c.StoredKey) == 0 || len(c.ServerKey) == 0 || c.Iterations <= 0) {
		return fmt.Errorf("%w: %s credential of user %q is incomplete", ErrCorruptRecord, c.Mechanism, c.Name)
	}
	next.scram = maps.Clone(im.scram)
	if next.scram == nil {
		next.scram = scramUsers{}
	}
	mechs := maps.Clone(im.scram[c.Name])
	if mechs == nil {
		mechs = map[string]UserScramCredential{}
	}
	if c.Delete {
		delete(mechs, c.Mechanism)
	} else {
		cc := *c
		cc.Salt, cc.StoredKey, cc.ServerKey = clone(c.Salt), clone(c.StoredKey), clone(c.ServerKey)
		mechs[c.Mechanism] = cc
	}
	if len(mechs) == 0 {
		delete(next.scram, c.Name)
	} else {
		next.scram[c.Name] = mechs
	}
	return nil
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// scramRecords is the snapshot form of the credentials.
func (im *Image) scramRecords() []Record {
	var out []Record
	for _, u := range im.ScramUsers() {
		for _, c := range im.ScramCredentials(u) {
			c := c
			out = append(out, Record{Type: TypeUserScramCredential, UserScramCredential: &c})
		}
	}
	return out
}

// AlterScramCredentials applies the changes one record each.
func (s *FileStore) AlterScramCredentials(ctx context.Context, changes []UserScramCredential) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range changes {
		c := c
		if _, err := s.proposeLocked(ctx, Record{Type: TypeUserScramCredential, UserScramCredential: &c}); err != nil {
			return err
		}
	}
	return nil
}
