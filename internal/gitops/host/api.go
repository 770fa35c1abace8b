package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/repourl"
	"github.com/freshet-dev/freshet/internal/tunnel/wire"
)

// APIPrefix is where the applications API is mounted on the app-proxy.
const APIPrefix = appproxyv1.Prefix

// GitTokenHeader carries the caller's git provider token for GET git/repositories.
const GitTokenHeader = appproxyv1.GitTokenHeader

// maxBody bounds request bodies (an Application is at most 1 MiB, as the decoder's limit).
const maxBody = 1 << 20

// Application is an application with its spec and status as the engine has them. The API
// answers it as an appproxyv1.Application (wireApplication), whose JSON is this type's.
type Application struct {
	Name   string `json:"name"`
	File   string `json:"file,omitempty"`      // where it is defined (apps/<name>.yaml, or its Git Source's file)
	Source string `json:"gitSource,omitempty"` // the Git Source it comes from
	Owner  string `json:"owner,omitempty"`     // the application that renders it (app of apps), or its ApplicationSet
	// OwnerKind is the owner's kind: Application or ApplicationSet.
	OwnerKind string           `json:"ownerKind,omitempty"`
	Spec      *app.Application `json:"spec,omitempty"`
	Status    engine.AppStatus `json:"status"`
}

// SyncRequest is the body of a sync.
type SyncRequest = appproxyv1.SyncRequest

