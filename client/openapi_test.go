package client_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ebb-data/ebb/server"
)

// The tests below hold docs/openapi.yaml to the server: every route the
// server registers is described and nothing else is; every status and code
// it maps errors onto is documented; and every answer it gives while this
// package's tests run (through env.client) has a status the operation
// declares and a body its schema accepts, as has every request body and
// query parameter the client sends.

const specPath = "../docs/openapi.yaml"

// spec is docs/openapi.yaml, decoded.
type spec struct{ doc map[string]any }

var (
	specOnce   sync.Once
	loadedSpec *spec
	specErr    error
)

func loadSpec(t testing.TB) *spec {
	t.Helper()
	s, err := readSpec()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readSpec() (*spec, error) {
	specOnce.Do(func() {
		data, err := os.ReadFile(specPath)
		if err != nil {
			specErr = err
			return
		}
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			specErr = fmt.Errorf("%s: %w", specPath, err)
			return
		}
		loadedSpec = &spec{doc: doc}
	})
	return loadedSpec, specErr
}

// httpMethods are the operation keys of a path item.
var httpMethods = []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}

// operations returns every "METHOD /path" the spec describes.
func (s *spec) operations() []string {
	var out []string
	for path, item := range obj(s.doc["paths"]) {
		for _, m := range httpMethods {
			if _, ok := obj(item)[m]; ok {
				out = append(out, strings.ToUpper(m)+" "+path)
			}
		}
	}
	slices.Sort(out)
	return out
}

// operation returns the operation for method and path, and its parameters
// (the path item's and its own).
func (s *spec) operation(method, path string) (op map[string]any, params []map[string]any) {
	item := obj(obj(s.doc["paths"])[path])
	op = obj(item[strings.ToLower(method)])
	if op == nil {
		return nil, nil
	}
	for _, list := range []any{item["parameters"], op["parameters"]} {
		for _, p := range arr(list) {
			params = append(params, s.resolve(obj(p)))
		}
	}
	return op, params
}

// resolve follows $ref until it reaches a node without one.
func (s *spec) resolve(node map[string]any) map[string]any {
	for i := 0; node != nil && i < 10; i++ {
		ref, ok := node["$ref"].(string)
		if !ok {
			return node
		}
		node = s.ref(ref)
	}
	return node
}

// ref returns the node at a local reference ("#/components/schemas/X"), or
// nil.
func (s *spec) ref(ref string) map[string]any {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var node any = s.doc
	for _, part := range strings.Split(rest, "/") {
		node = obj(node)[part]
	}
	return obj(node)
}

// responses returns an operation's declared statuses.
func responses(op map[string]any) []string {
	return slices.Sorted(maps.Keys(obj(op["responses"])))
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }
func arr(v any) []any          { a, _ := v.([]any); return a }

