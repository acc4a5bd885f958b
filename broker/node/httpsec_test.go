package node

import (
	"bufio"
	"context"
	"crypto/md5"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/sr"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/crypto/bcrypt"

	"weir/broker/tlsconf/tlstest"
	"weir/internal/kafkaclient"
	"weir/internal/srclient"
	"weir/internal/testkit"
)

const testSchema = `{"type":"record","name":"r","fields":[{"name":"a","type":"string"}]}`

// TestRegistryAndAdminOverTLSWithBasicAuth: a broker whose schema
// registry and admin listener are https with mutual TLS and basic auth
// (Confluent's names), driven by franz-go's sr client (sr.BasicAuth,
// sr.DialTLSConfig) and a plain net/http client.
func TestRegistryAndAdminOverTLSWithBasicAuth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "weir test CA")
	server := ca.Issue(t, tlstest.Leaf{})
	client := ca.Issue(t, tlstest.Leaf{})
	other := tlstest.NewCA(t, "someone else").Issue(t, tlstest.Leaf{})
	keystore := tlstest.Write(t, dir, "server.pem", server.KeyStore())
	caFile := tlstest.Write(t, dir, "ca.pem", ca.PEM)
	certFile := tlstest.Write(t, dir, "client.pem", client.CertPEM)
	keyFile := tlstest.Write(t, dir, "client.key", client.KeyPEM)
	otherCert := tlstest.Write(t, dir, "other.pem", other.CertPEM)
	otherKey := tlstest.Write(t, dir, "other.key", other.KeyPEM)

	md5sum := md5.Sum([]byte("reader-secret"))
	bc, err := bcrypt.GenerateFromPassword([]byte("ops-secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	users := tlstest.Write(t, dir, "users", []byte(strings.Join([]string{
		"# Jetty PropertyUserStore: user: password,role...",
		"writer: writer-secret,developer",
		"reader: MD5:" + hex.EncodeToString(md5sum[:]) + ",reader",
		"ops: BCRYPT:" + string(bc) + ",admin",
		"nobody: nobody-secret,guest",
	}, "\n")))

	core, logs := observer.New(zap.InfoLevel)
	n := startNode(t, Config{DataDir: t.TempDir(), KafkaAddr: "127.0.0.1:0", AdminAddr: "https://127.0.0.1:0",
		Logger: zap.New(core),
		BrokerConfigs: map[string]string{
			"listener.name.admin.ssl.keystore.location":                 keystore,
			"listener.name.admin.ssl.truststore.location":               caFile,
			"listener.name.admin.ssl.client.auth":                       "requested",
			"listener.name.admin.authentication.method":                 "BASIC",
			"listener.name.admin.authentication.users.file":             users,
			"listener.name.admin.authentication.roles":                  "admin",
			"listener.name.admin.authentication.skip.paths":             "/healthz,/readyz",
			"listener.name.admin.authentication.realm":                  "weir-admin",
			"listener.name.admin.ssl.enabled.protocols":                 "TLSv1.2,TLSv1.3",
			"listener.name.admin.ssl.principal.mapping.rules":           "DEFAULT",
			"listener.name.admin.ssl.endpoint.identification.algorithm": "https",
		},
		RegistryConfigs: map[string]string{
			"listeners":                 "https://127.0.0.1:0",
			"ssl.keystore.location":     keystore,
			"ssl.truststore.location":   caFile,
			"ssl.client.authentication": "REQUIRED",
			"authentication.method":     "BASIC",
			"authentication.realm":      "SchemaRegistry",
			"authentication.roles":      "developer,reader,admin",
			"auth.restricted.roles":     "reader",
			"authentication.users.file": users,
		},
		RegistryAddrIsDefault: true,
	})
	regURL := n.RegistryURL()
	if !strings.HasPrefix(regURL, "https://") {
		t.Fatalf("registry URL %q is not https", regURL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srFor := func(userInfo string) *sr.Client {
		cl, err := srclient.New(srclient.Options{URLs: regURL, UserInfo: userInfo, CAFile: caFile, CertFile: certFile, KeyFile: keyFile})
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	writer, reader := srFor("writer:writer-secret"), srFor("reader:reader-secret")

	// The writer registers (once the registry has read _schemas).
	var id int
	testkit.CheckFor(t, 30*time.Second, func() error {
		ss, err := writer.CreateSchema(ctx, "t-value", sr.Schema{Schema: testSchema})
		id = ss.ID
		return err
	})
	// The read-only user reads, looks up and checks compatibility...
	if s, err := reader.SchemaByID(ctx, id); err != nil || !strings.Contains(s.Schema, `"r"`) {
		t.Fatalf("reader SchemaByID: %v %v", s, err)
	}
	if _, err := reader.LookupSchema(ctx, "t-value", sr.Schema{Schema: testSchema}); err != nil {
		t.Fatalf("reader lookup: %v", err)
	}
	if _, err := reader.CheckCompatibility(ctx, "t-value", -1, sr.Schema{Schema: testSchema}); err != nil {
		t.Fatalf("reader compatibility check: %v", err)
	}
	// ...but may not write: 403 with Confluent's 40301.
	wantErr := func(what string, err error, status, code int) {
		t.Helper()
		var re *sr.ResponseError
		if !errors.As(err, &re) || re.StatusCode != status || re.ErrorCode != code {
			t.Fatalf("%s: got %v, want HTTP %d error_code %d", what, err, status, code)
		}
	}
	_, err = reader.CreateSchema(ctx, "u-value", sr.Schema{Schema: testSchema})
	wantErr("read-only register", err, 403, 40301)
	_, err = reader.DeleteSubject(ctx, "t-value", sr.SoftDelete)
	wantErr("read-only delete", err, 403, 40301)
	res := reader.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "t-value")
	wantErr("read-only PUT /config", res[0].Err, 403, 40301)
	// Wrong password, unknown user, no credentials: 401 with 40101.
	_, err = srFor("writer:Wr0ngPass").Subjects(ctx)
	wantErr("wrong password", err, 401, 40101)
	_, err = srFor("mallory:writer-secret").Subjects(ctx)
	wantErr("unknown user", err, 401, 40101)
	_, err = srFor("").Subjects(ctx)
	wantErr("no credentials", err, 401, 40101)
	// A user of the file without a role of authentication.roles: 403.
	_, err = srFor("nobody:nobody-secret").Subjects(ctx)
	wantErr("no allowed role", err, 403, 40301)

	// An encrypted PKCS#8 client key, with Confluent's client property
	// names as the Avro connectors' schema_registry_config gives them
	// (kafkaclient.OpenRegistry, built by internal/srclient).
	const keyPass = "sr-K3y-Pa55-77"
	encKeystore := tlstest.Write(t, dir, "client-enc.pem", tlstest.EncryptKey(t, client.KeyPEM, keyPass), client.CertPEM)
	props := map[string]string{
		"schema.registry.ssl.truststore.location": caFile, "schema.registry.ssl.keystore.location": encKeystore,
		"schema.registry.ssl.key.password": keyPass, "basic.auth.user.info": "writer:writer-secret",
	}
	encCl, err := kafkaclient.OpenRegistry(regURL, props)
	if err != nil {
		t.Fatal(err)
	}
	if subs, err := encCl.Subjects(ctx); err != nil || !slices.Contains(subs, "t-value") {
		t.Fatalf("subjects with an encrypted client key: %v, %v", subs, err)
	}
	props["schema.registry.ssl.key.password"] = "Wr0ngKeyPass"
	if _, err := kafkaclient.OpenRegistry(regURL, props); err == nil || strings.Contains(err.Error(), "Wr0ngKeyPass") || strings.Contains(err.Error(), "writer-secret") {
		t.Fatalf("wrong key password: %v", err)
	}

	// A failed authentication is logged with the user, host and path,
	// never the password.
	testkit.CheckFor(t, 5*time.Second, func() error {
		for _, e := range logs.FilterMessage("HTTP authentication failed").All() {
			m := e.ContextMap()
			if m["user"] == "writer" && m["host"] == "127.0.0.1" && m["path"] == "/subjects" {
				return nil
			}
		}
		return errors.New("no failure line for writer on /subjects")
	})
	for _, e := range logs.All() {
		line := fmt.Sprint(e.Message, e.ContextMap())
		for _, secret := range []string{"writer-secret", "reader-secret", "ops-secret", "Wr0ngPass", keyPass} {
			if strings.Contains(line, secret) {
				t.Fatalf("a log line holds a password: %s", line)
			}
		}
	}

	t.Run("confluent python client", func(t *testing.T) {
		confluentPythonClient(t, regURL, caFile, certFile, keyFile, otherCert, otherKey)
	})

	// mutual TLS: a client certificate from an untrusted CA, or none, is
	// refused in the handshake.
	for _, c := range []struct{ name, cert, key string }{{"untrusted CA", otherCert, otherKey}, {"no certificate", "", ""}} {
		cl, err := srclient.New(srclient.Options{URLs: regURL, UserInfo: "writer:writer-secret", CAFile: caFile, CertFile: c.cert, KeyFile: c.key})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Subjects(ctx); err == nil {
			t.Fatalf("%s: registry answered a client without a trusted certificate", c.name)
		} else {
			var re *sr.ResponseError
			if errors.As(err, &re) {
				t.Fatalf("%s: got an HTTP answer (%v), want a failed handshake", c.name, err)
			}
		}
	}
	// Plain HTTP to the TLS port: refused at once (net/http's 400 for
	// an HTTP request to an HTTPS server, then the connection closes).
	for _, addr := range []string{n.RegistryAddr(), n.AdminAddr()} {
		start := time.Now()
		c, err := net.DialTimeout("tcp", Dialable(addr), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "GET /subjects HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 400 {
			t.Fatalf("plain HTTP to %s: %v %v", addr, resp, err)
		}
		if _, err := io.ReadAll(resp.Body); err != nil {
			t.Fatalf("plain HTTP to %s: connection not closed: %v", addr, err)
		}
		c.Close()
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("plain HTTP to %s took %v", addr, d)
		}
	}

	// The admin listener: https; /metrics needs a user with role admin;
	// the health checks are open (authentication.skip.paths).
	tc := &tls.Config{RootCAs: ca.Pool()}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
	admin := "https://" + Dialable(n.AdminAddr())
	do := func(path, user, pass string) (int, string) {
		req, _ := http.NewRequest("GET", admin+path, nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := do("/readyz", "", ""); code != 200 {
		t.Fatalf("open /readyz: %d %s", code, body)
	}
	if code, body := do("/metrics", "", ""); code != 401 || !strings.Contains(body, `"error_code":40101`) {
		t.Fatalf("/metrics without credentials: %d %s", code, body)
	}
	if code, body := do("/debug/pprof/", "writer", "writer-secret"); code != 403 || !strings.Contains(body, `"error_code":40301`) {
		t.Fatalf("/debug/pprof/ as a user without role admin: %d %s", code, body)
	}
	// A Prometheus scrape: basic auth over TLS, the body parsed with
	// Prometheus's own text parser.
	code, body := do("/metrics", "ops", "ops-secret")
	if code != 200 {
		t.Fatalf("/metrics as ops: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("scrape does not parse: %v", err)
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Fatalf("scrape has no go_goroutines (%d families)", len(fams))
	}
}

// confluentPythonDir is where scripts/test installs confluent-kafka's
// schema registry client (pip --target); WEIR_CONFLUENT_SR_PY overrides.
func confluentPythonDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("WEIR_CONFLUENT_SR_PY")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "weir", "confluent-sr")
	}
	if _, err := os.Stat(filepath.Join(dir, "confluent_kafka", "schema_registry")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no confluent-kafka schema registry client in %s (scripts/test installs it): %v", dir, err)
		}
		t.Skipf("no confluent-kafka schema registry client in %s (run scripts/test once, or set WEIR_CONFLUENT_SR_PY)", dir)
	}
	return dir
}

