package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/repourl"
	"github.com/freshet-dev/freshet/internal/tunnel/wire"
)

// APIPrefix is where the applications API is mounted on the app-proxy.
const APIPrefix = "/app-proxy/api/v1/"

// maxBody bounds request bodies (an Application is at most 1 MiB, as the decoder's limit).
const maxBody = 1 << 20

// Application is the API's view of an application.
type Application struct {
	Name   string           `json:"name"`
	File   string           `json:"file,omitempty"`      // where it is defined (apps/<name>.yaml, or its Git Source's file)
	Source string           `json:"gitSource,omitempty"` // the Git Source it comes from
	Spec   *app.Application `json:"spec,omitempty"`
	Status engine.AppStatus `json:"status"`
}

// SyncRequest is the body of a sync.
type SyncRequest struct {
	Revision  string   `json:"revision,omitempty"`
	Prune     bool     `json:"prune,omitempty"`
	DryRun    bool     `json:"dryRun,omitempty"`
	Resources []string `json:"resources,omitempty"` // KIND/NAME or GROUP/KIND/NAMESPACE/NAME
	Options   []string `json:"options,omitempty"`
}

// Handler serves the applications API (see docs/appproxy.md). Requests must carry the
// caller's identity as the control plane's tunnel sets it; writes need member or admin.
func (h *Host) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+APIPrefix+"applications", h.list)
	mux.HandleFunc("POST "+APIPrefix+"applications", h.write(h.create))
	mux.HandleFunc("GET "+APIPrefix+"applications/{name}", h.get)
	mux.HandleFunc("DELETE "+APIPrefix+"applications/{name}", h.write(h.delete))
	mux.HandleFunc("POST "+APIPrefix+"applications/{name}/refresh", h.write(h.refresh))
	mux.HandleFunc("GET "+APIPrefix+"applications/{name}/diff", h.diff)
	mux.HandleFunc("POST "+APIPrefix+"applications/{name}/sync", h.write(h.sync))
	mux.HandleFunc("POST "+APIPrefix+"applications/{name}/terminate", h.write(h.terminate))
	mux.HandleFunc("GET "+APIPrefix+"applications/{name}/history", h.history)
	mux.HandleFunc("POST "+APIPrefix+"applications/{name}/rollback", h.write(h.rollback))
	mux.HandleFunc("GET "+APIPrefix+"applications/{name}/tree", h.tree)
	mux.HandleFunc("POST "+APIPrefix+"notify", h.write(h.notify))
	mux.HandleFunc("GET "+APIPrefix+"git-sources", h.listGitSources)
	mux.HandleFunc("POST "+APIPrefix+"git-sources", h.write(h.putGitSource))
	mux.HandleFunc("GET "+APIPrefix+"git-sources/{name}", h.getGitSource)
	mux.HandleFunc("DELETE "+APIPrefix+"git-sources/{name}", h.write(h.deleteGitSource))
	mux.HandleFunc("GET "+APIPrefix+"clusters", h.listClusters)
	mux.HandleFunc("POST "+APIPrefix+"clusters", h.admin(h.addCluster))
	mux.HandleFunc("DELETE "+APIPrefix+"clusters/{name}", h.admin(h.removeCluster))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(wire.HeaderAccount) == "" || r.Header.Get(wire.HeaderRole) == "" {
			writeError(w, fmt.Errorf("no caller identity: the applications API is reached through the control plane (/runtimes/{runtime}/app-proxy/…): %w", errdefs.ErrUnauthenticated))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// write wraps a handler that changes something: it needs the member or admin role.
func (h *Host) write(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch role := r.Header.Get(wire.HeaderRole); role {
		case "admin", "member":
			next(w, r)
		default:
			writeError(w, fmt.Errorf("role %q may only read applications; changing them needs member or admin: %w", role, errdefs.ErrForbidden))
		}
	}
}

// admin wraps a handler that needs the admin role (cluster credentials).
func (h *Host) admin(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if role := r.Header.Get(wire.HeaderRole); role != "admin" {
			writeError(w, fmt.Errorf("role %q: managing clusters needs admin: %w", role, errdefs.ErrForbidden))
			return
		}
		next(w, r)
	}
}

func (h *Host) view(name string) (Application, error) {
	st, err := h.eng.Status(name)
	if err != nil {
		return Application{}, err
	}
	la, _ := h.loaded(name)
	return Application{Name: name, File: la.file, Source: la.source, Spec: la.app, Status: st}, nil
}

