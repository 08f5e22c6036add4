package server

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/ebb-data/ebb/lists"
	"github.com/ebb-data/ebb/multitable"
	"github.com/ebb-data/ebb/shardmgr"
	"github.com/ebb-data/ebb/timeseries"
)

// ErrAuthConfig is wrapped by every error about a malformed auth file.
var ErrAuthConfig = errors.New("server: invalid auth file")

// Auth holds the bearer tokens a Server accepts and the scopes each grants.
//
// A scope is one of:
//
//	admin              every route
//	metrics            GET /metrics only (for a scraper)
//	*:*                every route but the admin ones
//	index:NAME         routes on the time-sharded index NAME
//	list:ENTITY_TYPE   list and list-feature routes of that entity type
//	table:NAME         routes on the shared table NAME (creating it too)
//	read:SCOPE         the GET routes SCOPE reaches, and nothing else:
//	                   read:index:NAME, read:list:ENTITY_TYPE,
//	                   read:table:NAME, read:*:* or read:admin
//
// A scope's name must be one the resource could have (an index name
// matching the index name pattern and not reserved, a table name matching
// the table name pattern, an entity type of 1..256 bytes of UTF-8): a
// scope no resource could match is a mistake, and refused.
//
// A collection route (a Resource with an empty Name, such as listing every
// index) is reached only by admin and *:*: a token scoped to one index may
// not learn the names of the others.
type Auth struct {
	tokens []authToken
}

type authToken struct {
	// hash is the SHA-256 of the token: comparing digests of equal length
	// keeps the comparison's time independent of the secret's length.
	hash   [sha256.Size]byte
	name   string
	scopes scopes
}

type scopes struct {
	admin, all, metrics bool
	named               map[string]map[string]bool // kind -> names
	// read holds the read:SCOPE scopes, which reach GET routes only.
	read *scopes
}

// authFile is the YAML layout of an auth file:
//
//	tokens:
//	  - token: "s3cret"
//	    name: ingest        # optional, shown in logs instead of the token
//	    scopes: ["index:events", "list:user"]
type authFile struct {
	Tokens []struct {
		Token  string   `yaml:"token"`
		Name   string   `yaml:"name"`
		Scopes []string `yaml:"scopes"`
	} `yaml:"tokens"`
}

// LoadAuth reads an auth file (see ParseAuth). It refuses, wrapping
// ErrAuthConfig, a file that users other than its owner may write (group-
// or world-writable): whoever can write it can grant themselves any scope.
func LoadAuth(path string) (*Auth, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("server: read auth file: %w", err)
	}
	defer f.Close()
	// The mode is read from the open file, so it is the file read below
	// even if the path is replaced meanwhile.
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("server: read auth file: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return nil, fmt.Errorf("%s: %w: mode %04o lets users other than its owner write it, and so grant themselves any scope; chmod go-w %s",
			path, ErrAuthConfig, perm, path)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("server: read auth file: %w", err)
	}
	a, err := ParseAuth(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// ParseAuth parses the YAML of an auth file. It refuses, wrapping
// ErrAuthConfig, a file with no tokens, an empty or repeated token, a token
// without scopes, an unknown scope and an unknown field, so that a typo
// never silently grants or withholds access.
func ParseAuth(data []byte) (*Auth, error) {
	var f authFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: the file is empty; want tokens: [{token: ..., scopes: [...]}]", ErrAuthConfig)
		}
		return nil, fmt.Errorf("%w: %v", ErrAuthConfig, err)
	}
	// A second document ("---") would otherwise be ignored, with every
	// token in it.
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: more than one YAML document (a \"---\" line); put every token in one tokens list", ErrAuthConfig)
	}
	if len(f.Tokens) == 0 {
		return nil, fmt.Errorf("%w: no tokens; want tokens: [{token: ..., scopes: [...]}]", ErrAuthConfig)
	}
	a := &Auth{}
	seen := map[[sha256.Size]byte]bool{}
	for i, t := range f.Tokens {
		if t.Token == "" {
			return nil, fmt.Errorf("%w: token %d is empty", ErrAuthConfig, i)
		}
		if strings.TrimSpace(t.Token) != t.Token || strings.ContainsAny(t.Token, " \t\r\n") {
			return nil, fmt.Errorf("%w: token %d contains white space, which an Authorization header cannot carry", ErrAuthConfig, i)
		}
		h := sha256.Sum256([]byte(t.Token))
		if seen[h] {
			return nil, fmt.Errorf("%w: token %d repeats an earlier token", ErrAuthConfig, i)
		}
		seen[h] = true
		sc, err := parseScopes(t.Scopes)
		if err != nil {
			return nil, fmt.Errorf("%w: token %d: %v", ErrAuthConfig, i, err)
		}
		name := t.Name
		if name == "" {
			name = fmt.Sprintf("token %d", i)
		}
		a.tokens = append(a.tokens, authToken{hash: h, name: name, scopes: sc})
	}
	return a, nil
}

func parseScopes(list []string) (scopes, error) {
	if len(list) == 0 {
		return scopes{}, errors.New("no scopes")
	}
	sc := scopes{named: map[string]map[string]bool{}}
	for _, s := range list {
		if rest, ok := strings.CutPrefix(s, "read:"); ok {
			if rest == "metrics" {
				return scopes{}, fmt.Errorf("scope %q: metrics is read-only already; write metrics", s)
			}
			if sc.read == nil {
				sc.read = &scopes{named: map[string]map[string]bool{}}
			}
			if err := sc.read.add(rest); err != nil {
				return scopes{}, fmt.Errorf("scope %q: %v", s, err)
			}
			continue
		}
		if err := sc.add(s); err != nil {
			return scopes{}, err
		}
	}
	return sc, nil
}

