package kafkaclient

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/sr"

	"weir/internal/srclient"
)

// Registry is how a schema registry client connects: its URLs, TLS for
// https URLs and HTTP basic auth, from Confluent's client settings
// schema.registry.url, schema.registry.ssl.truststore.location,
// schema.registry.ssl.keystore.location (PEM: certificate and key),
// schema.registry.ssl.key.password (an encrypted PKCS#8 key) and
// basic.auth.user.info. The client is built by internal/srclient; the
// password prints as [redacted].
type Registry struct {
	URLs     []string
	CAFile   string
	CertFile string // PEM certificate chain and key
	// KeyPassword decrypts CertFile's key when it is encrypted PKCS#8.
	KeyPassword Secret
	User        string
	Password    Secret
}

func parseRegistry(props map[string]string) (Registry, error) {
	var r Registry
	if v := strings.TrimSpace(props[PropRegistryURL]); v != "" {
		for _, u := range strings.Split(v, ",") {
			if u = strings.TrimSpace(u); u != "" {
				r.URLs = append(r.URLs, u)
			}
		}
	}
	r.CAFile = strings.TrimSpace(props[PropRegistryTruststore])
	r.CertFile = strings.TrimSpace(props[PropRegistryKeystore])
	if p, ok := props[PropRegistryKeyPass]; ok {
		if r.CertFile == "" {
			return r, fmt.Errorf("%w: %s without %s", ErrInvalid, PropRegistryKeyPass, PropRegistryKeystore)
		}
		r.KeyPassword = Secret(p)
	}
	src := strings.ToUpper(strings.TrimSpace(props[PropBasicAuthSource]))
	info, hasInfo := props[PropBasicAuthUserInfo]
	switch src {
	case "", "USER_INFO", "URL":
		if hasInfo {
			user, pass, ok := strings.Cut(info, ":")
			if !ok || user == "" {
				return r, fmt.Errorf("%w: %s must be user:password", ErrInvalid, PropBasicAuthUserInfo)
			}
			r.User, r.Password = user, Secret(pass)
		}
	default:
		return r, fmt.Errorf("%w: %s %s is not supported: use USER_INFO with %s (or URL)", ErrInvalid, PropBasicAuthSource, src, PropBasicAuthUserInfo)
	}
	return r, nil
}

// WithURL returns r with url as its only URL when url is not empty.
func (r Registry) WithURL(url string) Registry {
	if url != "" {
		r.URLs = []string{url}
	}
	return r
}

// SRClient returns r as srclient options.
func (r Registry) SRClient() srclient.Options {
	o := srclient.Options{URLs: strings.Join(r.URLs, ","), CAFile: r.CAFile, CertFile: r.CertFile, KeyPassword: r.KeyPassword, UserAgent: "weir"}
	if r.User != "" {
		o.UserInfo = r.User + ":" + string(r.Password)
	}
	return o
}

// NewRegistry returns a schema registry client (franz-go's sr, built by
// internal/srclient) for r.
func NewRegistry(r Registry) (*sr.Client, error) {
	if len(r.URLs) == 0 {
		return nil, fmt.Errorf("%w: schema registry: no URL", ErrInvalid)
	}
	cl, err := srclient.New(r.SRClient())
	if err != nil {
		return nil, fmt.Errorf("schema registry %s: %w", srclient.Redact(strings.Join(r.URLs, ",")), err)
	}
	return cl, nil
}

// registryProps are the client properties of the schema registry
// connection (Confluent's names), the keys RegistryProperties keeps.
var registryProps = []string{PropBasicAuthSource, PropBasicAuthUserInfo, PropRegistryTruststore, PropRegistryKeystore, PropRegistryKeyPass}

// IsRegistryProperty reports whether name is a setting of the schema
// registry client other than its URL (RegistryProperties' keys).
func IsRegistryProperty(name string) bool { return slices.Contains(registryProps, name) }

// RegistryProperties returns the schema registry settings of props (a
// pipeline's client_config): what an Avro connector needs to reach the
// run's registry (OpenRegistry). nil when props has none.
func RegistryProperties(props map[string]string) map[string]string {
	var out map[string]string
	for _, k := range registryProps {
		if v, ok := props[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// OpenRegistry returns a schema registry client for url with the TLS and
// basic auth settings in props (RegistryProperties' keys: an Avro
// connector's schema_registry_config). The one way connectors open a
// registry; errors name the property, never a secret.
func OpenRegistry(url string, props map[string]string) (*sr.Client, error) {
	var other []string
	for k := range props {
		if !IsRegistryProperty(k) {
			other = append(other, k)
		}
	}
	if len(other) > 0 {
		sort.Strings(other)
		return nil, fmt.Errorf("%w: schema registry settings: weir does not read %s (it reads %s)", ErrInvalid, strings.Join(other, ", "), strings.Join(registryProps, ", "))
	}
	r, err := parseRegistry(props)
	if err != nil {
		return nil, err
	}
	return NewRegistry(r.WithURL(url))
}