type pyStep struct {
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	Op       string `json:"op"`
	Subject  string `json:"subject,omitempty"`
	Cert     string `json:"cert,omitempty"`
	Key      string `json:"key,omitempty"`
	// MaxRetries is the client's max.retries (nil: its default).
	MaxRetries *int `json:"max_retries,omitempty"`
}

type pyResult struct {
	OK      bool     `json:"ok"`
	ID      int      `json:"id"`
	Schema  string   `json:"schema"`
	Status  int      `json:"status"`
	Code    int      `json:"code"`
	Error   string   `json:"error"`
	Message string   `json:"message"`
	Subject []string `json:"subjects"`
}

// runPython runs testdata/confluent_sr_client.py with the steps.
func runPython(t *testing.T, dir string, cfg map[string]any) []pyResult {
	t.Helper()
	arg, _ := json.Marshal(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "testdata/confluent_sr_client.py", string(arg))
	cmd.Env = append(os.Environ(), "PYTHONPATH="+dir)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("python peer: %v\n%s\n%s", err, out, ee.Stderr)
		}
		t.Fatalf("python peer: %v", err)
	}
	var res []pyResult
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r pyResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("python peer printed %q: %v", line, err)
		}
		res = append(res, r)
	}
	return res
}

// confluentPythonClient: Confluent's own Python registry client
// (basic.auth.user.info, ssl.ca.location, ssl.certificate.location) gets
// the answers Confluent Schema Registry gives it.
func confluentPythonClient(t *testing.T, url, ca, cert, key, otherCert, otherKey string) {
	dir := confluentPythonDir(t)
	steps := []pyStep{
		{User: "writer", Password: "writer-secret", Op: "register", Subject: "py-value"},
		{User: "reader", Password: "reader-secret", Op: "get"},
		{User: "reader", Password: "reader-secret", Op: "register", Subject: "py2-value"},
		{User: "reader", Password: "reader-secret", Op: "delete", Subject: "py-value"},
		{User: "writer", Password: "Wr0ngPass", Op: "subjects"},
		{Op: "subjects"},
		{User: "writer", Password: "writer-secret", Op: "subjects"},
		// A client certificate from another CA: the handshake fails.
		// (No retries: the client retries network errors with backoff.)
		{User: "writer", Password: "writer-secret", Op: "subjects", Cert: otherCert, Key: otherKey, MaxRetries: new(int)},
	}
	res := runPython(t, dir, map[string]any{"url": url, "ca": ca, "cert": cert, "key": key, "schema": testSchema, "steps": steps})
	if len(res) != len(steps) {
		t.Fatalf("python peer: %d results for %d steps: %+v", len(res), len(steps), res)
	}
	if !res[0].OK || res[0].ID <= 0 {
		t.Fatalf("writer register: %+v", res[0])
	}
	if !res[1].OK || !strings.Contains(res[1].Schema, `"r"`) {
		t.Fatalf("reader get: %+v", res[1])
	}
	for i, want := range []struct{ status, code int }{2: {403, 40301}, 3: {403, 40301}, 4: {401, 40101}, 5: {401, 40101}} {
		if i < 2 {
			continue
		}
		if res[i].OK || res[i].Status != want.status || res[i].Code != want.code {
			t.Fatalf("step %d %+v: got %+v, want HTTP %d error_code %d", i, steps[i], res[i], want.status, want.code)
		}
	}
	if !res[6].OK || !slices.Contains(res[6].Subject, "py-value") {
		t.Fatalf("writer subjects: %+v", res[6])
	}
	if res[7].OK || res[7].Status != 0 || res[7].Error == "" {
		t.Fatalf("untrusted client certificate: %+v", res[7])
	}
}

