package mysql

import (
	"crypto/tls"
	"fmt"
	"net"
	"strings"

	"weir/connectors"
	"weir/internal/pemfile"
)

// SSL modes, with the names of MySQL's --ssl-mode (and Debezium's
// database.ssl.mode, in lower case).
const (
	SSLDisabled       = "DISABLED"        // plaintext
	SSLPreferred      = "PREFERRED"       // TLS when the server offers it, without verifying it; else plaintext
	SSLRequired       = "REQUIRED"        // TLS, the server's certificate not verified
	SSLVerifyCA       = "VERIFY_CA"       // TLS, the certificate must chain to ssl_ca
	SSLVerifyIdentity = "VERIFY_IDENTITY" // VERIFY_CA and the certificate must name the host (or ssl_server_name)
)

// tlsFields are the spec's TLS settings.
var tlsFields = []connectors.Field{
	{Name: "ssl_mode", Type: connectors.String, Default: "disabled", Doc: "TLS to the server, MySQL's --ssl-mode: disabled (weir's default; MySQL's client defaults to preferred), preferred (TLS if the server offers it, unverified), required (TLS, unverified), verify_ca (the server's certificate must chain to ssl_ca), verify_identity (and name the host, or ssl_server_name)"},
	{Name: "ssl_ca", Type: connectors.String, Doc: "PEM file of the CAs that sign the server's certificate (verify_ca, verify_identity; default: the system's)"},
	{Name: "ssl_cert", Type: connectors.String, Doc: "PEM client certificate (chain), for servers that require X509 (and the key, when ssl_key is empty)"},
	{Name: "ssl_key", Type: connectors.String, Doc: "PEM private key of ssl_cert"},
	{Name: "ssl_key_password", Type: connectors.String, Sensitive: true, Doc: "password of an encrypted ssl_key (PKCS#8)"},
	{Name: "ssl_server_name", Type: connectors.String, Doc: "name the server's certificate must carry with verify_identity (default: the host connected to)"},
}

func sslModeOf(s string) (string, error) {
	m := strings.ToUpper(strings.TrimSpace(s))
	switch m {
	case "":
		return SSLDisabled, nil
	case SSLDisabled, SSLPreferred, SSLRequired, SSLVerifyCA, SSLVerifyIdentity:
		return m, nil
	}
	return "", fmt.Errorf("setting %q: %q is not one of disabled, preferred, required, verify_ca, verify_identity", "ssl_mode", s)
}

func tlsFrom(c connectors.Config) (string, pemfile.Client, error) {
	mode, err := sslModeOf(c.String("ssl_mode"))
	if err != nil {
		return "", pemfile.Client{}, err
	}
	t := pemfile.Client{CAFile: c.String("ssl_ca"), CertFile: c.String("ssl_cert"), KeyFile: c.String("ssl_key"),
		KeyPassword: pemfile.Secret(c.String("ssl_key_password")), ServerName: c.String("ssl_server_name")}
	if mode == SSLDisabled && t != (pemfile.Client{}) {
		return "", t, fmt.Errorf("ssl_ca, ssl_cert, ssl_key or ssl_server_name is set but ssl_mode is disabled: set ssl_mode (verify_identity, verify_ca, required or preferred)")
	}
	if t.KeyFile != "" && t.CertFile == "" {
		return "", t, fmt.Errorf("setting %q needs %q", "ssl_key", "ssl_cert")
	}
	return mode, t, nil
}

// tlsConfig is the TLS configuration for the server at addr (nil with
// ssl_mode disabled). Files are read now: a missing file or a wrong key
// password is an error naming the setting.
func (c Config) tlsConfig(addr string) (*tls.Config, error) {
	mode, err := sslModeOf(c.SSLMode)
	if err != nil || mode == SSLDisabled {
		return nil, err
	}
	t := c.SSL
	switch mode {
	case SSLPreferred, SSLRequired:
		t.InsecureSkipVerify = true
	case SSLVerifyCA:
		t.NoHostnameCheck = true
	case SSLVerifyIdentity:
		if t.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			t.ServerName = host
		}
	}
	cfg, err := t.Config()
	if err != nil {
		return nil, fmt.Errorf("ssl settings: %w", err)
	}
	return cfg, nil
}
