package runtimes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
)

// Tunnel reaches connected runtimes (the control plane's tunnel server, adapted in the wiring
// place). Do sends req to the runtime rt as p and returns the runtime's answer; when the runtime
// has no tunnel the error wraps ErrNotConnected.
type Tunnel interface {
	Do(ctx context.Context, rt TunnelRuntime, p rbac.Principal, req *http.Request) (*http.Response, error)
}

// TunnelRuntime names the runtime a Tunnel request goes to.
type TunnelRuntime struct {
	ID, AccountID, Name string
}

// ErrNotConnected is what a Tunnel answers for a runtime that has no tunnel open.
var ErrNotConnected = errors.New("runtime not connected")

// Bounds of reading a runtime's live data.
const (
	treeTimeout  = 15 * time.Second
	maxTreeBytes = 32 << 20
	maxErrorBody = 64 << 10
	// MaxLabelSelectors bounds the label selectors of one listing.
	MaxLabelSelectors = 20
)

// ErrDisconnected: the runtime holding live data is not connected. Errors wrapping it wrap
// errdefs.ErrUnavailable too.
var ErrDisconnected = errors.New("runtime disconnected")

// kindError is an error of the given kinds whose message does not repeat them.
type kindError struct {
	msg   string
	kinds []error
}

func (e *kindError) Error() string   { return e.msg }
func (e *kindError) Unwrap() []error { return e.kinds }

// AppFilter narrows an application listing. Zero fields do not filter.
type AppFilter struct {
	Runtime string // the runtime's ID or name
	Cluster string // the destination's cluster name or server URL
	Health  string // the health status
	Sync    string // the sync status
	Project string
	// Search is a case-insensitive substring of the name, repository URL, path or destination
	// namespace.
	Search string
	// Labels are "key=value" selectors, all of which must match (at most MaxLabelSelectors).
	Labels []string
}

func (f AppFilter) store() (store.AppFilter, error) {
	out := store.AppFilter{Runtime: f.Runtime, Cluster: f.Cluster, Health: f.Health, Sync: f.Sync, Project: f.Project, Search: f.Search}
	if len(f.Labels) > MaxLabelSelectors {
		return out, errdefs.Invalid("filter.labels", fmt.Sprintf("%d selectors", len(f.Labels)), fmt.Sprintf("are too many: use at most %d", MaxLabelSelectors))
	}
	for i, sel := range f.Labels {
		k, v, ok := strings.Cut(sel, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return out, errdefs.Invalid(fmt.Sprintf("filter.labels[%d]", i), sel, "is not a label selector: use key=value (team=payments)")
		}
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		if prev, dup := out.Labels[k]; dup && prev != strings.TrimSpace(v) {
			return out, errdefs.Invalid(fmt.Sprintf("filter.labels[%d]", i), sel, fmt.Sprintf("contradicts %s=%s: a label has one value", k, prev))
		}
		out.Labels[k] = strings.TrimSpace(v)
	}
	return out, nil
}

// Application is a GitOps application as its runtime last reported it: the reported state,
// decoded, and where it runs.
type Application struct {
	ID        string
	AccountID string
	RuntimeID string
	Runtime   string // the runtime's name
	// RuntimeOwner is the ID of the team that owns the runtime (and so the application).
	RuntimeOwner string
	runtimev1.Application
	UpdatedAt time.Time // when a report last changed it
}

// applicationFromRow returns the application a row holds.
func applicationFromRow(r store.Application) (Application, error) {
	state, err := decodeState(r)
	if err != nil {
		return Application{}, err
	}
	state.Name = r.Name
	return Application{ID: r.ID, AccountID: r.AccountID, RuntimeID: r.RuntimeID, Runtime: r.Runtime, RuntimeOwner: r.RuntimeOwner, Application: state, UpdatedAt: r.UpdatedAt}, nil
}

// decodeState returns an application's state as its runtime reported it, which a row keeps as
// JSON.
func decodeState(r store.Application) (runtimev1.Application, error) {
	var out runtimev1.Application
	if err := json.Unmarshal([]byte(r.Data), &out); err != nil {
		return out, fmt.Errorf("application %s: stored state: %w", r.Name, err)
	}
	return out, nil
}

