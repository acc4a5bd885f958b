package registry

import (
	"net/http"
	"strings"
)

// IsWrite reports whether a request changes the registry, for read-only
// users (broker/httpsec's auth.restricted.roles). Reads are GET and HEAD
// and the two POSTs that only ask: POST /subjects/{subject} (is this
// schema registered under the subject?) and POST /compatibility/...
// (would it be compatible?). Everything else (registering, deleting,
// PUT /config, PUT /mode) writes.
func IsWrite(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	case http.MethodPost:
		p := strings.Trim(r.URL.Path, "/")
		if strings.HasPrefix(p, "compatibility/") {
			return false
		}
		if rest, ok := strings.CutPrefix(p, "subjects/"); ok && rest != "" && !strings.Contains(rest, "/") {
			return false
		}
	}
	return true
}
