package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"weir/internal/pemfile"

	"github.com/spf13/cobra"
)

// adminClient talks to the pipeline API of a running weir run (its
// admin listener): weir tap and weir top.
type adminClient struct {
	base string
	hc   *http.Client
	// user and pass are the basic auth credentials (never on the command
	// line: a file or $WEIR_ADMIN_BASIC_AUTH).
	user, pass string
}

// Environment variables of the admin client: the defaults of its flags
// and the secrets no flag takes.
const (
	EnvAdminBasicAuth = "WEIR_ADMIN_BASIC_AUTH" // user:password
	EnvAdminCAFile    = "WEIR_ADMIN_CA_FILE"
	EnvAdminCertFile  = "WEIR_ADMIN_CERT_FILE"
	EnvAdminKeyFile   = "WEIR_ADMIN_KEY_FILE"
	EnvAdminKeyPass   = "WEIR_ADMIN_KEY_PASSWORD"
)

// adminFlags are how weir tap and weir top reach weir run's admin
// listener: its address, TLS (a private CA, a client certificate) and
// basic auth, in the style of the registry flags (--registry-ca-file,
// ...): file paths as flags, secrets only in files or the environment.
type adminFlags struct {
	addr, caFile, certFile, keyFile, userInfoFile string
}

func addAdminFlags(cmd *cobra.Command, f *adminFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "admin-addr", DefaultRunAdminAddr,
		"weir run's admin listener: host:port or http(s)://host:port (https when a TLS flag below is set and no scheme is given)")
	fl.StringVar(&f.caFile, "admin-ca-file", "", "PEM CA certificates that sign an https admin listener's certificate (default $"+EnvAdminCAFile+", else the system's)")
	fl.StringVar(&f.certFile, "admin-cert-file", "", "PEM client certificate for an admin listener requiring mutual TLS, with its key unless --admin-key-file (default $"+EnvAdminCertFile+")")
	fl.StringVar(&f.keyFile, "admin-key-file", "", "PEM key of --admin-cert-file (default $"+EnvAdminKeyFile+"; an encrypted PKCS#8 key's password in $"+EnvAdminKeyPass+")")
	fl.StringVar(&f.userInfoFile, "admin-user-info-file", "", "file holding USER:PASSWORD for the admin listener's basic auth (default $"+EnvAdminBasicAuth+"=USER:PASSWORD; never a flag value, which the process list would show)")
}

// client builds the admin client of the flags (and their environment
// defaults). Errors name files and settings, never a secret.
func (f *adminFlags) client() (*adminClient, error) {
	env := func(v *string, name string) {
		if *v == "" {
			*v = strings.TrimSpace(os.Getenv(name))
		}
	}
	env(&f.caFile, EnvAdminCAFile)
	env(&f.certFile, EnvAdminCertFile)
	env(&f.keyFile, EnvAdminKeyFile)
	keyPass := pemfile.Secret(os.Getenv(EnvAdminKeyPass))
	tlsSet := f.caFile != "" || f.certFile != "" || f.keyFile != ""
	addr := strings.TrimSpace(f.addr)
	if u, err := url.Parse(addr); err == nil && u.User != nil {
		return nil, fmt.Errorf("--admin-addr: credentials in the URL are refused (the process list shows them): use --admin-user-info-file or $%s", EnvAdminBasicAuth)
	}
	if tlsSet && !strings.Contains(addr, "://") {
		addr = "https://" + addr
	}
	c := &adminClient{base: adminURL(addr), hc: &http.Client{}}
	if tlsSet {
		if !strings.HasPrefix(c.base, "https://") {
			return nil, fmt.Errorf("--admin-addr %s: the TLS flags (--admin-ca-file, --admin-cert-file, --admin-key-file) need an https:// address", c.base)
		}
		if f.certFile == "" && (f.keyFile != "" || keyPass != "") {
			return nil, errors.New("--admin-key-file: set --admin-cert-file too")
		}
		tc, err := pemfile.Client{CAFile: f.caFile, CertFile: f.certFile, KeyFile: f.keyFile, KeyPassword: keyPass}.Config()
		if err != nil {
			return nil, fmt.Errorf("admin listener TLS: %w", err)
		}
		c.hc.Transport = &http.Transport{TLSClientConfig: tc, Proxy: http.ProxyFromEnvironment}
	}
	info, from := os.Getenv(EnvAdminBasicAuth), "$"+EnvAdminBasicAuth
	if f.userInfoFile != "" {
		b, err := os.ReadFile(f.userInfoFile)
		if err != nil {
			return nil, fmt.Errorf("--admin-user-info-file: %w", err)
		}
		info, from = strings.TrimRight(string(b), "\r\n"), "--admin-user-info-file "+f.userInfoFile
	}
	if info != "" {
		user, pass, ok := strings.Cut(info, ":")
		if !ok || user == "" {
			return nil, fmt.Errorf("%s: want USER:PASSWORD", from)
		}
		c.user, c.pass = user, pass
	}
	return c, nil
}

// newAdminClient is the client of a plain address (tests, defaults).
func newAdminClient(addr string) *adminClient {
	c, err := (&adminFlags{addr: addr}).client()
	if err != nil {
		return &adminClient{base: adminURL(addr), hc: &http.Client{}}
	}
	return c
}

// do sends a request and returns the response of a 2xx answer; any other
// answer is an error carrying the API's message.
func (c *adminClient) do(ctx context.Context, method, path string, q url.Values) (*http.Response, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	if c.user != "" {
		req.SetBasicAuth(c.user, c.pass)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		hint := "is weir run running with this --admin-addr?"
		var ue x509.UnknownAuthorityError
		var he x509.HostnameError
		switch {
		case errors.As(err, &ue):
			hint = "its certificate is signed by a CA this host does not trust: --admin-ca-file"
		case errors.As(err, &he):
			hint = "its certificate does not name this host: use the name it carries in --admin-addr"
		case strings.Contains(err.Error(), "certificate required") || strings.Contains(err.Error(), "bad certificate"):
			hint = "it requires a client certificate: --admin-cert-file"
		case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
			hint = "it serves plain HTTP: http:// in --admin-addr, no TLS flags"
		}
		return nil, fmt.Errorf("weir run's admin listener at %s: %w (%s)", c.base, err, hint)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		resp.Body.Close()
		if c.user == "" {
			return nil, fmt.Errorf("%s %s: 401 Unauthorized: the admin listener asks for basic auth: --admin-user-info-file or $%s", method, path, EnvAdminBasicAuth)
		}
		return nil, fmt.Errorf("%s %s: 401 Unauthorized: the admin listener refused user %q's password", method, path, c.user)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &e) == nil && (e.Error != "" || e.Message != "") {
		msg = e.Error + e.Message
	}
	if resp.StatusCode == http.StatusBadRequest && strings.Contains(msg, "HTTPS server") {
		msg += " (the admin listener at " + c.base + " serves https: https:// in --admin-addr, its CA in --admin-ca-file)"
	}
	return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, msg)
}

// getJSON decodes the answer of a GET into v.
func (c *adminClient) getJSON(ctx context.Context, path string, v any) error {
	resp, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}