// TestRegistryTLSReload: a registry key store file replaced by one from
// another CA is served from the next handshake on, without a restart.
func TestRegistryTLSReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca1, ca2 := tlstest.NewCA(t, "first CA"), tlstest.NewCA(t, "second CA")
	keystore := tlstest.Write(t, dir, "server.pem", ca1.Issue(t, tlstest.Leaf{}).KeyStore())
	n := startNode(t, Config{DataDir: t.TempDir(), KafkaAddr: "127.0.0.1:0", AdminAddr: "off",
		RegistryAddr: "https://127.0.0.1:0", TLSReloadInterval: 50 * time.Millisecond,
		RegistryConfigs: map[string]string{"ssl.keystore.location": keystore}})
	get := func(ca *tlstest.CA) error {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}, Timeout: 5 * time.Second}
		resp, err := hc.Get(n.RegistryURL() + "/subjects")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	if err := get(ca1); err != nil {
		t.Fatal(err)
	}
	tlstest.Write(t, dir, "server.pem.new", ca2.Issue(t, tlstest.Leaf{}).KeyStore())
	if err := os.Rename(filepath.Join(dir, "server.pem.new"), keystore); err != nil {
		t.Fatal(err)
	}
	testkit.CheckFor(t, 10*time.Second, func() error { return get(ca2) })
	if err := get(ca1); err == nil {
		t.Fatal("the old certificate is still served")
	}
}