// add parses one scope (not a read: one) into sc.
func (sc *scopes) add(s string) error {
	switch s {
	case "admin":
		sc.admin = true
		return nil
	case "metrics":
		sc.metrics = true
		return nil
	case "*:*":
		sc.all = true
		return nil
	}
	// The name is everything after the first colon: list entity types
	// may themselves contain colons.
	kind, name, ok := strings.Cut(s, ":")
	switch {
	case !ok:
		return fmt.Errorf("scope %q: want admin, metrics, *:*, index:NAME, list:ENTITY_TYPE, table:NAME or read: and one of these", s)
	case kind != KindIndex && kind != KindList && kind != KindTable:
		return fmt.Errorf("scope %q: unknown kind %q; want index, list or table", s, kind)
	case name == "":
		return fmt.Errorf("scope %q: empty name", s)
	case name == "*":
		// A per-kind wildcard is not part of the scope language; saying
		// so beats silently matching only a resource named "*".
		return fmt.Errorf("scope %q: wildcards other than *:* are not supported", s)
	}
	if err := possibleName(kind, name); err != nil {
		return fmt.Errorf("scope %q names no possible %s: %v", s, kind, err)
	}
	if sc.named[kind] == nil {
		sc.named[kind] = map[string]bool{}
	}
	sc.named[kind][name] = true
	return nil
}

// possibleName returns why no resource of kind can be called name, or nil.
func possibleName(kind, name string) error {
	switch kind {
	case KindIndex:
		// Only the name is checked; the other fields are valid.
		cfg := timeseries.Config{Name: name, TableBucket: time.Hour, PartitionBucket: time.Hour, Retention: time.Hour}
		if cfg.WithDefaults().Validate() != nil {
			return fmt.Errorf("an index name matches %s and is not ebb, ebb_* or list", shardmgr.IndexNamePattern)
		}
	case KindTable:
		if multitable.CheckName(name) != nil {
			return fmt.Errorf("a table name matches %s", multitable.NamePattern)
		}
	case KindList:
		if len(name) > lists.MaxNameBytes || !utf8.ValidString(name) {
			return fmt.Errorf("an entity type is 1..%d bytes of UTF-8", lists.MaxNameBytes)
		}
	}
	return nil
}

// allowsRequest reports whether the scopes reach res for a request with
// method: the read: scopes reach GET (and HEAD) requests only.
func (sc scopes) allowsRequest(method string, res Resource) bool {
	if sc.allows(res) {
		return true
	}
	return sc.read != nil && (method == http.MethodGet || method == http.MethodHead) && sc.read.allows(res)
}

// allows reports whether the scopes reach res.
func (sc scopes) allows(res Resource) bool {
	switch {
	case sc.admin:
		return true
	case res.Kind == KindMetrics:
		return sc.metrics
	case res.Kind == KindAdmin:
		return false
	case sc.all:
		return true
	case res.Name == "":
		return false
	}
	return sc.named[res.Kind][res.Name]
}

// authenticate returns the token the request carries, or a 401 error. Every
// configured token is compared, in constant time and without stopping at a
// match, so that the time taken reveals neither whether nor which token
// matched.
func (a *Auth) authenticate(r *http.Request) (*authToken, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, Errorf(http.StatusUnauthorized, CodeUnauthenticated, "missing Authorization: Bearer <token> header")
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return nil, Errorf(http.StatusUnauthorized, CodeUnauthenticated, "malformed Authorization header; want Bearer <token>")
	}
	digest := sha256.Sum256([]byte(strings.TrimSpace(token)))
	match, found := 0, 0
	for i := range a.tokens {
		eq := subtle.ConstantTimeCompare(digest[:], a.tokens[i].hash[:])
		match = subtle.ConstantTimeSelect(eq, i, match)
		found |= eq
	}
	if found == 0 {
		return nil, Errorf(http.StatusUnauthorized, CodeUnauthenticated, "unknown token")
	}
	return &a.tokens[match], nil
}

// authorize checks that the request carries a token whose scopes reach
// res, and returns the token's name for logs. It runs before the handler,
// and its answer depends only on the token and the request, so that a 403
// is the same whether or not the resource exists.
func (a *Auth) authorize(r *http.Request, res Resource) (string, error) {
	t, err := a.authenticate(r)
	if err != nil {
		return "", err
	}
	if !t.scopes.allowsRequest(r.Method, res) {
		if t.scopes.read != nil && t.scopes.read.allows(res) {
			// The token reaches the resource, for reading only: say so,
			// rather than that it has no scope for it at all.
			return t.name, Errorf(http.StatusForbidden, CodePermissionDenied, "the token is read-only for %s (a read: scope); a %s request needs a scope without read:", describe(res), r.Method)
		}
		return t.name, Errorf(http.StatusForbidden, CodePermissionDenied, "the token has no scope for %s", describe(res))
	}
	return t.name, nil
}

// Permits reports whether the request's token reaches res, for a handler
// that learns from the request's body that it needs more than its
// route's resource (a migration from a legacy source other than the
// index's own needs the admin scope). Without Auth every request is
// permitted. The route's own check has run already, so a token that does
// not authenticate is not permitted.
func (s *Server) Permits(r *http.Request, res Resource) bool {
	if s.auth == nil {
		return true
	}
	t, err := s.auth.authenticate(r)
	return err == nil && t.scopes.allowsRequest(r.Method, res)
}

func describe(res Resource) string {
	switch {
	case res.Kind == KindAdmin:
		return "admin routes"
	case res.Name == "":
		return "every " + res.Kind + " (needs admin or *:*)"
	}
	return fmt.Sprintf("%s %q", res.Kind, res.Name)
}
