package quota

import (
	"fmt"
	"math"
	"strings"

	"weir/broker/metadata"
)

// The client quota names (Kafka's QuotaConfig).
const (
	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
)

// The quota entity types (Kafka's ClientQuotaEntity).
const (
	EntityUser     = "user"
	EntityClientID = "client-id"
	EntityIP       = "ip"
)

// keyIsLong tells the quotas weir knows and whether each is a LONG (true)
// or a DOUBLE in Kafka's QuotaConfig.
var keyIsLong = map[string]bool{
	ProducerByteRate:       true,
	ConsumerByteRate:       true,
	RequestPercentage:      false,
	ControllerMutationRate: false,
}

// Name is one part of an entity: unset (the entity has no such part), the
// default (<default>), or a name.
type Name struct {
	Set     bool
	Default bool
	Name    string
}

func named(n string) Name { return Name{Set: true, Name: n} }

var defaultName = Name{Set: true, Default: true}

// Entity is a client quota entity: a user, a client id or both, each a
// name or the default. It is comparable (a map key).
type Entity struct {
	User, ClientID Name
}

func (n Name) String() string {
	if n.Default {
		return "<default>"
	}
	return n.Name
}

// String is Kafka's way of naming the entity in messages.
func (e Entity) String() string {
	var parts []string
	if e.User.Set {
		parts = append(parts, "user "+e.User.String())
	}
	if e.ClientID.Set {
		parts = append(parts, "client-id "+e.ClientID.String())
	}
	return strings.Join(parts, " ")
}

// Error is a quota request error with Kafka's error code name and message.
type Error struct {
	// Code is INVALID_REQUEST or UNSUPPORTED_VERSION (Kafka's names).
	Code string
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func invalid(format string, args ...any) *Error {
	return &Error{Code: "INVALID_REQUEST", Msg: fmt.Sprintf(format, args...)}
}

// EntityOf validates the parts of an AlterClientQuotas entry as Kafka's
// controller does (ClientQuotaControlManager) and returns the entity.
func EntityOf(parts []metadata.QuotaEntityPart) (Entity, *Error) {
	var e Entity
	if len(parts) == 0 {
		return e, invalid("Invalid empty client quota entity")
	}
	seen := map[string]bool{}
	for _, p := range parts {
		if seen[p.Type] {
			return e, invalid("Invalid empty client quota entity, duplicate entity entry %s", p.Type)
		}
		seen[p.Type] = true
		n := defaultName
		if p.Name != nil {
			n = named(*p.Name)
		}
		switch p.Type {
		case EntityUser:
			e.User = n
		case EntityClientID:
			e.ClientID = n
		case EntityIP:
			return e, invalid("ip quotas (connection_creation_rate) are not supported by weir; use max.connections.per.ip and max.connections.per.ip.overrides")
		default:
			return e, invalid("Unhandled client quota entity type: %s", p.Type)
		}
		if p.Name != nil && *p.Name == "" {
			return e, invalid("Empty %s not supported", p.Type)
		}
	}
	return e, nil
}

// Parts returns the entity as metadata parts.
func (e Entity) Parts() []metadata.QuotaEntityPart {
	var out []metadata.QuotaEntityPart
	add := func(typ string, n Name) {
		if !n.Set {
			return
		}
		p := metadata.QuotaEntityPart{Type: typ}
		if !n.Default {
			name := n.Name
			p.Name = &name
		}
		out = append(out, p)
	}
	add(EntityClientID, e.ClientID)
	add(EntityUser, e.User)
	return out
}

// CheckValue validates one quota value set on an entity (Kafka: the key
// must be a quota of the entity's type, LONG quotas integral). weir also
// refuses values that are not positive and finite: a quota of 0 or less
// would throttle every request forever (Kafka's rate check divides by it).
func CheckValue(key string, value float64) *Error {
	long, ok := keyIsLong[key]
	if !ok {
		return invalid("Invalid configuration key %s", key)
	}
	if long {
		const epsilon = 1e-6
		if math.Abs(float64(int64(value+epsilon))-value) > epsilon {
			return invalid("Configuration %s must be a Long value", key)
		}
	}
	if !(value > 0) || math.IsInf(value, 0) {
		return invalid("Configuration %s must be a positive number, got %v", key, value)
	}
	return nil
}

// Limits are the quotas in force: for each quota name, the limit of each
// entity that sets it. Immutable once built.
type Limits map[string]map[Entity]float64

// LimitsOf reads the client quotas of a metadata image.
func LimitsOf(im *metadata.Image) Limits {
	out := Limits{}
	for _, qe := range im.ClientQuotas() {
		e, err := EntityOf(qe.Entity)
		if err != nil {
			continue // not a user/client-id entity: nothing weir enforces
		}
		for k, v := range qe.Values {
			if out[k] == nil {
				out[k] = map[Entity]float64{}
			}
			out[k][e] = v
		}
	}
	return out
}

// Key identifies the rate a request is counted in: the user and client id
// parts of the entity whose quota applies, with the request's own names
// (so a default quota gives every user or client id its own rate).
type Key struct {
	User, ClientID string
}

// Resolve finds the quota that applies to user and clientID among
// limits (one quota name's), in Kafka's order of precedence (KIP-55):
//
//  1. user + client-id
//  2. user + <default> client-id
//  3. user
//  4. <default> user + client-id
//  5. <default> user + <default> client-id
//  6. <default> user
//  7. client-id
//  8. <default> client-id
//
// An empty client id matches no entity with a client-id part (an empty
// user none with a user part), as in Kafka. ok is false when no quota
// applies.
func Resolve(limits map[Entity]float64, user, clientID string) (limit float64, key Key, ok bool) {
	if len(limits) == 0 {
		return 0, Key{}, false
	}
	u, c := named(user), named(clientID)
	none := Name{}
	try := func(eu, ec Name) bool {
		if (eu.Set && user == "") || (ec.Set && clientID == "") {
			return false
		}
		if l, found := limits[Entity{User: eu, ClientID: ec}]; found {
			limit, ok = l, true
			if eu.Set {
				key.User = user
			}
			if ec.Set {
				key.ClientID = clientID
			}
			return true
		}
		return false
	}
	_ = try(u, c) || try(u, defaultName) || try(u, none) ||
		try(defaultName, c) || try(defaultName, defaultName) || try(defaultName, none) ||
		try(none, c) || try(none, defaultName)
	return limit, key, ok
}

// UserOf returns the user name of a principal ("User:alice" → "alice"):
// the name user quotas match, as Kafka's KafkaPrincipal.getName.
func UserOf(principal string) string {
	if _, name, ok := strings.Cut(principal, ":"); ok {
		return name
	}
	return principal
}
