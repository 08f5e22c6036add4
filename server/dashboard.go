package server

import (
	"net/http"

	"github.com/ebb-data/ebb/server/ui"
)

// DashboardPath is where the dashboard page is served; GET / redirects
// there.
const DashboardPath = "/ui/"

// routeDashboard serves the dashboard (package ui) at DashboardPath and
// redirects GET / to it. Neither route needs a token, even with Auth: the
// files hold no data, and the page reads the API with the token the
// operator gives it, through the same checks as any other client.
func (s *Server) routeDashboard() {
	toDashboard := func(w http.ResponseWriter, r *http.Request) {
		// Without a body: http.Redirect would add a line of HTML.
		w.Header().Set("Location", DashboardPath)
		w.WriteHeader(http.StatusFound)
	}
	s.mux.HandleFunc("GET /{$}", s.observe("GET /", toDashboard))
	// "/ui" too, which http.ServeMux would otherwise answer with its own
	// 307 to "/ui/".
	s.mux.HandleFunc("GET /ui", s.observe("GET /ui", toDashboard))
	notFound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, "GET "+DashboardPath, Errorf(http.StatusNotFound, CodeNotFound, "no such file of the dashboard"))
	})
	s.mux.Handle("GET "+DashboardPath, s.observe("GET "+DashboardPath, ui.Handler(DashboardPath, notFound).ServeHTTP))
}
