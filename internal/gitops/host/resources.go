package host

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
)

// One object of an application's tree (docs/appproxy.md, "One resource"): its manifests,
// events and a Pod's log to read; delete and restart to act on it. The object is named by the
// query (kind and name; group and namespace when it has them) and must be in the
// application's tree. The control plane authorizes these as the application's read, delete
// and sync, and audits the changes.

// resourceKey reads an object's key from the query.
func resourceKey(r *http.Request) (engine.ResourceKey, error) {
	q := r.URL.Query()
	k := engine.ResourceKey{Group: q.Get("group"), Kind: q.Get("kind"), Namespace: q.Get("namespace"), Name: q.Get("name")}
	switch {
	case k.Kind == "":
		return k, errdefs.Invalid("kind", "", "is required: the object's kind (Deployment, Pod, ...)")
	case k.Name == "":
		return k, errdefs.Invalid("name", "", "is required: the object's name")
	}
	return k, nil
}

// DeleteResource deletes one object of an application's tree (propagation foreground,
// background or orphan).
func (h *Host) DeleteResource(ctx context.Context, c Caller, app string, key engine.ResourceKey, p engine.DeletePropagation) error {
	if err := c.mayWrite(); err != nil {
		return err
	}
	if err := h.eng.DeleteResource(ctx, app, key, p); err != nil {
		return err
	}
	h.log.Info("resource operation", "op", "delete", "app", app, "resource", key.String(), "propagation", string(p), "user", c.Email, "account", c.Account)
	return nil
}

// RestartResource rolls a workload's Pods (kubectl.kubernetes.io/restartedAt on its template).
func (h *Host) RestartResource(ctx context.Context, c Caller, app string, key engine.ResourceKey) (time.Time, error) {
	if err := c.mayWrite(); err != nil {
		return time.Time{}, err
	}
	at, err := h.eng.RestartResource(ctx, app, key, time.Now())
	if err != nil {
		return time.Time{}, err
	}
	h.log.Info("resource operation", "op", "restart", "app", app, "resource", key.String(), "user", c.Email, "account", c.Account)
	return at, nil
}

func (h *Host) resourceRoutes(mux *http.ServeMux, handle func(string, func(*http.Request) (int, any, error))) {
	const base = APIPrefix + "applications/{name}/resource"
	handle("GET "+base, func(r *http.Request) (int, any, error) {
		key, err := resourceKey(r)
		if err != nil {
			return 0, nil, err
		}
		d, err := h.eng.Resource(r.Context(), r.PathValue("name"), key)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, wireResource(d), nil
	})
	handle("GET "+base+"/events", func(r *http.Request) (int, any, error) {
		key, err := resourceKey(r)
		if err != nil {
			return 0, nil, err
		}
		evs, err := h.eng.ResourceEvents(r.Context(), r.PathValue("name"), key)
		return http.StatusOK, items(wireEvents(evs)), err
	})
	handle("DELETE "+base, func(r *http.Request) (int, any, error) {
		key, err := resourceKey(r)
		if err != nil {
			return 0, nil, err
		}
		p := engine.DeletePropagation(r.URL.Query().Get("propagation"))
		return http.StatusNoContent, nil, h.DeleteResource(r.Context(), callerOf(r), r.PathValue("name"), key, p)
	})
	handle("POST "+base+"/restart", func(r *http.Request) (int, any, error) {
		key, err := resourceKey(r)
		if err != nil {
			return 0, nil, err
		}
		at, err := h.RestartResource(r.Context(), callerOf(r), r.PathValue("name"), key)
		return http.StatusOK, appproxyv1.RestartResult{RestartedAt: at}, err
	})
	mux.HandleFunc("GET "+base+"/logs", func(w http.ResponseWriter, r *http.Request) {
		key, err := resourceKey(r)
		if err != nil {
			writeError(w, err)
			return
		}
		q := r.URL.Query()
		o := engine.LogOptions{Container: q.Get("container")}
		for _, b := range []struct {
			name string
			to   *bool
		}{{"follow", &o.Follow}, {"previous", &o.Previous}} {
			if v := q.Get(b.name); v != "" {
				if *b.to, err = strconv.ParseBool(v); err != nil {
					writeError(w, errdefs.Invalid(b.name, v, "must be true or false"))
					return
				}
			}
		}
		if v := q.Get("tailLines"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				writeError(w, errdefs.Invalid("tailLines", v, "must be a whole number, 0 or more"))
				return
			}
			o.TailLines = n
		}
		// Errors before the stream opens get the JSON error body; after it, the stream just ends.
		lw := &logWriter{w: w}
		started := func() {
			lw.start()
			lw.Flush()
		}
		if err := h.eng.PodLogs(r.Context(), r.PathValue("name"), key, o, started, lw); err != nil && !lw.started {
			writeError(w, err)
			return
		}
		if !lw.started {
			lw.start()
		}
	})
}