// validate checks a decoded JSON value (numbers as json.Number) against a
// schema and returns what is wrong, each problem prefixed with where.
// It knows the keywords docs/openapi.yaml uses.
func (s *spec) validate(schema map[string]any, v any, at string) []string {
	schema = s.resolve(schema)
	if schema == nil {
		return []string{at + ": no schema (a dangling $ref?)"}
	}
	if types := schemaTypes(schema); len(types) > 0 && !slices.Contains(types, jsonType(v)) &&
		!(jsonType(v) == "integer" && slices.Contains(types, "number")) {
		return []string{fmt.Sprintf("%s: %s, want %s", at, jsonType(v), strings.Join(types, " or "))}
	}
	var bad []string
	if enum := arr(schema["enum"]); enum != nil && !slices.ContainsFunc(enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		bad = append(bad, fmt.Sprintf("%s: %v is not one of %v", at, v, enum))
	}
	switch v := v.(type) {
	case string:
		switch schema["format"] {
		case "date-time":
			if _, err := time.Parse(time.RFC3339, v); err != nil {
				bad = append(bad, fmt.Sprintf("%s: %q is not an RFC 3339 time", at, v))
			}
		case "byte":
			if _, err := base64.StdEncoding.DecodeString(v); err != nil {
				bad = append(bad, fmt.Sprintf("%s: %q is not standard base64", at, v))
			}
		}
		if p, ok := schema["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(v) {
			bad = append(bad, fmt.Sprintf("%s: %q does not match %s", at, v, p))
		}
		if n, ok := schema["minLength"].(int); ok && len(v) < n {
			bad = append(bad, fmt.Sprintf("%s: %q is shorter than %d", at, v, n))
		}
	case json.Number:
		f, _ := v.Float64()
		if n, ok := schema["minimum"].(int); ok && f < float64(n) {
			bad = append(bad, fmt.Sprintf("%s: %v below the minimum %d", at, v, n))
		}
		if n, ok := schema["maximum"].(int); ok && f > float64(n) {
			bad = append(bad, fmt.Sprintf("%s: %v above the maximum %d", at, v, n))
		}
	case []any:
		if n, ok := schema["maxItems"].(int); ok && len(v) > n {
			bad = append(bad, fmt.Sprintf("%s: %d items, at most %d", at, len(v), n))
		}
		if items := obj(schema["items"]); items != nil {
			for i, e := range v {
				bad = append(bad, s.validate(items, e, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	case map[string]any:
		for _, r := range arr(schema["required"]) {
			if _, ok := v[r.(string)]; !ok {
				bad = append(bad, fmt.Sprintf("%s: %q is required", at, r))
			}
		}
		props := obj(schema["properties"])
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if p := obj(props[k]); p != nil {
				bad = append(bad, s.validate(p, v[k], at+"."+k)...)
			} else if schema["additionalProperties"] == false {
				bad = append(bad, fmt.Sprintf("%s: %q is not in the schema", at, k))
			}
		}
	}
	return bad
}

func schemaTypes(schema map[string]any) []string {
	switch t := schema["type"].(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, len(t))
		for i, e := range t {
			out[i] = fmt.Sprint(e)
		}
		return out
	}
	return nil
}

func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return "number"
		}
		return "integer"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// recorder is an http.RoundTripper that checks every exchange against the
// spec, and counts the operations called for TestMain's coverage check.
type recorder struct {
	spec *spec
	// mux matches a request to the server's route pattern.
	mux       *http.ServeMux
	transport *http.Transport

	mu       sync.Mutex
	problems []string
	// bodies holds the last 2xx answer of each operation, for the
	// round-trip test of the client's types.
	bodies map[string][]byte
}

var (
	coveredMu sync.Mutex
	covered   = map[string]bool{}
)

// uncovered returns the spec's operations no test called.
func uncovered() []string {
	s, err := readSpec()
	if err != nil {
		return []string{err.Error()}
	}
	coveredMu.Lock()
	defer coveredMu.Unlock()
	var out []string
	for _, op := range s.operations() {
		if !covered[op] {
			out = append(out, op)
		}
	}
	return out
}

func newRecorder(t *testing.T, routes []server.Route) *recorder {
	r := &recorder{spec: loadSpec(t), mux: http.NewServeMux(), bodies: map[string][]byte{},
		transport: http.DefaultTransport.(*http.Transport).Clone()}
	for _, rt := range routes {
		pattern := rt.String()
		if rt.Path == "/" {
			pattern = rt.Method + " /{$}" // the root alone, as the server registers it
		}
		r.mux.HandleFunc(pattern, func(http.ResponseWriter, *http.Request) {})
	}
	t.Cleanup(func() {
		r.transport.CloseIdleConnections()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, p := range r.problems {
			t.Errorf("docs/openapi.yaml: %s", p)
		}
	})
	return r
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		var err error
		if reqBody, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	resp, err := r.transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	problems := r.check(req, reqBody, resp, respBody)
	r.mu.Lock()
	r.problems = append(r.problems, problems...)
	r.mu.Unlock()
	return resp, nil
}

// check returns what is wrong with one exchange, by the spec.
func (r *recorder) check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) []string {
	_, pattern := r.mux.Handler(req)
	pattern = strings.TrimSuffix(pattern, "{$}") // "GET /{$}" is the spec's "GET /"
	where := fmt.Sprintf("%s %s -> %d", req.Method, req.URL.Path, resp.StatusCode)
	var bad []string
	if pattern == "" {
		// No route: the server's own answers, x-unmatched-responses.
		declared := r.spec.resolve(obj(obj(r.spec.doc["x-unmatched-responses"])[strconv.Itoa(resp.StatusCode)]))
		if declared == nil {
			return []string{fmt.Sprintf("%s: matches no route, and x-unmatched-responses does not declare the status", where)}
		}
		return r.checkBody(declared, resp, respBody, where)
	}
	method, path, _ := strings.Cut(pattern, " ")
	op, params := r.spec.operation(method, path)
	if op == nil {
		return []string{fmt.Sprintf("%s: no operation for the route %s", where, pattern)}
	}
	coveredMu.Lock()
	covered[pattern] = true
	coveredMu.Unlock()
	where = fmt.Sprintf("%s (%s) -> %d", req.Method, path, resp.StatusCode)

	// The request, when the server accepted it (tests send bad ones on
	// purpose): declared query parameters of the right type, and a body
	// the requestBody schema accepts.
	for name, values := range req.URL.Query() {
		if resp.StatusCode/100 != 2 {
			break
		}
		i := slices.IndexFunc(params, func(p map[string]any) bool { return p["name"] == name && p["in"] == "query" })
		if i < 0 {
			bad = append(bad, fmt.Sprintf("%s: query parameter %q is not declared", where, name))
			continue
		}
		bad = append(bad, r.spec.validate(obj(params[i]["schema"]), queryValue(obj(params[i]["schema"]), r.spec, values[0]), where+" query "+name)...)
	}
	if len(reqBody) > 0 && resp.StatusCode/100 == 2 {
		schema := obj(obj(obj(obj(op["requestBody"])["content"])["application/json"])["schema"])
		if schema == nil {
			bad = append(bad, fmt.Sprintf("%s: a body was sent, but the operation declares none", where))
		} else if v, err := decodeJSON(reqBody); err == nil {
			bad = append(bad, r.spec.validate(schema, v, where+" request")...)
		}
	}

	// The answer: a declared status, and a body its schema accepts.
	status := strconv.Itoa(resp.StatusCode)
	declared := r.spec.resolve(obj(obj(op["responses"])[status]))
	if declared == nil {
		return append(bad, fmt.Sprintf("%s: status %s is not declared (declared: %v)", where, status, responses(op)))
	}
	bad = append(bad, r.checkBody(declared, resp, respBody, where)...)
	if resp.StatusCode/100 == 2 {
		r.mu.Lock()
		r.bodies[pattern] = respBody
		r.mu.Unlock()
	}
	return bad
}

