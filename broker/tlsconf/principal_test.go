package tlsconf

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"strings"
	"testing"
)

// The cases of Kafka's SslPrincipalMapperTest.

func TestMappingRulesValid(t *testing.T) {
	for _, s := range []string{
		"DEFAULT",
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/`,
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT`,
		`RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/`,
		`RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L`,
		`RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U`,
		`RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/`,
		`RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/`,
	} {
		if _, err := ParseRules(s); err != nil {
			t.Errorf("ParseRules(%q): %v", s, err)
		}
	}
}

func TestMappingRulesInvalid(t *testing.T) {
	for _, s := range []string{
		"default",
		"DEFAUL",
		"DEFAULT/L",
		"DEFAULT/U",
		`RULE:CN=(.*?),OU=ServiceUsers.*/$1`,
		`rule:^CN=(.*?),OU=ServiceUsers.*$/$1/`,
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U`,
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/L`,
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/U`,
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/LU`,
	} {
		_, err := ParseRules(s)
		if err == nil {
			t.Errorf("ParseRules(%q): no error", s)
		} else if !strings.Contains(err.Error(), SSLPrincipalMappingRules) {
			t.Errorf("ParseRules(%q): error %q does not name the setting", s, err)
		}
	}
}

func TestMappingRulesMap(t *testing.T) {
	m, err := ParseRules(strings.Join([]string{
		`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L`,
		`RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L`,
		`RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U`,
		`RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U`,
		"DEFAULT",
	}, ", "))
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=Duke,OU=ServiceUsers,O=Org,C=US":        "duke",
		"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US": "duke@sme",
		"cn=duke,ou=sme,dc=mycp,dc=com":             "DUKE@SME",
		"cN=duke,OU=JavaSoft,O=Sun Microsystems":    "DUKE",
		"OU=JavaSoft,O=Sun Microsystems,C=US":       "OU=JavaSoft,O=Sun Microsystems,C=US",
	} {
		got, err := m.Map(dn)
		if err != nil || got != want {
			t.Errorf("Map(%q) = %q, %v; want %q", dn, got, err, want)
		}
	}
}

func TestMappingRulesSplitting(t *testing.T) {
	for _, c := range []struct{ want, rules string }{
		{"[]", ""},
		{"[DEFAULT]", "DEFAULT"},
		{"[RULE:/]", "RULE://"},
		{"[RULE:/.*]", "RULE:/.*/"},
		{"[RULE:/.*/L]", "RULE:/.*/L"},
		{"[RULE:/, DEFAULT]", "RULE://,DEFAULT"},
		{"[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "},
		{"[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "},
		{"[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "},
		{"[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]", "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  "},
		// empty rules are ignored
		{"[]", ",   , , ,      , , ,   "},
		{"[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"},
		{"[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "},
		{"[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"},
		// escape sequences
		{`[RULE:\/\\\(\)\n\t/\/\/]`, `RULE:\/\\\(\)\n\t/\/\//`},
		{`[RULE:\**\/+/*/L, RULE:\/*\**/**]`, `RULE:\**\/+/*/L,RULE:\/*\**/**/`},
		// rules rule
		{`[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]`,
			`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`},
	} {
		m, err := ParseRules(c.rules)
		if err != nil {
			t.Errorf("ParseRules(%q): %v", c.rules, err)
			continue
		}
		if got := m.String(); got != c.want {
			t.Errorf("ParseRules(%q) = %s; want %s", c.rules, got, c.want)
		}
	}
}

func TestMappingCommaWithWhitespace(t *testing.T) {
	m, err := ParseRules(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Map(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`); err != nil || got != `Tkac\, Adam` {
		t.Fatalf("Map = %q, %v", got, err)
	}
}

func TestMappingNoRuleApplies(t *testing.T) {
	m, err := ParseRules(`RULE:^CN=(.*)$/$1/`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Map("O=x"); err == nil {
		t.Fatal("no error")
	}
	// Kafka's literal back references: $4 with three groups stays "$4".
	m, _ = ParseRules(`RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$4/`)
	if got, err := m.Map("CN=a,OU=b,O=c"); err != nil || got != "a@$4" {
		t.Fatalf("Map = %q, %v", got, err)
	}
}

func TestSubjectDN(t *testing.T) {
	name := pkix.Name{
		Country: []string{"US"}, Organization: []string{"Ex, Inc."}, OrganizationalUnit: []string{"ops"},
		CommonName: "client één",
		ExtraNames: []pkix.AttributeTypeAndValue{{Type: asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}, Value: "example"}},
	}
	raw, err := asn1.Marshal(name.ToRDNSequence())
	if err != nil {
		t.Fatal(err)
	}
	got, err := SubjectDN(&x509.Certificate{RawSubject: raw})
	if err != nil {
		t.Fatal(err)
	}
	if want := `DC=example,CN=client één,OU=ops,O=Ex\, Inc.,C=US`; got != want {
		t.Fatalf("SubjectDN = %q; want %q", got, want)
	}
}