// Deployment is a recorded sync of an application (a finished sync that was not a dry run),
// as its runtime reported it. ID is the runtime's ID of the sync, unique per application.
type Deployment struct {
	RuntimeID, App string
	runtimev1.SyncRecord
}

// deploymentFromRow returns the sync a record holds.
func deploymentFromRow(r store.ApplicationSync) (Deployment, error) {
	out := Deployment{RuntimeID: r.RuntimeID, App: r.App}
	if r.Detail == "" {
		// The columns hold the essentials.
		out.SyncRecord = runtimev1.SyncRecord{Revision: r.Revision, Phase: r.Phase, Message: r.Message, InitiatedBy: r.InitiatedBy,
			StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
	} else if err := json.Unmarshal([]byte(r.Detail), &out.SyncRecord); err != nil {
		return Deployment{}, fmt.Errorf("sync %d of application %s: stored detail: %w", r.SyncID, r.App, err)
	}
	out.ID = r.SyncID
	return out, nil
}

// AppCounts is how many applications pass a filter, by health and by sync status.
type AppCounts struct {
	Total  int
	Health map[string]int // by health status (Healthy, Degraded, ...)
	Sync   map[string]int // by sync status (Synced, OutOfSync, ...)
}

// ListApplications returns p's account's applications that pass f, in the order their runtimes
// first reported them.
func (s *Service) ListApplications(ctx context.Context, p rbac.Principal, f AppFilter, page paging.Page) ([]Application, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return nil, err
	}
	sf, err := f.store()
	if err != nil {
		return nil, err
	}
	rows, err := visibleApps(page, p, func(pg paging.Page) ([]store.Application, error) {
		return s.db.ListApplications(ctx, p.AccountID, sf, pg)
	})
	if err != nil {
		return nil, err
	}
	out := make([]Application, 0, len(rows))
	for _, r := range rows {
		a, err := applicationFromRow(r)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// CountApplications counts p's account's applications that pass f by health and by sync.
func (s *Service) CountApplications(ctx context.Context, p rbac.Principal, f AppFilter) (AppCounts, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return AppCounts{}, err
	}
	sf, err := f.store()
	if err != nil {
		return AppCounts{}, err
	}
	if p.Bound(rbac.KindApplications) {
		// Counted here, over what the caller may read: the database counts every application.
		out := AppCounts{Health: map[string]int{}, Sync: map[string]int{}}
		page := paging.Page{Limit: paging.MaxLimit}
		for {
			rows, err := s.db.ListApplications(ctx, p.AccountID, sf, page)
			if err != nil {
				return AppCounts{}, err
			}
			for _, r := range rows {
				if rbac.Visible(p, appRowResource(r)) {
					out.Total++
					out.Health[r.Health]++
					out.Sync[r.Sync]++
				}
			}
			if len(rows) < page.Size() {
				return out, nil
			}
			page.After = rows[len(rows)-1].ID
		}
	}
	n, err := s.db.CountApplications(ctx, p.AccountID, sf)
	if err != nil {
		return AppCounts{}, err
	}
	return AppCounts{Total: n.Total, Health: n.Health, Sync: n.Sync}, nil
}

// GetApplication returns p's account's application name of the runtime with name or ID runtime.
func (s *Service) GetApplication(ctx context.Context, p rbac.Principal, runtime, name string) (Application, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return Application{}, err
	}
	row, err := s.db.GetApplication(ctx, p.AccountID, runtime, name)
	if err != nil {
		return Application{}, err
	}
	if err := rbac.Authorize(p, rbac.ActRead, appRowResource(row)); err != nil {
		return Application{}, err
	}
	return applicationFromRow(row)
}

