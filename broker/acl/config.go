package acl

import (
	"fmt"
	"strconv"
	"strings"
)

// Kafka's config names of the authorizer.
const (
	ConfigClassName     = "authorizer.class.name"
	ConfigSuperUsers    = "super.users"
	ConfigAllowIfNoACLs = "allow.everyone.if.no.acl.found"
)

// The class names that switch ACLs on: Kafka's KRaft authorizer and the
// ZooKeeper-era one (same ACL semantics for these purposes).
const (
	StandardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	LegacyAuthorizer   = "kafka.security.authorizer.AclAuthorizer"
)

// Config is the authorizer's configuration.
type Config struct {
	// SuperUsers are allowed everything (super.users).
	SuperUsers []string
	// AllowIfNoACLs is allow.everyone.if.no.acl.found.
	AllowIfNoACLs bool
}

// ParseConfig reads the authorizer settings from broker configs (Kafka
// names). It returns nil without error when authorizer.class.name is
// unset or empty: no authorizer, everything allowed. A class name weir
// does not implement is an error naming it.
func ParseConfig(configs map[string]string) (*Config, error) {
	class := strings.TrimSpace(configs[ConfigClassName])
	switch class {
	case "":
		return nil, nil
	case StandardAuthorizer, LegacyAuthorizer:
	default:
		return nil, fmt.Errorf("%s=%s: weir implements only %s (and accepts %s as the same): "+
			"remove the setting for no authorization, or use one of these", ConfigClassName, class, StandardAuthorizer, LegacyAuthorizer)
	}
	c := &Config{}
	if v, ok := configs[ConfigAllowIfNoACLs]; ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("%s=%q: want true or false", ConfigAllowIfNoACLs, v)
		}
		c.AllowIfNoACLs = b
	}
	for _, u := range strings.Split(configs[ConfigSuperUsers], ";") {
		u = strings.TrimSpace(u)
		if u == "" {
			continue
		}
		if err := ValidatePrincipal(u); err != nil {
			return nil, fmt.Errorf("%s: %v", ConfigSuperUsers, err)
		}
		c.SuperUsers = append(c.SuperUsers, u)
	}
	return c, nil
}
