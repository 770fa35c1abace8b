package host

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Rollouts is what the app-proxy's rollouts API needs of the runtime's Argo Rollouts controller
// (internal/gitops/rollouts). Errors wrap errdefs' sentinels: not found, conflict (nothing to
// do in the Rollout's state), invalid (a bad revision).
type Rollouts interface {
	// List returns the Rollouts, sorted; app keeps those of one application.
	List(ctx context.Context, app string) ([]appproxyv1.Rollout, error)
	Detail(ctx context.Context, namespace, name string) (appproxyv1.RolloutDetail, error)
	Promote(ctx context.Context, namespace, name string, full bool) error
	Abort(ctx context.Context, namespace, name string) error
	Retry(ctx context.Context, namespace, name string) error
	Restart(ctx context.Context, namespace, name string) (time.Time, error)
	Undo(ctx context.Context, namespace, name string, toRevision int64) (int64, error)
	Pause(ctx context.Context, namespace, name string, pause bool) error
	Resume(ctx context.Context, namespace, name string) error
}

// The rollout operations (POST rollouts/{namespace}/{name}/{op}).
const (
	RolloutPromote = "promote"
	RolloutAbort   = "abort"
	RolloutRetry   = "retry"
	RolloutRestart = "restart"
	RolloutUndo    = "undo"
	RolloutPause   = "pause"
	RolloutResume  = "resume"
)

// RolloutOps are the operations, in the order the API documents them.
var RolloutOps = []string{RolloutPromote, RolloutAbort, RolloutRetry, RolloutRestart, RolloutUndo, RolloutPause, RolloutResume}

// RolloutArgs are an operation's arguments: Full for promote, ToRevision for undo.
type RolloutArgs struct {
	Full       bool
	ToRevision int64
}

func (h *Host) rolloutsCtl() (Rollouts, error) {
	if h.opts.Rollouts == nil {
		return nil, fmt.Errorf("this runtime runs no Rollouts controller (it has no cluster, or was started with --no-rollouts): %w", errdefs.ErrUnavailable)
	}
	return h.opts.Rollouts, nil
}

// ListRollouts returns the runtime's Rollouts (of application app when set).
func (h *Host) ListRollouts(ctx context.Context, app string) ([]appproxyv1.Rollout, error) {
	rc, err := h.rolloutsCtl()
	if err != nil {
		return nil, err
	}
	return rc.List(ctx, app)
}

// Rollout returns one Rollout; app, when set, must be the application that defines it (a
// Rollout of another application is not found, so rules on applications cover it).
func (h *Host) Rollout(ctx context.Context, app, namespace, name string) (appproxyv1.RolloutDetail, error) {
	rc, err := h.rolloutsCtl()
	if err != nil {
		return appproxyv1.RolloutDetail{}, err
	}
	d, err := rc.Detail(ctx, namespace, name)
	if err != nil {
		return d, err
	}
	if app != "" && d.App != app {
		return appproxyv1.RolloutDetail{}, fmt.Errorf("rollout %s/%s of application %s: %w", namespace, name, app, errdefs.ErrNotFound)
	}
	return d, nil
}

// RolloutOp runs an operation on a Rollout for c (member or admin) and answers the Rollout as
// it is after it.
func (h *Host) RolloutOp(ctx context.Context, c Caller, app, namespace, name, op string, args RolloutArgs) (appproxyv1.RolloutDetail, error) {
	if err := c.mayWrite(); err != nil {
		return appproxyv1.RolloutDetail{}, err
	}
	rc, err := h.rolloutsCtl()
	if err != nil {
		return appproxyv1.RolloutDetail{}, err
	}
	switch op {
	case RolloutPromote, RolloutAbort, RolloutRetry, RolloutRestart, RolloutUndo, RolloutPause, RolloutResume:
	default:
		return appproxyv1.RolloutDetail{}, errdefs.Invalid("operation", op, fmt.Sprintf("is not a rollout operation (use one of %v)", RolloutOps))
	}
	if _, err := h.Rollout(ctx, app, namespace, name); err != nil {
		return appproxyv1.RolloutDetail{}, err
	}
	switch op {
	case RolloutPromote:
		err = rc.Promote(ctx, namespace, name, args.Full)
	case RolloutAbort:
		err = rc.Abort(ctx, namespace, name)
	case RolloutRetry:
		err = rc.Retry(ctx, namespace, name)
	case RolloutRestart:
		_, err = rc.Restart(ctx, namespace, name)
	case RolloutUndo:
		_, err = rc.Undo(ctx, namespace, name, args.ToRevision)
	case RolloutPause:
		err = rc.Pause(ctx, namespace, name, true)
	case RolloutResume:
		err = rc.Resume(ctx, namespace, name)
	}
	if err != nil {
		return appproxyv1.RolloutDetail{}, err
	}
	h.log.Info("rollout operation", "op", op, "rollout", namespace+"/"+name, "user", c.Email, "account", c.Account)
	return rc.Detail(ctx, namespace, name)
}

// rolloutRoutes serves rollouts/… and, scoped to an application (so the account's rules on
// applications apply), applications/{app}/rollouts/….
func (h *Host) rolloutRoutes(handle func(string, func(*http.Request) (int, any, error))) {
	for _, prefix := range []string{APIPrefix + "rollouts", APIPrefix + "applications/{app}/rollouts"} {
		handle("GET "+prefix, func(r *http.Request) (int, any, error) {
			app := r.PathValue("app")
			if app == "" {
				app = r.URL.Query().Get("app")
			}
			l, err := h.ListRollouts(r.Context(), app)
			return http.StatusOK, items(l), err
		})
		handle("GET "+prefix+"/{namespace}/{name}", func(r *http.Request) (int, any, error) {
			d, err := h.Rollout(r.Context(), r.PathValue("app"), r.PathValue("namespace"), r.PathValue("name"))
			return http.StatusOK, d, err
		})
		handle("POST "+prefix+"/{namespace}/{name}/{op}", func(r *http.Request) (int, any, error) {
			var args RolloutArgs
			switch r.PathValue("op") {
			case RolloutPromote:
				var req appproxyv1.RolloutPromoteRequest
				if err := decodeBody(r, &req); err != nil {
					return 0, nil, err
				}
				args.Full = req.Full
			case RolloutUndo:
				var req appproxyv1.RolloutUndoRequest
				if err := decodeBody(r, &req); err != nil {
					return 0, nil, err
				}
				args.ToRevision = req.ToRevision
			}
			d, err := h.RolloutOp(r.Context(), callerOf(r), r.PathValue("app"), r.PathValue("namespace"), r.PathValue("name"), r.PathValue("op"), args)
			return http.StatusOK, d, err
		})
	}
}

// ReportRollout sends a transition of an application's Rollout (an update started, a step, a
// phase, completed, aborted) to the control plane, in order with the engine's events.
func (h *Host) ReportRollout(app string, at time.Time, rec runtimev1.RolloutRecord) {
	if h.rep.sink == nil {
		return
	}
	h.rep.enqueue(runtimev1.AppEvent{Type: runtimev1.RolloutChanged, App: app, At: at, Rollout: &rec})
}