// ListSyncs returns the deployments of p's account's application app, newest first.
// page.After is the ID of the sync the previous page ended with (decimal).
func (s *Service) ListSyncs(ctx context.Context, p rbac.Principal, app Application, page paging.Page) ([]Deployment, error) {
	if err := rbac.Authorize(p, rbac.ActRead, app.resource()); err != nil {
		return nil, err
	}
	rows, err := s.db.ListSyncs(ctx, p.AccountID, app.RuntimeID, app.Name, page)
	if err != nil {
		return nil, err
	}
	out := make([]Deployment, 0, len(rows))
	for _, r := range rows {
		d, err := deploymentFromRow(r)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// TreeNode is a live object of an application's resource tree: a managed resource at the top,
// the objects it owns below. It is the JSON the runtime's app-proxy answers.
type TreeNode struct {
	Group     string      `json:"group,omitempty"`
	Version   string      `json:"version"`
	Kind      string      `json:"kind"`
	Namespace string      `json:"namespace,omitempty"`
	Name      string      `json:"name"`
	UID       string      `json:"uid"`
	Health    TreeHealth  `json:"health"`
	Sync      string      `json:"sync,omitempty"`
	CreatedAt time.Time   `json:"createdAt"`
	Images    []string    `json:"images,omitempty"`
	Children  []*TreeNode `json:"children,omitempty"`
}

// TreeHealth is a live object's health.
type TreeHealth struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// Tree reads the live resource tree of p's account's application app from its runtime's
// app-proxy, through the tunnel, as p. A runtime without a tunnel is ErrDisconnected.
func (s *Service) Tree(ctx context.Context, p rbac.Principal, app Application) ([]*TreeNode, error) {
	if err := rbac.Authorize(p, rbac.ActRead, app.resource()); err != nil {
		return nil, err
	}
	if app.AccountID != p.AccountID {
		return nil, fmt.Errorf("application %s: %w", app.Name, errdefs.ErrNotFound)
	}
	var out struct {
		Items []*TreeNode `json:"items"`
	}
	path := "/app-proxy/api/v1/applications/" + url.PathEscape(app.Name) + "/tree"
	if err := s.callRuntime(ctx, p, app.AccountID, app.RuntimeID, app.Runtime, http.MethodGet, path, nil, &out, maxTreeBytes, treeTimeout); err != nil {
		return nil, fmt.Errorf("resource tree of %s: %w", app.Name, err)
	}
	if out.Items == nil {
		out.Items = []*TreeNode{}
	}
	return out.Items, nil
}

// callRuntime sends a request to a runtime's app-proxy through the tunnel as p and decodes
// the JSON answer into out (when not nil). The runtime's error body becomes the error.
func (s *Service) callRuntime(ctx context.Context, p rbac.Principal, accountID, runtimeID, runtimeName, method, path string, body any, out any, maxBytes int64, timeout time.Duration) error {
	if s.tunnel == nil {
		return fmt.Errorf("runtime %s: this server reaches no runtimes: %w", runtimeName, errdefs.ErrUnavailable)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.tunnel.Do(ctx, TunnelRuntime{ID: runtimeID, AccountID: accountID, Name: runtimeName}, p, req)
	if errors.Is(err, ErrNotConnected) {
		return &kindError{fmt.Sprintf("runtime %s is disconnected: this is live data, read from the runtime; retry when it reconnects", runtimeName),
			[]error{ErrDisconnected, errdefs.ErrUnavailable}}
	}
	if err != nil {
		return fmt.Errorf("runtime %s: %w", runtimeName, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return runtimeError(runtimeName, resp)
	}
	if out == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return fmt.Errorf("runtime %s: read the answer: %w: %w", runtimeName, errdefs.ErrUnavailable, err)
	}
	if int64(len(b)) > maxBytes {
		return fmt.Errorf("runtime %s: the answer is larger than %d bytes: %w", runtimeName, maxBytes, errdefs.ErrUnavailable)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("runtime %s: the answer is not the JSON expected: %v: %w", runtimeName, err, errdefs.ErrUnavailable)
	}
	return nil
}

// runtimeError turns a runtime's error answer ({"error": {"code", "message"}}) into an error
// of the same kind.
func runtimeError(name string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var eb struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &eb) == nil && eb.Error.Message != "" {
		msg = eb.Error.Message
	}
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	kind := errdefs.ErrUnavailable
	switch resp.StatusCode {
	case http.StatusNotFound:
		kind = errdefs.ErrNotFound
	case http.StatusForbidden:
		kind = errdefs.ErrForbidden
	case http.StatusBadRequest:
		kind = errdefs.ErrInvalid
	case http.StatusConflict:
		kind = errdefs.ErrConflict
	}
	return &kindError{fmt.Sprintf("runtime %s answered %d: %s", name, resp.StatusCode, msg), []error{kind}}
}
