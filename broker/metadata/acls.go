package metadata

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"

	"weir/broker/acl"
)

// ACL is one stored ACL (Kafka's AccessControlEntryRecord): its id and
// binding.
type ACL struct {
	ID UUID `json:"id"`
	acl.Binding
}

// CreateACLs adds ACLs (CreateAcls). Each id is new; each binding valid.
type CreateACLs struct {
	ACLs []ACL `json:"acls"`
}

// DeleteACLs removes ACLs by id (DeleteAcls; Kafka's
// RemoveAccessControlEntryRecord). Every id must exist.
type DeleteACLs struct {
	IDs []UUID `json:"ids"`
}

// ACLStore is the optional Store capability of changing ACLs, decided
// against the current image as one atomic change.
type ACLStore interface {
	// CreateACLs adds the bindings not already present (an identical
	// ACL is not added twice, as in Kafka). They must be valid.
	CreateACLs(ctx context.Context, bindings []acl.Binding) error
	// DeleteACLs removes every ACL matching any of the filters and
	// returns, per filter, the ACLs it matched.
	DeleteACLs(ctx context.Context, filters []acl.Filter) ([][]acl.Binding, error)
}

// ACLs returns the stored ACLs sorted by resource, then entry.
func (im *Image) ACLs() []ACL {
	out := make([]ACL, 0, len(im.acls))
	for _, a := range im.acls {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return lessBinding(out[i].Binding, out[j].Binding) })
	return out
}

// ACLBindings returns the stored ACLs' bindings (for acl.NewSet).
func (im *Image) ACLBindings() []acl.Binding {
	out := make([]acl.Binding, 0, len(im.acls))
	for _, a := range im.acls {
		out = append(out, a.Binding)
	}
	return out
}

// NumACLs returns the number of stored ACLs.
func (im *Image) NumACLs() int { return len(im.acls) }

func lessBinding(a, b acl.Binding) bool {
	if a.ResourceType != b.ResourceType {
		return a.ResourceType < b.ResourceType
	}
	if a.ResourceName != b.ResourceName {
		return a.ResourceName < b.ResourceName
	}
	if a.PatternType != b.PatternType {
		return a.PatternType < b.PatternType
	}
	if a.Principal != b.Principal {
		return a.Principal < b.Principal
	}
	if a.Host != b.Host {
		return a.Host < b.Host
	}
	if a.Operation != b.Operation {
		return a.Operation < b.Operation
	}
	return a.Permission < b.Permission
}

// applyACLs returns the ACL map after a create_acls or delete_acls record.
func (im *Image) applyACLs(r Record) (map[UUID]ACL, error) {
	next := maps.Clone(im.acls)
	if next == nil {
		next = map[UUID]ACL{}
	}
	if r.Type == TypeCreateACLs {
		for _, a := range r.CreateACLs.ACLs {
			if a.ID == (UUID{}) {
				return nil, fmt.Errorf("%w: ACL without an id", ErrCorruptRecord)
			}
			if _, ok := next[a.ID]; ok {
				return nil, fmt.Errorf("%w: ACL id %s already used", ErrCorruptRecord, a.ID)
			}
			if err := a.Validate(); err != nil {
				return nil, fmt.Errorf("%w: ACL %s: %v", ErrCorruptRecord, a.Binding, err)
			}
			// Strings may alias a request buffer: keep copies.
			a.ResourceName, a.Principal, a.Host = strings.Clone(a.ResourceName), strings.Clone(a.Principal), strings.Clone(a.Host)
			next[a.ID] = a
		}
		return next, nil
	}
	for _, id := range r.DeleteACLs.IDs {
		if _, ok := next[id]; !ok {
			return nil, fmt.Errorf("%w: no ACL with id %s", ErrCorruptRecord, id)
		}
		delete(next, id)
	}
	return next, nil
}

// BuildCreateACLs returns the record adding the bindings im does not hold
// yet (duplicates within bindings count once); ok is false when there is
// nothing to add. The bindings must be valid (acl.Binding.Validate).
func BuildCreateACLs(im *Image, bindings []acl.Binding) (r Record, ok bool) {
	have := make(map[acl.Binding]bool, len(im.acls)+len(bindings))
	for _, a := range im.acls {
		have[a.Binding] = true
	}
	var add []ACL
	for _, b := range bindings {
		if have[b] {
			continue
		}
		have[b] = true
		add = append(add, ACL{ID: NewUUID(), Binding: b})
	}
	if len(add) == 0 {
		return Record{}, false
	}
	return Record{Type: TypeCreateACLs, CreateACLs: &CreateACLs{ACLs: add}}, true
}

// BuildDeleteACLs returns the record removing every ACL matching a filter
// (ok false when none does) and, per filter, the ACLs it matched.
func BuildDeleteACLs(im *Image, filters []acl.Filter) (r Record, matched [][]acl.Binding, ok bool) {
	matched = make([][]acl.Binding, len(filters))
	del := map[UUID]bool{}
	var ids []UUID
	for _, a := range im.ACLs() {
		for i, f := range filters {
			if !f.Matches(a.Binding) {
				continue
			}
			matched[i] = append(matched[i], a.Binding)
			if !del[a.ID] {
				del[a.ID] = true
				ids = append(ids, a.ID)
			}
		}
	}
	if len(ids) == 0 {
		return Record{}, matched, false
	}
	return Record{Type: TypeDeleteACLs, DeleteACLs: &DeleteACLs{IDs: ids}}, matched, true
}

// CreateACLs adds ACLs; see ACLStore.
func (s *FileStore) CreateACLs(ctx context.Context, bindings []acl.Binding) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := BuildCreateACLs(s.img.Load(), bindings)
	if !ok {
		return nil
	}
	_, err := s.proposeLocked(ctx, r)
	return err
}

// DeleteACLs removes ACLs; see ACLStore.
func (s *FileStore) DeleteACLs(ctx context.Context, filters []acl.Filter) ([][]acl.Binding, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, matched, ok := BuildDeleteACLs(s.img.Load(), filters)
	if !ok {
		return matched, nil
	}
	if _, err := s.proposeLocked(ctx, r); err != nil {
		return nil, err
	}
	return matched, nil
}