// checkBody checks an answer against a response object: no body when it
// declares no content, otherwise a body of a declared type that the
// schema accepts.
func (r *recorder) checkBody(declared map[string]any, resp *http.Response, body []byte, where string) []string {
	content := obj(declared["content"])
	if content == nil {
		if len(bytes.TrimSpace(body)) > 0 {
			return []string{fmt.Sprintf("%s: a body was answered, but the spec declares none", where)}
		}
		return nil
	}
	ctype, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	media := obj(content[ctype])
	if media == nil {
		return []string{fmt.Sprintf("%s: Content-Type %q, declared %v", where, ctype, slices.Sorted(maps.Keys(content)))}
	}
	if ctype != "application/json" {
		return nil
	}
	v, err := decodeJSON(body)
	if err != nil {
		return []string{fmt.Sprintf("%s: the answer is not JSON: %v", where, err)}
	}
	return r.spec.validate(obj(media["schema"]), v, where)
}

// queryValue converts a query string value to what its schema describes.
func queryValue(schema map[string]any, s *spec, v string) any {
	switch t := schemaTypes(s.resolve(schema)); {
	case slices.Contains(t, "integer"):
		if _, err := strconv.ParseInt(v, 10, 64); err == nil {
			return json.Number(v)
		}
	case slices.Contains(t, "boolean"):
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
	}
	return v
}

// lastBody returns the last 2xx answer of an operation ("GET /v1/indexes").
func (r *recorder) lastBody(t *testing.T, pattern string) []byte {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.bodies[pattern]
	if !ok {
		t.Fatalf("no answer to %s recorded", pattern)
	}
	return b
}

