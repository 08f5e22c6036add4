package client_test

import (
	"slices"
	"testing"
)

// TestOpenAPIQueryParameters checks that every route takes exactly the
// query parameters docs/openapi.yaml declares for it: the server refuses
// any other, so an undeclared one would be refused and a declared one it
// does not take would be refused too.
func TestOpenAPIQueryParameters(t *testing.T) {
	e := newEnv(t)
	s := loadSpec(t)
	for _, r := range e.srv.Routes() {
		op, params := s.operation(r.Method, r.Path)
		if op == nil {
			continue // TestOpenAPIRoutes reports it
		}
		var declared []string
		for _, p := range params {
			if p["in"] == "query" {
				declared = append(declared, p["name"].(string))
			}
		}
		slices.Sort(declared)
		if r.Path == "/ui/" {
			continue // static files, served as a browser asks for them
		}
		if !slices.Equal(declared, r.Query) {
			t.Errorf("%s takes query parameters %v; docs/openapi.yaml declares %v", r, r.Query, declared)
		}
	}
}