// Handler serves the REST API (see docs/appproxy.md) and GraphQL at /app-proxy/api/graphql.
// Requests must carry the caller's identity as the control plane's tunnel (or the ingress
// check) sets it.
func (h *Host) Handler() http.Handler {
	mux := http.NewServeMux()
	h.routes(mux)
	mux.Handle("POST /app-proxy/api/graphql", h.graphqlHandler())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(wire.HeaderAccount) == "" || r.Header.Get(wire.HeaderRole) == "" {
			writeError(w, fmt.Errorf("no caller identity: the applications API is reached through the control plane (/runtimes/{runtime}/app-proxy/…): %w", errdefs.ErrUnauthenticated))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func callerOf(r *http.Request) Caller {
	return Caller{User: r.Header.Get(wire.HeaderUser), Email: r.Header.Get(wire.HeaderEmail), Account: r.Header.Get(wire.HeaderAccount), Role: r.Header.Get(wire.HeaderRole)}
}

func (h *Host) routes(mux *http.ServeMux) {
	handle := func(pattern string, fn func(r *http.Request) (int, any, error)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			status, v, err := fn(r)
			switch {
			case err != nil:
				writeError(w, err)
			case status == http.StatusNoContent:
				w.WriteHeader(status)
			default:
				writeJSON(w, status, v)
			}
		})
	}
	ok := func(v any, err error) (int, any, error) { return http.StatusOK, v, err }
	none := func(err error) (int, any, error) { return http.StatusNoContent, nil, err }

	handle("GET "+APIPrefix+"applications", func(*http.Request) (int, any, error) { return ok(items(wireApplications(h.Applications())), nil) })
	handle("POST "+APIPrefix+"applications", func(r *http.Request) (int, any, error) {
		data, err := readBody(r)
		if err != nil {
			return 0, nil, err
		}
		a, err := h.CreateApplication(r.Context(), callerOf(r), data, queryBool(r, "upsert"), r.URL.Query().Get("gitSource"))
		return http.StatusCreated, wireApplication(a), err
	})
	handle("GET "+APIPrefix+"applications/{name}", func(r *http.Request) (int, any, error) { return okApp(h.Application(r.PathValue("name"))) })
	handle("DELETE "+APIPrefix+"applications/{name}", func(r *http.Request) (int, any, error) {
		cascade := true
		if v := r.URL.Query().Get("cascade"); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return 0, nil, errdefs.Invalid("cascade", v, "must be true or false")
			}
			cascade = b
		}
		return none(h.DeleteApplication(r.Context(), callerOf(r), r.PathValue("name"), cascade))
	})
	handle("POST "+APIPrefix+"applications/{name}/refresh", func(r *http.Request) (int, any, error) {
		return okApp(h.RefreshApplication(r.Context(), callerOf(r), r.PathValue("name"), queryBool(r, "hard")))
	})
	handle("GET "+APIPrefix+"applications/{name}/diff", func(r *http.Request) (int, any, error) {
		d, err := h.eng.Diff(r.Context(), r.PathValue("name"))
		return ok(items(wireDiffs(d)), err)
	})
	handle("POST "+APIPrefix+"applications/{name}/sync", func(r *http.Request) (int, any, error) {
		var req appproxyv1.SyncRequest
		if err := decodeBody(r, &req); err != nil {
			return 0, nil, err
		}
		res, err := h.SyncApplication(r.Context(), callerOf(r), r.PathValue("name"), req)
		return ok(wireSync(res), err)
	})
	handle("POST "+APIPrefix+"applications/{name}/terminate", func(r *http.Request) (int, any, error) {
		t, err := h.TerminateSync(callerOf(r), r.PathValue("name"))
		return ok(appproxyv1.TerminateResult{Terminated: t}, err)
	})
	handle("GET "+APIPrefix+"applications/{name}/history", func(r *http.Request) (int, any, error) {
		hist, err := h.eng.History(r.PathValue("name"))
		return ok(items(wireHistory(hist)), err)
	})
	handle("POST "+APIPrefix+"applications/{name}/rollback", func(r *http.Request) (int, any, error) {
		var req appproxyv1.RollbackRequest
		if err := decodeBody(r, &req); err != nil {
			return 0, nil, err
		}
		res, err := h.RollbackApplication(r.Context(), callerOf(r), r.PathValue("name"), req.ID, req.Prune)
		return ok(wireRollback(res), err)
	})
	handle("POST "+APIPrefix+"applications/{name}/auto-sync", func(r *http.Request) (int, any, error) {
		var req appproxyv1.AutoSyncRequest
		if err := decodeBody(r, &req); err != nil {
			return 0, nil, err
		}
		return okApp(h.SetAutoSync(callerOf(r), r.PathValue("name"), req.Enabled))
	})
	handle("GET "+APIPrefix+"applications/{name}/tree", func(r *http.Request) (int, any, error) {
		t, err := h.eng.Tree(r.Context(), r.PathValue("name"))
		return ok(items(wireTree(t)), err)
	})
	handle("POST "+APIPrefix+"notify", func(r *http.Request) (int, any, error) {
		var req appproxyv1.NotifyRequest
		if err := decodeBody(r, &req); err != nil {
			return 0, nil, err
		}
		n, err := h.NotifyPush(callerOf(r), req.RepoURL, req.Revision)
		return ok(appproxyv1.NotifyResult{Refreshed: n}, err)
	})
	handle("GET "+APIPrefix+"git-sources", func(*http.Request) (int, any, error) { return ok(items(wireGitSources(h.GitSources())), nil) })
	handle("POST "+APIPrefix+"git-sources", func(r *http.Request) (int, any, error) {
		data, err := readBody(r)
		if err != nil {
			return 0, nil, err
		}
		upsert := queryBool(r, "upsert")
		g, err := h.PutGitSource(r.Context(), callerOf(r), data, upsert)
		if err != nil {
			return 0, nil, err
		}
		if upsert {
			return ok(wireGitSource(g), nil)
		}
		return http.StatusCreated, wireGitSource(g), nil
	})
	handle("GET "+APIPrefix+"git-sources/{name}", func(r *http.Request) (int, any, error) {
		g, err := h.GitSource(r.PathValue("name"))
		if err != nil {
			return 0, nil, err
		}
		return ok(wireGitSource(g), nil)
	})
	handle("DELETE "+APIPrefix+"git-sources/{name}", func(r *http.Request) (int, any, error) {
		return none(h.DeleteGitSource(r.Context(), callerOf(r), r.PathValue("name")))
	})
	handle("GET "+APIPrefix+"git/repositories", func(r *http.Request) (int, any, error) {
		q := r.URL.Query()
		repos, err := h.ProviderRepos(r.Context(), q.Get("provider"), q.Get("baseURL"), q.Get("owner"), r.Header.Get(GitTokenHeader))
		return ok(items(wireRepos(repos)), err)
	})
	h.resourceRoutes(mux, handle)
	h.rolloutRoutes(handle)
	h.workflowRoutes(mux, handle)
	h.cronWorkflowRoutes(handle)
	h.templateCommitRoutes(handle)
	h.pipelineRoutes(handle)
	handle("GET "+APIPrefix+"clusters", func(*http.Request) (int, any, error) { return ok(items(wireClusters(h.Clusters())), nil) })
	handle("POST "+APIPrefix+"clusters", func(r *http.Request) (int, any, error) {
		var cred appproxyv1.ClusterCredential
		if err := decodeBody(r, &cred); err != nil {
			return 0, nil, err
		}
		a, err := h.AddCluster(r.Context(), callerOf(r), ClusterCredential{Name: cred.Name, Server: cred.Server, CAData: cred.CAData, Token: cred.Token, Labels: cred.Labels})
		return http.StatusCreated, a, err
	})
	handle("DELETE "+APIPrefix+"clusters/{name}", func(r *http.Request) (int, any, error) {
		return none(h.RemoveCluster(r.Context(), callerOf(r), r.PathValue("name")))
	})
}