// TestOpenAPIRoutes checks that the spec describes exactly the routes the
// server registers, with their path parameters, and every status and code
// the server maps errors onto.
func TestOpenAPIRoutes(t *testing.T) {
	e := newEnv(t)
	s := loadSpec(t)

	var registered []string
	for _, r := range e.srv.Routes() {
		if r.Method == "" {
			t.Errorf("route %s has no method; give every route one", r.Path)
		}
		registered = append(registered, r.String())
	}
	described := s.operations()
	for _, r := range registered {
		if !slices.Contains(described, r) {
			t.Errorf("the server registers %s; describe it in docs/openapi.yaml", r)
		}
	}
	for _, op := range described {
		if !slices.Contains(registered, op) {
			t.Errorf("docs/openapi.yaml describes %s, which the server does not register", op)
		}
	}

	// Every code the server answers is in the ErrorCode enum, and every
	// status is declared by some operation.
	codes := arr(s.ref("#/components/schemas/ErrorCode")["enum"])
	statuses := map[string]bool{}
	for st := range obj(s.doc["x-unmatched-responses"]) {
		statuses[st] = true
	}
	ids := map[string]string{}
	for _, name := range described {
		method, path, _ := strings.Cut(name, " ")
		op, params := s.operation(method, path)
		for _, st := range responses(op) {
			statuses[st] = true
		}
		if id, _ := op["operationId"].(string); id == "" {
			t.Errorf("%s has no operationId", name)
		} else if other, dup := ids[id]; dup {
			t.Errorf("%s and %s share the operationId %s", name, other, id)
		} else {
			ids[id] = name
		}
		// A redirect (GET / to the dashboard) is its route's success.
		if !slices.ContainsFunc(responses(op), func(st string) bool { return st[0] == '2' || st[0] == '3' }) {
			t.Errorf("%s declares no success status", name)
		}
		// Every /v1 route can answer a bad path (400), a missing or
		// unknown token (401), a token without the scope (403), a
		// failure (500) and load shedding (503).
		if strings.HasPrefix(path, "/v1/") {
			for _, st := range []string{"400", "401", "403", "500", "503"} {
				if !slices.Contains(responses(op), st) {
					t.Errorf("%s does not declare %s, which every /v1 route can answer", name, st)
				}
			}
		}
		// Path parameters and {wildcards} match one to one.
		wild := regexp.MustCompile(`\{([^}]+)\}`).FindAllStringSubmatch(path, -1)
		var inPath []string
		for _, w := range wild {
			inPath = append(inPath, w[1])
		}
		var declared []string
		for _, p := range params {
			if p["in"] == "path" {
				declared = append(declared, p["name"].(string))
				if p["required"] != true {
					t.Errorf("%s: path parameter %v must be required", name, p["name"])
				}
			}
		}
		slices.Sort(inPath)
		slices.Sort(declared)
		if !slices.Equal(inPath, declared) {
			t.Errorf("%s: path parameters %v, wildcards %v", name, declared, inPath)
		}
	}
	for _, ec := range e.srv.ErrorCodes() {
		if !slices.ContainsFunc(codes, func(c any) bool { return c == ec.Code }) {
			t.Errorf("the server answers code %q (HTTP %d); add it to ErrorCode", ec.Code, ec.Status)
		}
		if !statuses[strconv.Itoa(ec.Status)] {
			t.Errorf("the server answers HTTP %d (%s), which no operation declares", ec.Status, ec.Code)
		}
	}

	// Every $ref resolves.
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok && s.ref(ref) == nil {
				t.Errorf("%s: $ref %s resolves to nothing", at, ref)
			}
			for k, c := range v {
				walk(c, at+"/"+k)
			}
		case []any:
			for i, c := range v {
				walk(c, fmt.Sprintf("%s/%d", at, i))
			}
		}
	}
	walk(s.doc, "#")
	if s.doc["openapi"] != "3.1.0" {
		t.Errorf("openapi: %v, want 3.1.0", s.doc["openapi"])
	}
}

// TestOpenAPIValidator checks the schema checker the other tests rely on,
// so that a spec accepting anything cannot pass for one that was checked.
func TestOpenAPIValidator(t *testing.T) {
	s := loadSpec(t)
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	for _, c := range []struct {
		schema string
		json   string
		ok     bool
	}{
		{"Error", `{"error":{"code":"not_found","message":"x"}}`, true},
		{"Error", `{"error":{"code":"nope","message":"x"}}`, false},
		{"Error", `{"error":{"code":"not_found"}}`, false},
		{"Error", `{"error":{"code":"not_found","message":"x"},"extra":1}`, false},
		{"Table", `{"name":"t","default_ttl":"1m30s","created_at":"2026-11-22T10:00:00.123Z","expiry":"sweep"}`, true},
		{"Table", `{"name":"t","default_ttl":"1m30s","created_at":"2026-11-22T10:00:00.123Z"}`, false},
		{"Table", `{"name":"t","default_ttl":"1m30s","created_at":"2026-11-22T10:00:00.123Z","expiry":"later"}`, false},
		{"Table", `{"name":"t","default_ttl":"7d","created_at":"2026-11-22T10:00:00Z"}`, false},
		{"Table", `{"name":"t","default_ttl":"0s","created_at":"yesterday"}`, false},
		{"Event", `{"index_id":"a","event_id":"e","timestamp":"2026-11-22T10:00:00Z","payload":null}`, true},
		{"Event", `{"index_id":"a","event_id":"e","timestamp":"2026-11-22T10:00:00Z","payload":"not base64!"}`, false},
		{"WriteEventsResponse", `{"written":1.5}`, false},
		{"IndexConfig", `{"table_bucket":"1h","partition_bucket":"10m","retention":"3h","runway":0}`, false},
		{"TableItem", `{"key":"k","timestamp":"2026-11-22T10:00:00Z","attributes":{"a":[1]},"expires_at":null}`, true},
		{"TableItem", `{"key":"k","timestamp":"2026-11-22T10:00:00Z","attributes":[],"expires_at":null}`, false},
	} {
		v, err := decodeJSON([]byte(c.json))
		if err != nil {
			t.Fatal(err)
		}
		if bad := s.validate(ref(c.schema), v, c.schema); (len(bad) == 0) != c.ok {
			t.Errorf("%s %s: problems %v, want ok=%v", c.schema, c.json, bad, c.ok)
		}
	}
}
