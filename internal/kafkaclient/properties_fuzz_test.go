package kafkaclient_test

import (
	"strings"
	"testing"

	"weir/internal/kafkaclient"
)

// FuzzParsePropertiesText: any text parses or fails with a line number,
// never panics; a parsed key written back escaped parses to the same
// value; settings built from the result never panic either.
func FuzzParsePropertiesText(f *testing.F) {
	for _, s := range []string{"a=b\n", "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n", `k\=x:v\u00e9\`, "# c\n! d\n  k  v\\\n  w", "=\n:", `\u`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		m, err := kafkaclient.ParsePropertiesText(text)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		_, _, _ = kafkaclient.ParseProperties(m)
		for k, v := range m {
			esc := strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`, "\t", `\t`, "\f", `\f`, "=", `\=`, ":", `\:`, " ", `\ `, "#", `\#`, "!", `\!`)
			back, err := kafkaclient.ParsePropertiesText(esc.Replace(k) + "=" + esc.Replace(v) + "\n")
			if err != nil {
				t.Fatalf("re-parse of %q=%q: %v", k, v, err)
			}
			if len(back) != 1 || back[k] != v {
				t.Fatalf("%q=%q came back as %q", k, v, back)
			}
		}
	})
}
