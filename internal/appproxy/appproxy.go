// Package appproxy is the runtime's API for clients, served by `freshet runtime` on its ingress
// or through its tunnel under /app-proxy. The control plane authenticates and authorizes
// every request it forwards through the tunnel and passes the caller's identity in
// X-Freshet-* headers, which the tunnel sets itself (clients cannot).
package appproxy

import (
	"encoding/json"
	"net/http"
)

// Info describes the runtime serving the app-proxy.
type Info struct {
	Runtime string `json:"runtime"`
	Version string `json:"version"`
	Type    string `json:"type,omitempty"`
}

// Handler serves the app-proxy API.
type Handler struct {
	info func() Info
	mux  *http.ServeMux
}

// New returns the app-proxy handler; info describes the runtime when asked.
func New(info func() Info) *Handler {
	h := &Handler{info: info, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /app-proxy/api/version", h.version)
	h.mux.HandleFunc("GET /app-proxy/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return h
}

// Handle adds a route (the GitOps engine adds its API here).
func (h *Handler) Handle(pattern string, handler http.Handler) { h.mux.Handle(pattern, handler) }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) version(w http.ResponseWriter, r *http.Request) {
	out := map[string]any{"runtime": h.info()}
	if u := r.Header.Get("X-Freshet-User"); u != "" {
		out["caller"] = map[string]string{"user": u, "account": r.Header.Get("X-Freshet-Account"), "role": r.Header.Get("X-Freshet-Role")}
	}
	writeJSON(w, http.StatusOK, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