// items is a List of the API's type.
func items[T any](v []T) appproxyv1.List[T] { return appproxyv1.List[T]{Items: nonNil(v)} }

// okApp answers an application.
func okApp(a Application, err error) (int, any, error) {
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wireApplication(a), nil
}

func queryBool(r *http.Request, name string) bool {
	b, _ := strconv.ParseBool(r.URL.Query().Get(name))
	return b
}

func readBody(r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, errdefs.Invalid("body", "", err.Error())
	}
	if len(data) > maxBody {
		return nil, errdefs.Invalid("body", fmt.Sprintf("more than %d bytes", maxBody), "is too large")
	}
	return data, nil
}

// parseResource reads KIND/NAME, KIND/NAMESPACE/NAME or GROUP/KIND/NAMESPACE/NAME.
func parseResource(s string) (engine.ResourceKey, error) {
	const want = "give KIND/NAME, KIND/NAMESPACE/NAME or GROUP/KIND/NAMESPACE/NAME"
	p := strings.Split(s, "/")
	switch {
	case len(p) == 2 && p[0] != "" && p[1] != "":
		return engine.ResourceKey{Kind: p[0], Name: p[1]}, nil
	case len(p) == 3 && p[0] != "" && p[2] != "":
		return engine.ResourceKey{Kind: p[0], Namespace: p[1], Name: p[2]}, nil
	case len(p) == 4 && p[1] != "" && p[3] != "":
		return engine.ResourceKey{Group: p[0], Kind: p[1], Namespace: p[2], Name: p[3]}, nil
	}
	return engine.ResourceKey{}, errors.New(want)
}

func sameRepo(a, b string) bool {
	na, err1 := repourl.Normalize(a)
	nb, err2 := repourl.Normalize(b)
	return err1 == nil && err2 == nil && na == nb
}

func decodeBody(r *http.Request, v any) error {
	if err := decodeStrict(io.LimitReader(r.Body, maxBody), v); err != nil {
		return errdefs.Invalid("body", "", "is not valid JSON for this call: "+err.Error())
	}
	return nil
}

// decodeStrict decodes one JSON value into v, refusing fields v does not have and anything
// after the value; an empty input leaves v as it is.
func decodeStrict(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON value")
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

// writeError answers with the control plane's error body and status (errdefs.WriteHTTP).
func writeError(w http.ResponseWriter, err error) {
	errdefs.WriteHTTP(w, err, "")
}
