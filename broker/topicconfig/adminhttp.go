package topicconfig

import "strings"

// The admin HTTP listener's authentication settings, with Confluent's
// (rest-utils) names under Kafka's per-listener prefix of the listener
// named ADMIN: listener.name.admin.authentication.method=BASIC and so on.
// They are read by broker/httpsec; here they are only known names.
var adminHTTPDefs = map[string]*Def{
	"authentication.method": {Name: "authentication.method", Type: TypeString, Honoured: true,
		check: oneOf("NONE", "BASIC", "none", "basic"), Doc: "NONE or BASIC (HTTP basic authentication against authentication.users.file)."},
	"authentication.realm":      {Name: "authentication.realm", Type: TypeString, Honoured: true, Doc: "Realm named in WWW-Authenticate."},
	"authentication.roles":      {Name: "authentication.roles", Type: TypeList, Honoured: true, Doc: "Roles allowed in (* or unset: any user of the users file)."},
	"authentication.skip.paths": {Name: "authentication.skip.paths", Type: TypeList, Honoured: true, Doc: "Paths served without authentication, e.g. /metrics,/healthz,/readyz."},
	"auth.restricted.roles":     {Name: "auth.restricted.roles", Type: TypeList, Honoured: true, Doc: "Read-only roles: GET only."},
	"authentication.users.file": {Name: "authentication.users.file", Type: TypeString, Honoured: true, Doc: "Users file: `user: password,role...` lines (plain, MD5: or BCRYPT: passwords)."},
}

// adminHTTPDef returns the definition of listener.name.admin.<setting>.
func adminHTTPDef(name string) (*Def, bool) {
	rest, ok := strings.CutPrefix(name, listenerPrefix+"admin.")
	if !ok {
		return nil, false
	}
	d, ok := adminHTTPDefs[rest]
	return d, ok
}
