package metadata

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// ClientQuota sets (or, with Remove, removes) one client quota value of
// one entity (Kafka's QuotaRecord): Key is the quota's name
// (producer_byte_rate, consumer_byte_rate, request_percentage, ...), the
// entity a user, a client id or both, each by name or as the default.
// broker/quota validates names and values before a record is built.
type ClientQuota struct {
	Entity []QuotaEntityPart `json:"entity"`
	Key    string            `json:"key"`
	Value  float64           `json:"value,omitempty"`
	Remove bool              `json:"remove,omitempty"`
}

// QuotaEntityPart is one part of a quota entity: its type ("user",
// "client-id") and name; a nil Name is the default entity of the type
// (Kafka's <default>).
type QuotaEntityPart struct {
	Type string  `json:"type"`
	Name *string `json:"name"`
}

// QuotaEntry is one entity's quota values in an Image.
type QuotaEntry struct {
	// Entity's parts are sorted by type.
	Entity []QuotaEntityPart
	Values map[string]float64
}

// ClientQuotaAlterer is the optional Store capability of changing client
// quotas (AlterClientQuotas): the records are applied in order, as one
// change where the store can (one controller entry).
type ClientQuotaAlterer interface {
	AlterClientQuotas(ctx context.Context, changes []ClientQuota) error
}

// quotaKey is the canonical map key of an entity: its parts sorted by
// type, "type=name" or "type" for a default, joined by NUL.
func quotaKey(parts []QuotaEntityPart) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(0)
		}
		b.WriteString(p.Type)
		if p.Name != nil {
			b.WriteByte('=')
			b.WriteString(*p.Name)
		}
	}
	return b.String()
}

// sortedParts returns a deep copy of parts sorted by type, or an error
// for an empty entity, an empty type or a type given twice.
func sortedParts(parts []QuotaEntityPart) ([]QuotaEntityPart, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: client quota with an empty entity", ErrCorruptRecord)
	}
	out := make([]QuotaEntityPart, len(parts))
	for i, p := range parts {
		out[i].Type = strings.Clone(p.Type)
		if p.Name != nil {
			n := strings.Clone(*p.Name)
			out[i].Name = &n
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	for i, p := range out {
		if p.Type == "" || (i > 0 && out[i-1].Type == p.Type) {
			return nil, fmt.Errorf("%w: client quota entity %q: empty or repeated type", ErrCorruptRecord, quotaKey(out))
		}
	}
	return out, nil
}

// applyQuota returns the quota map after r.
func (im *Image) applyQuota(r *ClientQuota) (map[string]QuotaEntry, error) {
	parts, err := sortedParts(r.Entity)
	if err != nil {
		return nil, err
	}
	if r.Key == "" {
		return nil, fmt.Errorf("%w: client quota of %q without a key", ErrCorruptRecord, quotaKey(parts))
	}
	k := quotaKey(parts)
	out := maps.Clone(im.quotas)
	if out == nil {
		out = map[string]QuotaEntry{}
	}
	cur := out[k]
	vals := maps.Clone(cur.Values)
	if vals == nil {
		vals = map[string]float64{}
	}
	if r.Remove {
		delete(vals, r.Key)
	} else {
		vals[strings.Clone(r.Key)] = r.Value
	}
	if len(vals) == 0 {
		delete(out, k)
	} else {
		out[k] = QuotaEntry{Entity: parts, Values: vals}
	}
	return out, nil
}

// ClientQuotas returns every entity with quotas, sorted by entity. The
// entries are shared: do not modify them.
func (im *Image) ClientQuotas() []QuotaEntry {
	keys := slices.Sorted(maps.Keys(im.quotas))
	out := make([]QuotaEntry, len(keys))
	for i, k := range keys {
		out[i] = im.quotas[k]
	}
	return out
}

// ClientQuota returns the quota values of one entity (nil if none).
func (im *Image) ClientQuota(entity []QuotaEntityPart) map[string]float64 {
	parts, err := sortedParts(entity)
	if err != nil {
		return nil
	}
	return im.quotas[quotaKey(parts)].Values
}

// quotaRecords are the records that rebuild the image's quotas.
func (im *Image) quotaRecords() []Record {
	var out []Record
	for _, e := range im.ClientQuotas() {
		for _, k := range slices.Sorted(maps.Keys(e.Values)) {
			out = append(out, Record{Type: TypeClientQuota, ClientQuota: &ClientQuota{Entity: e.Entity, Key: k, Value: e.Values[k]}})
		}
	}
	return out
}

// AlterClientQuotas applies quota changes, each durable before the next;
// see ClientQuotaAlterer.
func (s *FileStore) AlterClientQuotas(ctx context.Context, changes []ClientQuota) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range changes {
		if _, err := s.proposeLocked(ctx, Record{Type: TypeClientQuota, ClientQuota: &changes[i]}); err != nil {
			return err
		}
	}
	return nil
}
