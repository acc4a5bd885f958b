package quota

import (
	"fmt"

	"weir/broker/metadata"
)

// The match types of a DescribeClientQuotas filter component.
const (
	MatchExact     = 0 // the entity type with this name
	MatchDefault   = 1 // the entity type's default
	MatchSpecified = 2 // any entity of the type (named or default)
)

// Component is one DescribeClientQuotas filter component.
type Component struct {
	EntityType string
	MatchType  int8
	Match      *string
}

// Describe returns the entries matching a DescribeClientQuotas filter, as
// Kafka's ClientQuotasImage.describe: every component must match (its
// type present, named as asked); strict also requires the entity to have
// no other parts. A bad filter gives INVALID_REQUEST or
// UNSUPPORTED_VERSION with Kafka's message.
func Describe(entries []metadata.QuotaEntry, filter []Component, strict bool) ([]metadata.QuotaEntry, *Error) {
	exact := map[string]*string{}
	typed := map[string]bool{}
	for _, c := range filter {
		if c.EntityType == "" {
			return nil, invalid("Invalid empty entity type.")
		}
		if _, dup := exact[c.EntityType]; dup || typed[c.EntityType] {
			return nil, invalid("Entity type %s cannot appear more than once in the filter.", c.EntityType)
		}
		switch c.EntityType {
		case EntityUser, EntityClientID, EntityIP:
		default:
			return nil, &Error{Code: "UNSUPPORTED_VERSION", Msg: fmt.Sprintf("Unsupported entity type %s", c.EntityType)}
		}
		switch c.MatchType {
		case MatchExact:
			if c.Match == nil {
				return nil, invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
			exact[c.EntityType] = c.Match
		case MatchDefault:
			if c.Match != nil {
				return nil, invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
			}
			exact[c.EntityType] = nil
		case MatchSpecified:
			if c.Match != nil {
				return nil, invalid("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
			}
			typed[c.EntityType] = true
		default:
			return nil, &Error{Code: "UNSUPPORTED_VERSION", Msg: fmt.Sprintf("Unknown match type %d", c.MatchType)}
		}
	}
	has := func(t string) bool { _, ok := exact[t]; return ok || typed[t] }
	if has(EntityIP) && (has(EntityUser) || has(EntityClientID)) {
		return nil, invalid("Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")
	}
	var out []metadata.QuotaEntry
	for _, e := range entries {
		if matches(e.Entity, exact, typed, strict) {
			out = append(out, e)
		}
	}
	return out, nil
}

func matches(parts []metadata.QuotaEntityPart, exact map[string]*string, typed map[string]bool, strict bool) bool {
	if strict && len(parts) != len(exact)+len(typed) {
		return false
	}
	find := func(t string) (metadata.QuotaEntityPart, bool) {
		for _, p := range parts {
			if p.Type == t {
				return p, true
			}
		}
		return metadata.QuotaEntityPart{}, false
	}
	for t, name := range exact {
		p, ok := find(t)
		if !ok || (p.Name == nil) != (name == nil) || (name != nil && *p.Name != *name) {
			return false
		}
	}
	for t := range typed {
		if _, ok := find(t); !ok {
			return false
		}
	}
	return true
}
