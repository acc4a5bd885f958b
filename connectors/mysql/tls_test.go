package mysql

import (
	"context"
	"crypto/x509/pkix"
	"fmt"
	"strings"
	"testing"
	"time"

	"weir/broker/tlsconf/tlstest"
	"weir/connectors/mysql/mysqltest"
)

// TestTLSToMariaDB: a MariaDB server with ssl-ca/ssl-cert/ssl-key and a
// user that must show a client certificate (REQUIRE X509). The source
// with ssl_mode verify_identity, the CA and an encrypted client key
// snapshots and streams; disabled (plaintext) is refused by the server;
// a certificate naming another host fails verify_identity but passes
// verify_ca; another CA fails verify_ca; required connects unverified;
// preferred falls back to plaintext on a server without TLS.
func TestTLSToMariaDB(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "mariadb CA")
	srvCert := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "mariadb"}, Hosts: []string{"127.0.0.1", "db.weir.test"}})
	db := mysqltest.SharedWith(t, mysqltest.Options{Name: "tls", Args: []string{
		"--ssl-ca=" + tlstest.Write(t, dir, "ca.pem", ca.PEM),
		"--ssl-cert=" + tlstest.Write(t, dir, "server-cert.pem", srvCert.CertPEM),
		"--ssl-key=" + tlstest.Write(t, dir, "server-key.pem", srvCert.KeyPEM),
	}})
	const user, pass = "tlscdc", "tls-cdc-secret"
	db.Exec(t, "", "CREATE USER IF NOT EXISTS '"+user+"'@'%' IDENTIFIED BY '"+pass+"' REQUIRE X509",
		"GRANT SELECT, RELOAD, PROCESS, REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR, LOCK TABLES ON *.* TO '"+user+"'@'%'")
	cli := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: user}})
	const keyPass = "mysql-Key-pa55"
	certFile := tlstest.Write(t, dir, "client-cert.pem", cli.CertPEM)
	keyFile := tlstest.Write(t, dir, "client-key.pem", tlstest.EncryptKey(t, cli.KeyPEM, keyPass))
	caFile := tlstest.Write(t, dir, "ca-client.pem", ca.PEM)

	e := newEnvOn(t, db)
	e.exec("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20))", "INSERT INTO items VALUES (1, 'before')")
	cfg := e.config("tls-src")
	cfg.User, cfg.Password = user, pass
	cfg.SSLMode = SSLVerifyIdentity
	cfg.SSL.CAFile, cfg.SSL.CertFile, cfg.SSL.KeyFile, cfg.SSL.KeyPassword = caFile, certFile, keyFile, keyPass
	r := e.run(cfg)
	e.waitRecords(e.topic("items"), 1, 60*time.Second)
	e.exec("INSERT INTO items VALUES (2, 'streamed over TLS')")
	rs := e.waitRecords(e.topic("items"), 2, 60*time.Second)
	if got := e.decode(rs[1]).after["name"]; !strings.Contains(fmt.Sprint(got), "streamed over TLS") {
		t.Errorf("streamed row: name = %v", got)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}

	connect := func(c Config) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := New(c).connectTo(ctx, db.Addr())
		if err == nil {
			conn.Close()
		}
		return err
	}
	plain := cfg
	plain.SSLMode, plain.SSL = SSLDisabled, cfg.SSL
	plain.SSL.CAFile, plain.SSL.CertFile, plain.SSL.KeyFile, plain.SSL.KeyPassword = "", "", "", ""
	if err := connect(plain); err == nil || strings.Contains(err.Error(), pass) {
		t.Errorf("plaintext with a REQUIRE X509 user: err = %v", err)
	}
	other := cfg
	other.SSL.ServerName = "elsewhere.weir.test"
	if err := connect(other); err == nil {
		t.Error("verify_identity accepted a certificate for another name")
	}
	other.SSLMode = SSLVerifyCA
	if err := connect(other); err != nil {
		t.Errorf("verify_ca with another name: %v", err)
	}
	untrusted := cfg
	untrusted.SSLMode = SSLVerifyCA
	untrusted.SSL.CAFile = tlstest.Write(t, dir, "other-ca.pem", tlstest.NewCA(t, "other").PEM)
	if err := connect(untrusted); err == nil {
		t.Error("verify_ca accepted a server certificate of another CA")
	}
	required := cfg
	required.SSLMode, required.SSL.CAFile = SSLRequired, ""
	if err := connect(required); err != nil {
		t.Errorf("required: %v", err)
	}
	badKey := cfg
	badKey.SSL.KeyPassword = "wrong"
	if err := connect(badKey); err == nil || strings.Contains(err.Error(), keyPass) || !strings.Contains(err.Error(), "ssl") {
		t.Errorf("wrong key password: err = %v", err)
	}

	// preferred on the default server (no TLS there): plaintext.
	def := mysqltest.Shared(t)
	pref := Config{Name: "pref", Host: def.Host, Port: def.Port, User: mysqltest.CDCUser, Password: mysqltest.CDCPassword, SSLMode: SSLPreferred}
	src := New(pref)
	conn, err := src.connectTo(context.Background(), def.Addr())
	if err != nil {
		t.Fatalf("preferred against a server without TLS: %v", err)
	}
	conn.Close()
	if ssl := def.Query(t, "", "SELECT @@have_ssl"); ssl[0][0] != "YES" {
		if _, fell := src.plain.Load(def.Addr()); !fell {
			t.Errorf("preferred: have_ssl %s, but no fallback to plaintext recorded", ssl[0][0])
		}
	}
}
