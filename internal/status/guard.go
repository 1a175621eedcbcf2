package status

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// MinTokenLength is the shortest token Config.Token may be: a token is a
// password that a script on the same machine could otherwise guess.
const MinTokenLength = 16

// NewToken returns a new random token: 32 bytes from crypto/rand, in
// hex.
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand.Read's contract)
	return hex.EncodeToString(b)
}

// guard decides which requests the handlers see: those naming an allowed
// host (against DNS rebinding) from no foreign origin (against web
// pages), and, for mutations, those with the token.
type guard struct {
	anyHost bool
	names   map[string]bool // allowed host names and addresses, normalised
	local   map[string]bool // addresses of the machine, when bound to all of them
	token   [sha256.Size]byte
}

// normalHost returns host (with or without a port, IPv6 in brackets or
// not) in lower case, without port, brackets or a trailing dot.
func normalHost(hostport string) string {
	h := strings.TrimSpace(hostport)
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// allowedHost reports whether a request's Host (or an Origin's host)
// names this server: a loopback name or address, an allowed name, or the
// address it listens on.
func (g *guard) allowedHost(hostport string) bool {
	if g.anyHost {
		return true
	}
	h := normalHost(hostport)
	if h == "" {
		return false
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		// RFC 6761: browsers resolve these to loopback themselves.
		return true
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		return true
	}
	return g.names[h] || g.local[h]
}

// setBound adds the address the server listens on; when it listens on
// every interface, the addresses of the machine's interfaces.
func (g *guard) setBound(addr net.Addr) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return
	}
	if !tcp.IP.IsUnspecified() {
		g.names[tcp.IP.String()] = true
		return
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return
	}
	g.local = map[string]bool{}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			g.local[n.IP.String()] = true
		}
	}
}

// check answers 403 and returns false unless r names an allowed host and
// comes from no foreign origin.
func (s *Server) check(w http.ResponseWriter, r *http.Request) bool {
	g := s.guard
	if !g.allowedHost(r.Host) {
		s.writeError(w, http.StatusForbidden, fmt.Sprintf("Host %q is not allowed: this server answers requests to loopback names and addresses (localhost, 127.0.0.1, [::1]), to the address it listens on and to its allowed hosts (weir: --http-allowed-hosts), so that a web page whose name resolves to this machine (DNS rebinding) cannot read it", r.Host))
		return false
	}
	// Browsers send Origin on every cross-origin request but simple GETs
	// of a page, and on every POST.
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if origin == "null" || err != nil || u.Host == "" || !g.allowedHost(u.Host) {
			s.writeError(w, http.StatusForbidden, fmt.Sprintf("cross-origin request refused: Origin %q is not one of this server's hosts; web pages of other sites may not use it (tools like curl send no Origin)", origin))
			return false
		}
	}
	return true
}

// authorized answers 401 and returns false unless r carries the token as
// Authorization: Bearer.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	scheme, tok, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	// Comparing digests keeps the time independent of the token's length
	// as well as of its bytes.
	if strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare(got[:], s.guard.token[:]) == 1 {
		return true
	}
	what := "no Authorization header"
	if r.Header.Get("Authorization") != "" {
		what = "the Authorization header does not carry the token"
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="weir"`)
	s.writeError(w, http.StatusUnauthorized, fmt.Sprintf("%s %s changes the job and needs the server's token: %s; send Authorization: Bearer <token>, the token being %s", r.Method, r.URL.Path, what, s.tokenWhere()))
	return false
}

// tokenWhere says where a client finds the token.
func (s *Server) tokenWhere() string {
	switch {
	case s.cfg.TokenHelp != "":
		return s.cfg.TokenHelp
	case s.cfg.TokenFile != "":
		return "in the file " + s.cfg.TokenFile
	}
	return "the one the server was configured with"
}

// writeTokenFile writes the token to Config.TokenFile, mode 0600,
// through a temporary file renamed into place (readers never see part of
// it, and a stale file of an earlier run is replaced).
func (s *Server) writeTokenFile() error {
	path := s.cfg.TokenFile
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".http-token-*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename, nothing
	if _, err := f.WriteString(s.cfg.Token + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
