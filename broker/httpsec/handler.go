package httpsec

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"weir/broker/tlsconf"
)

// Confluent's error codes of authentication and authorization failures.
const (
	CodeUnauthorized = 40101
	CodeForbidden    = 40301
)

// TLSReloadEvery is how often key and trust store files are checked for
// changes by default.
const TLSReloadEvery = 10 * time.Second

// Security is one HTTP listener's TLS and authentication in use.
type Security struct {
	st    *Settings
	log   *zap.Logger
	tls   *tlsconf.Server
	users *UsersFile
	fails failLog
	now   func() time.Time
}

// New loads the key and trust stores and the users file of st (nil st or
// an empty one: plain HTTP, no authentication) and starts watching them
// for changes until Close.
func New(st *Settings, lg *zap.Logger) (*Security, error) {
	if lg == nil {
		lg = zap.NewNop()
	}
	if st == nil {
		st = &Settings{}
	}
	s := &Security{st: st, log: lg, now: time.Now}
	s.fails.lg = lg
	if st.TLS != nil {
		srv, err := tlsconf.NewServer(st.TLS, lg)
		if err != nil {
			return nil, fmt.Errorf("%s listener: %w", st.Listener, err)
		}
		s.tls = srv
		every := st.ReloadEvery
		if every <= 0 {
			every = TLSReloadEvery
		}
		srv.Watch(context.Background(), every)
	}
	if st.Auth != nil {
		f, err := OpenUsersFile(st.Auth.UsersFile)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("%s listener: %s: %w", st.Listener, AuthenticationUsersFile, err)
		}
		s.users = f
		if f.users.Len() == 0 {
			lg.Warn("users file lists no user: every authenticated request is refused", zap.String("file", f.Path))
		}
	}
	return s, nil
}

// Close stops watching the key and trust stores.
func (s *Security) Close() {
	if s != nil && s.tls != nil {
		s.tls.Close()
	}
}

// Scheme is "https" with TLS, else "http".
func (s *Security) Scheme() string {
	if s == nil {
		return "http"
	}
	return s.st.Scheme()
}

// Listen binds addr (the settings' address when ""), with TLS when the
// settings have it. Plain HTTP sent to a TLS listener is answered by
// net/http with 400 and the connection closed; a handshake that does not
// finish is cut by the server's ReadHeaderTimeout.
func (s *Security) Listen(addr string) (net.Listener, error) {
	if addr == "" {
		addr = s.st.Addr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if s.tls != nil {
		return tls.NewListener(ln, s.tls.TLSConfig()), nil
	}
	return ln, nil
}

// Options tune Wrap.
type Options struct {
	// ContentType of the JSON error bodies (default application/json).
	ContentType string
	// IsWrite says a request changes state; restricted (read-only) users
	// get 403 for it. Nil: every method but GET, HEAD and OPTIONS.
	IsWrite func(*http.Request) bool
}

// Wrap returns h behind the listener's authentication (h itself without
// it). A request without valid credentials gets 401 with
// WWW-Authenticate and Confluent's body {"error_code":40101,...}; a user
// with no role of authentication.roles, or a read-only user writing, gets
// 403 with {"error_code":40301,...}. Paths of authentication.skip.paths
// pass without credentials.
func (s *Security) Wrap(h http.Handler, o Options) http.Handler {
	if s == nil || s.users == nil {
		return h
	}
	a := s.st.Auth
	if o.ContentType == "" {
		o.ContentType = "application/json"
	}
	if o.IsWrite == nil {
		o.IsWrite = func(r *http.Request) bool {
			return r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions
		}
	}
	challenge := `Basic realm="` + a.Realm + `", charset="UTF-8"`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if skipped(a.SkipPaths, r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		user, pass, err := ParseBasic(r.Header.Get("Authorization"))
		if err != nil {
			s.fails.log(s.now(), s.st.Listener, "", r, err.Error())
			w.Header().Set("WWW-Authenticate", challenge)
			writeError(w, o.ContentType, http.StatusUnauthorized, CodeUnauthorized, "Unauthorized")
			return
		}
		users, reloaded, rerr := s.users.Users(s.now())
		switch {
		case rerr != nil:
			s.log.Error("users file changed but does not load; keeping the users in use", zap.String("listener", s.st.Listener), zap.Error(rerr))
		case reloaded:
			s.log.Info("users file reloaded", zap.String("listener", s.st.Listener), zap.String("file", s.users.Path), zap.Int("users", users.Len()))
		}
		u, ok := users.Authenticate(user, pass)
		if !ok {
			s.fails.log(s.now(), s.st.Listener, user, r, "wrong user name or password")
			w.Header().Set("WWW-Authenticate", challenge)
			writeError(w, o.ContentType, http.StatusUnauthorized, CodeUnauthorized, "Unauthorized")
			return
		}
		roles := u.Roles
		if a.Roles != nil {
			roles = slices.DeleteFunc(slices.Clone(u.Roles), func(r string) bool { return !slices.Contains(a.Roles, r) })
			if len(roles) == 0 {
				s.fails.log(s.now(), s.st.Listener, user, r, "no role of "+AuthenticationRoles)
				writeError(w, o.ContentType, http.StatusForbidden, CodeForbidden,
					fmt.Sprintf("User %s is denied access: none of its roles is in %s", u.Name, AuthenticationRoles))
				return
			}
		}
		readOnly := len(a.Restricted) > 0 && len(roles) > 0 &&
			!slices.ContainsFunc(roles, func(r string) bool { return !slices.Contains(a.Restricted, r) })
		if readOnly && o.IsWrite(r) {
			s.fails.log(s.now(), s.st.Listener, user, r, "read-only user writing")
			writeError(w, o.ContentType, http.StatusForbidden, CodeForbidden,
				fmt.Sprintf("User %s is denied operation Write on %s: its roles are read-only (%s)", u.Name, r.URL.Path, AuthRestrictedRoles))
			return
		}
		h.ServeHTTP(w, r)
	})
}

func skipped(paths []string, p string) bool {
	for _, s := range paths {
		if pre, ok := strings.CutSuffix(s, "/*"); ok {
			if p == pre || strings.HasPrefix(p, pre+"/") {
				return true
			}
		} else if p == s {
			return true
		}
	}
	return false
}

func writeError(w http.ResponseWriter, contentType string, status, code int, msg string) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Code    int    `json:"error_code"`
		Message string `json:"message"`
	}{code, msg})
}

// failLog logs failed authentications at most failRate a second (bursts
// of failBurst), counting the lines it drops into the next one it writes.
type failLog struct {
	lg         *zap.Logger
	mu         sync.Mutex
	tokens     float64
	last       time.Time
	suppressed int
}

const (
	failRate  = 5
	failBurst = 20
)

// log records a failure: the listener, the user as claimed (never the
// password), the client's host and the path.
func (f *failLog) log(now time.Time, listener, user string, r *http.Request, reason string) {
	f.mu.Lock()
	if f.last.IsZero() {
		f.tokens = failBurst
	} else {
		f.tokens = min(failBurst, f.tokens+now.Sub(f.last).Seconds()*failRate)
	}
	f.last = now
	if f.tokens < 1 {
		f.suppressed++
		f.mu.Unlock()
		return
	}
	f.tokens--
	dropped := f.suppressed
	f.suppressed = 0
	f.mu.Unlock()
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	fields := []zap.Field{zap.String("listener", listener), zap.String("user", user), zap.String("host", host),
		zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.String("reason", reason)}
	if dropped > 0 {
		fields = append(fields, zap.Int("not_logged_before", dropped))
	}
	f.lg.Warn("HTTP authentication failed", fields...)
}