func (h *Host) list(w http.ResponseWriter, _ *http.Request) {
	sts := h.eng.List()
	sort.Slice(sts, func(i, j int) bool { return sts[i].Name < sts[j].Name })
	items := make([]Application, 0, len(sts))
	for _, st := range sts {
		la, _ := h.loaded(st.Name)
		items = append(items, Application{Name: st.Name, File: la.file, Source: la.source, Spec: la.app, Status: st})
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

func (h *Host) get(w http.ResponseWriter, r *http.Request) {
	v, err := h.view(r.PathValue("name"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// create commits apps/<name>.yaml to the installation repository and loads it at once.
func (h *Host) create(w http.ResponseWriter, r *http.Request) {
	if h.opts.InstallRepo.URL == "" {
		writeError(w, fmt.Errorf("this runtime has no installation repository to commit the application to: %w", errdefs.ErrUnavailable))
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		writeError(w, errdefs.Invalid("body", "", err.Error()))
		return
	}
	if len(data) > maxBody {
		writeError(w, errdefs.Invalid("body", fmt.Sprintf("%d bytes", len(data)), fmt.Sprintf("is larger than %d bytes", maxBody)))
		return
	}
	a, err := app.DecodeApplication(data)
	if err != nil {
		writeError(w, err)
		return
	}
	upsert, _ := strconv.ParseBool(r.URL.Query().Get("upsert"))
	source := r.URL.Query().Get("gitSource")
	name := a.Metadata.Name
	file := AppsDir + "/" + name + ".yaml"
	h.mu.Lock()
	existing, exists := h.apps[name]
	g := h.sources[source]
	h.mu.Unlock()
	if exists {
		if !upsert {
			writeError(w, fmt.Errorf("application %q exists (%s); use upsert to replace it: %w", name, existing.file, errdefs.ErrConflict))
			return
		}
		file, source = existing.file, existing.source
		if source != "" {
			file = existing.path
		}
	} else if source != "" {
		if g == nil {
			writeError(w, errdefs.Invalid("gitSource", source, "is not a Git Source of this runtime"))
			return
		}
		file = g.sourcePath(name)
	}
	content, err := app.EncodeApplication(a)
	if err != nil {
		writeError(w, err)
		return
	}
	verb := "create"
	if upsert {
		verb = "update"
	}
	change := git.FileChange{Path: file, Content: content, Create: !upsert}
	msg := fmt.Sprintf("%s application %s", verb, name)
	if source != "" {
		err = h.commitToSource(r, source, msg, change)
	} else {
		err = h.commit(r, msg, change)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if err := h.Load(r.Context()); err != nil {
		writeError(w, err)
		return
	}
	v, err := h.view(name)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, v)
}

func (h *Host) commit(r *http.Request, msg string, change git.FileChange) error {
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	author := git.Signature{Name: "Freshet", Email: "freshet@localhost"}
	if email := r.Header.Get(wire.HeaderEmail); email != "" {
		author = git.Signature{Name: email, Email: email}
	}
	_, err := h.cache.Commit(r.Context(), h.opts.InstallRepo, git.CommitRequest{Branch: h.opts.Branch, Message: msg, Author: author, Changes: []git.FileChange{change}})
	if errors.Is(err, git.ErrConflict) {
		return fmt.Errorf("%s exists in the installation repository: %w", change.Path, errdefs.ErrConflict)
	}
	return err
}

func (h *Host) delete(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	cascade := true
	if v := r.URL.Query().Get("cascade"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, errdefs.Invalid("cascade", v, "must be true or false"))
			return
		}
		cascade = b
	}
	h.mu.Lock()
	la, ok := h.apps[name]
	h.mu.Unlock()
	if !ok {
		writeError(w, fmt.Errorf("application %q: %w", name, errdefs.ErrNotFound))
		return
	}
	var err error
	if la.source != "" {
		err = h.commitToSource(r, la.source, "delete application "+name, git.FileChange{Path: la.path, Delete: true})
	} else {
		err = h.commit(r, "delete application "+name, git.FileChange{Path: la.file, Delete: true})
	}
	if err != nil {
		writeError(w, err)
		return
	}
	// Remove it first with the caller's cascade choice; the reload then finds it gone.
	if err := h.eng.Remove(r.Context(), name, cascade); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		writeError(w, err)
		return
	}
	h.mu.Lock()
	delete(h.apps, name)
	h.mu.Unlock()
	h.Reload()
	w.WriteHeader(http.StatusNoContent)
}

func (h *Host) refresh(w http.ResponseWriter, r *http.Request) {
	hard, _ := strconv.ParseBool(r.URL.Query().Get("hard"))
	name := r.PathValue("name")
	if _, err := h.eng.Refresh(r.Context(), name, hard); err != nil {
		writeError(w, err)
		return
	}
	v, err := h.view(name)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (h *Host) diff(w http.ResponseWriter, r *http.Request) {
	d, err := h.eng.Diff(r.Context(), r.PathValue("name"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": nonNil(d)})
}

func (h *Host) sync(w http.ResponseWriter, r *http.Request) {
	var req SyncRequest
	if err := decodeBody(r, &req); err != nil {
		writeError(w, err)
		return
	}
	opts := engine.SyncOptions{Revision: req.Revision, Prune: req.Prune, DryRun: req.DryRun, Options: app.SyncOptions(req.Options)}
	for i, s := range req.Resources {
		k, err := parseResource(s)
		if err != nil {
			writeError(w, errdefs.Invalid(fmt.Sprintf("resources[%d]", i), s, err.Error()))
			return
		}
		opts.Resources = append(opts.Resources, k)
	}
	name := r.PathValue("name")
	if la, ok := h.loaded(name); ok && req.Revision == "" {
		// A manual sync goes to what the target revision names now, not to what the shared
		// ref advertisement said up to RefsTTL ago.
		if src := la.app.EffectiveSource(); src != nil {
			h.cache.Invalidate(src.RepoURL)
		}
	}
	res, err := h.eng.Sync(r.Context(), name, opts)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// parseResource reads KIND/NAME, KIND/NAMESPACE/NAME or GROUP/KIND/NAMESPACE/NAME.
func parseResource(s string) (engine.ResourceKey, error) {
	p := strings.Split(s, "/")
	for _, x := range p {
		if x == "" && len(p) != 4 {
			return engine.ResourceKey{}, errors.New("give KIND/NAME, KIND/NAMESPACE/NAME or GROUP/KIND/NAMESPACE/NAME")
		}
	}
	switch len(p) {
	case 2:
		return engine.ResourceKey{Kind: p[0], Name: p[1]}, nil
	case 3:
		return engine.ResourceKey{Kind: p[0], Namespace: p[1], Name: p[2]}, nil
	case 4:
		if p[1] == "" || p[3] == "" {
			return engine.ResourceKey{}, errors.New("kind and name are required in GROUP/KIND/NAMESPACE/NAME")
		}
		return engine.ResourceKey{Group: p[0], Kind: p[1], Namespace: p[2], Name: p[3]}, nil
	}
	return engine.ResourceKey{}, errors.New("give KIND/NAME, KIND/NAMESPACE/NAME or GROUP/KIND/NAMESPACE/NAME")
}

func (h *Host) terminate(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, err := h.eng.Status(name); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"terminated": h.eng.Terminate(name)})
}

func (h *Host) history(w http.ResponseWriter, r *http.Request) {
	hist, err := h.eng.History(r.PathValue("name"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": nonNil(hist)})
}

func (h *Host) rollback(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID    int64 `json:"id"`
		Prune bool  `json:"prune"`
	}
	if err := decodeBody(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.ID <= 0 {
		writeError(w, errdefs.Invalid("id", strconv.FormatInt(req.ID, 10), "must be the id of a history entry (see history)"))
		return
	}
	res, err := h.eng.Rollback(r.Context(), r.PathValue("name"), req.ID, req.Prune)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (h *Host) tree(w http.ResponseWriter, r *http.Request) {
	t, err := h.eng.Tree(r.Context(), r.PathValue("name"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": nonNil(t)})
}

// notify is a push to a repository (the control plane forwards verified push webhooks).
func (h *Host) notify(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RepoURL  string `json:"repoURL"`
		Revision string `json:"revision"`
	}
	if err := decodeBody(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.RepoURL == "" {
		writeError(w, errdefs.Invalid("repoURL", "", "is required"))
		return
	}
	n := h.eng.Notify(req.RepoURL, req.Revision)
	reload := h.opts.InstallRepo.URL != "" && sameRepo(req.RepoURL, h.opts.InstallRepo.URL)
	for _, g := range h.GitSources() {
		reload = reload || sameRepo(req.RepoURL, g.Spec.RepoURL)
	}
	if reload {
		h.Reload()
	}
	writeJSON(w, http.StatusOK, map[string]int{"refreshed": n})
}

func sameRepo(a, b string) bool {
	na, err1 := repourl.Normalize(a)
	nb, err2 := repourl.Normalize(b)
	return err1 == nil && err2 == nil && na == nb
}

func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return errdefs.Invalid("body", "", "is not valid JSON for this call: "+err.Error())
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers with the control plane's error body.
func writeError(w http.ResponseWriter, err error) {
	status, code := http.StatusInternalServerError, "internal"
	for _, m := range []struct {
		kind   error
		status int
		code   string
	}{
		{errdefs.ErrInvalid, http.StatusBadRequest, "invalid"},
		{errdefs.ErrUnauthenticated, http.StatusUnauthorized, "unauthenticated"},
		{errdefs.ErrForbidden, http.StatusForbidden, "permission_denied"},
		{errdefs.ErrNotFound, http.StatusNotFound, "not_found"},
		{errdefs.ErrConflict, http.StatusConflict, "conflict"},
		{engine.ErrOperationRunning, http.StatusConflict, "conflict"},
		{errdefs.ErrUnavailable, http.StatusServiceUnavailable, "unavailable"},
		{errdefs.ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
	} {
		if errors.Is(err, m.kind) {
			status, code = m.status, m.code
			break
		}
	}
	body := runtimeError{Code: code, Message: err.Error(), Field: errdefs.Field(err)}
	writeJSON(w, status, map[string]runtimeError{"error": body})
}

type runtimeError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}
