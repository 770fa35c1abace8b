package runtimes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/events"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
)

// Limits of one report (runtimev1.ReportRequest). A runtime with more to say sends several
// reports; a snapshot must fit in one.
const (
	// MaxReportBytes bounds a report's encoded body.
	MaxReportBytes = 32 << 20
	// MaxReportEvents bounds a report's events.
	MaxReportEvents = 1000
	// MaxReportApplications bounds a report's (snapshot's) applications.
	MaxReportApplications = 10000
	// MaxApplicationBytes bounds one application, encoded as JSON.
	MaxApplicationBytes = 1 << 20
	// maxLabelKey and maxLabelValue bound a label (Kubernetes allows 253+1+63 and 63).
	maxLabelKey   = 317
	maxLabelValue = 253
)

// The bus events of the runtimes' applications.
const (
	EventDomain        = "gitops"
	EventSyncFinished  = "sync-finished"
	EventHealthChanged = "health-changed"
	// EventRolloutChanged: a transition of an application's Argo Rollout (RolloutChanged).
	EventRolloutChanged = "rollout-changed"
)

// RolloutChanged is published on freshet.<account>.gitops.rollout-changed for each transition
// a runtime reports of an application's Rollout: an update started, a step reached, a phase
// changed, the update completed or was aborted (Kind, runtimev1's Rollout* kinds).
type RolloutChanged struct {
	AccountID   string    `json:"accountId"`
	RuntimeID   string    `json:"runtimeId"`
	Runtime     string    `json:"runtime"`
	Application string    `json:"application"`
	Namespace   string    `json:"namespace"`
	Rollout     string    `json:"rollout"`
	Kind        string    `json:"kind"`
	Phase       string    `json:"phase"`
	PhaseFrom   string    `json:"phaseFrom,omitempty"`
	Message     string    `json:"message,omitempty"`
	Strategy    string    `json:"strategy,omitempty"`
	Step        *int32    `json:"step,omitempty"`
	Steps       int32     `json:"steps,omitempty"`
	Revision    int64     `json:"revision,omitempty"`
	PodHash     string    `json:"podHash,omitempty"`
	Stable      int64     `json:"stableRevision,omitempty"`
	StartedAt   time.Time `json:"startedAt,omitzero"`
	At          time.Time `json:"at"`
}

// maxRolloutMessage bounds a reported Rollout message (status.message).
const maxRolloutMessage = 4096

var rolloutKinds = []string{runtimev1.RolloutUpdateStarted, runtimev1.RolloutStepChanged, runtimev1.RolloutPhaseChanged, runtimev1.RolloutCompleted, runtimev1.RolloutAborted}

// HealthChanged is published on freshet.<account>.gitops.health-changed when a runtime reports
// that an application's health changed (Healthy → Degraded, ...).
type HealthChanged struct {
	AccountID   string    `json:"accountId"`
	RuntimeID   string    `json:"runtimeId"`
	Runtime     string    `json:"runtime"`
	Application string    `json:"application"`
	From        string    `json:"from"`
	To          string    `json:"to"`
	Message     string    `json:"message,omitempty"`
	Revision    string    `json:"revision,omitempty"`
	At          time.Time `json:"at"`
}

// SyncFinished is published on freshet.<account>.gitops.sync-finished for every finished sync
// that was not a dry run: a deployment. Project, repository and destination are the
// application's when the control plane knew it at the time.
type SyncFinished struct {
	AccountID     string            `json:"accountId"`
	RuntimeID     string            `json:"runtimeId"`
	Runtime       string            `json:"runtime"`
	Application   string            `json:"application"`
	Project       string            `json:"project,omitempty"`
	RepoURL       string            `json:"repoUrl,omitempty"`
	DestServer    string            `json:"destServer,omitempty"`
	DestName      string            `json:"destName,omitempty"`
	DestNamespace string            `json:"destNamespace,omitempty"`
	SyncID        int64             `json:"syncId"`
	Revision      string            `json:"revision"`
	Phase         string            `json:"phase"`
	Message       string            `json:"message,omitempty"`
	InitiatedBy   string            `json:"initiatedBy"`
	User          string            `json:"user,omitempty"` // who asked, for user syncs and rollbacks
	Commit        *runtimev1.Commit `json:"commit,omitempty"`
	// Commits: what the deployment brought from the source repository, where the runtime
	// reported it (validated: checkSyncCommits).
	Commits    *runtimev1.SyncCommits `json:"commits,omitempty"`
	StartedAt  time.Time              `json:"startedAt"`
	FinishedAt time.Time              `json:"finishedAt"`
}

// preparedReport is a validated report turned into store rows; account and runtime are filled
// in when it is applied.
type preparedReport struct {
	snapshot bool
	apps     []store.Application
	events   []preparedEvent
}

type preparedEvent struct {
	typ  string
	app  string
	at   time.Time
	from string                   // HealthChanged: the previous health
	row  store.Application        // AppChanged, HealthChanged
	sync *runtimev1.SyncRecord    // SyncStarted, SyncFinished
	rec  *store.ApplicationSync   // SyncFinished of a real (numbered, not dry-run) sync
	ro   *runtimev1.RolloutRecord // RolloutChanged
	wf   *store.ArchivedWorkflow  // WorkflowFinished (account and runtime filled in when applied)
	// helm: HelmReleaseChanged (the row), HelmReleaseDeleted and HelmReleasesListed (cluster,
	// namespace, name); helmKeep: HelmReleasesListed's releases.
	helm     *store.HelmRelease
	helmKeep map[string]bool
	roles    []rbac.ProjectRole // ProjectRolesListed
}

var eventTypes = []string{runtimev1.AppChanged, runtimev1.AppDeleted, runtimev1.SyncStarted, runtimev1.SyncFinished, runtimev1.HealthChanged, runtimev1.RolloutChanged, runtimev1.WorkflowFinished,
	runtimev1.HelmReleaseChanged, runtimev1.HelmReleaseDeleted, runtimev1.HelmReleasesListed, runtimev1.ProjectRolesListed}

// prepareReport validates req and converts it. Errors are *errdefs.FieldError naming the
// field (applications[3].name, events[7].type), the value and what would be valid.
func prepareReport(req *runtimev1.ReportRequest) (preparedReport, error) {
	out := preparedReport{snapshot: req.Snapshot}
	if n := len(req.Events); n > MaxReportEvents {
		return out, errdefs.Invalid("events", fmt.Sprintf("%d events", n), fmt.Sprintf("are too many: send at most %d per report", MaxReportEvents))
	}
	if n := len(req.Applications); n > MaxReportApplications {
		return out, errdefs.Invalid("applications", fmt.Sprintf("%d applications", n), fmt.Sprintf("are too many: a report holds at most %d", MaxReportApplications))
	}
	seen := make(map[string]int, len(req.Applications))
	for i := range req.Applications {
		field := fmt.Sprintf("applications[%d]", i)
		row, err := appRow(field, &req.Applications[i])
		if err != nil {
			return out, err
		}
		if j, dup := seen[row.Name]; dup {
			return out, errdefs.Invalid(field+".name", row.Name, fmt.Sprintf("is the name of applications[%d] too: each application appears once", j))
		}
		seen[row.Name] = i
		out.apps = append(out.apps, row)
	}
	for i := range req.Events {
		ev := &req.Events[i]
		field := fmt.Sprintf("events[%d]", i)
		if ev.Type == runtimev1.WorkflowFinished {
			// A runtime's workflow, not an application's: no app.
			if ev.App != "" {
				return out, errdefs.Invalid(field+".app", ev.App, "must be empty for "+ev.Type+": workflows are the runtime's")
			}
			row, err := archiveRow(field+".workflow", ev.Workflow)
			if err != nil {
				return out, err
			}
			out.events = append(out.events, preparedEvent{typ: ev.Type, at: ev.At, wf: &row})
			continue
		}
		switch ev.Type {
		case runtimev1.ProjectRolesListed:
			roles, err := prepareProjectRoles(field, ev)
			if err != nil {
				return out, err
			}
			out.events = append(out.events, preparedEvent{typ: ev.Type, at: ev.At, roles: roles})
			continue
		case runtimev1.HelmReleaseChanged, runtimev1.HelmReleaseDeleted, runtimev1.HelmReleasesListed:
			pe, err := prepareHelmEvent(field, ev)
			if err != nil {
				return out, err
			}
			out.events = append(out.events, pe)
			continue
		}
		if err := checkName(field+".app", ev.App); err != nil {
			return out, err
		}
		pe := preparedEvent{typ: ev.Type, app: ev.App, at: ev.At, from: noNUL(ev.HealthFrom)}
		switch ev.Type {
		case runtimev1.AppChanged, runtimev1.HealthChanged:
			if ev.Application == nil {
				return out, errdefs.Invalid(field+".application", "", "is required for "+ev.Type+": the application's new state")
			}
			if ev.Application.Name == "" {
				ev.Application.Name = ev.App
			}
			if ev.Application.Name != ev.App {
				return out, errdefs.Invalid(field+".application.name", ev.Application.Name, fmt.Sprintf("differs from %s.app %q: an event is about one application", field, ev.App))
			}
			row, err := appRow(field+".application", ev.Application)
			if err != nil {
				return out, err
			}
			pe.row = row
		case runtimev1.AppDeleted:
		case runtimev1.SyncStarted, runtimev1.SyncFinished:
			s := ev.Sync
			if s == nil {
				return out, errdefs.Invalid(field+".sync", "", "is required for "+ev.Type+": the sync operation")
			}
			if s.ID < 0 || s.ID > math.MaxInt32 {
				return out, errdefs.Invalid(field+".sync.id", fmt.Sprint(s.ID), fmt.Sprintf("is not a sync ID: use 1 to %d (0 for dry runs)", math.MaxInt32))
			}
			if err := checkSyncCommits(field+".sync.commits", s.Commits); err != nil {
				return out, err
			}
			pe.sync = s
			if ev.Type == runtimev1.SyncFinished && s.ID > 0 && !s.DryRun {
				detail, err := json.Marshal(s)
				if err != nil {
					return out, errdefs.Invalid(field+".sync", "", "cannot be encoded: "+err.Error())
				}
				if len(detail) > MaxApplicationBytes {
					return out, errdefs.Invalid(field+".sync", fmt.Sprintf("%d bytes", len(detail)), fmt.Sprintf("is too large: at most %d bytes encoded", MaxApplicationBytes))
				}
				rec := &store.ApplicationSync{App: ev.App, SyncID: s.ID, Revision: noNUL(s.Revision), Phase: noNUL(s.Phase), Message: noNUL(s.Message),
					InitiatedBy: noNUL(s.InitiatedBy), StartedAt: s.StartedAt, FinishedAt: s.FinishedAt, Detail: string(detail)}
				if c := s.Commit; c != nil {
					rec.CommitAuthor, rec.CommitMessage, rec.CommitTime = noNUL(c.Author), noNUL(c.Message), c.Time
				}
				pe.rec = rec
			}
		case runtimev1.RolloutChanged:
			if err := checkRollout(field+".rollout", ev.Rollout); err != nil {
				return out, err
			}
			if ev.At.IsZero() {
				return out, errdefs.Invalid(field+".at", "", "is required for "+ev.Type+": when the transition happened")
			}
			pe.ro = ev.Rollout
		default:
			return out, errdefs.Invalid(field+".type", ev.Type, "is not an event type: use "+strings.Join(eventTypes, ", "))
		}
		out.events = append(out.events, pe)
	}
	return out, nil
}

// syncCommitKinds are the kinds of runtimev1.SyncCommits.
var syncCommitKinds = []string{runtimev1.CommitsRange, runtimev1.CommitsFirst, runtimev1.CommitsRollback, runtimev1.CommitsUnchanged}

// checkSyncCommits validates the commits a runtime reports with a sync (optional: older
// runtimes send none). Authors and messages are stored as data, within their bounds.
func checkSyncCommits(field string, c *runtimev1.SyncCommits) error {
	if c == nil {
		return nil
	}
	if !slices.Contains(syncCommitKinds, c.Kind) {
		return errdefs.Invalid(field+".kind", c.Kind, "is not a kind of commit range: use "+strings.Join(syncCommitKinds, ", "))
	}
	if len(c.Commits) > runtimev1.MaxSyncCommits {
		return errdefs.Invalid(field+".commits", fmt.Sprintf("%d commits", len(c.Commits)), fmt.Sprintf("are too many: at most %d (the newest, with truncated set)", runtimev1.MaxSyncCommits))
	}
	if (c.Kind == runtimev1.CommitsRollback || c.Kind == runtimev1.CommitsUnchanged) && len(c.Commits) > 0 {
		return errdefs.Invalid(field+".commits", fmt.Sprintf("%d commits", len(c.Commits)), "must be empty for a "+c.Kind+": it brings no commits")
	}
	if len(c.From) > 200 {
		return errdefs.Invalid(field+".from", fmt.Sprintf("%d bytes", len(c.From)), "is too long: at most 200 bytes")
	}
	for i, cm := range c.Commits {
		f := fmt.Sprintf("%s.commits[%d]", field, i)
		if !isCommitSHA(cm.SHA) {
			return errdefs.Invalid(f+".sha", cm.SHA, "is not a commit: use its 40 or 64 hexadecimal digits")
		}
		if len(cm.Author) > runtimev1.MaxCommitAuthorBytes || !utf8.ValidString(cm.Author) || strings.ContainsRune(cm.Author, 0) {
			return errdefs.Invalid(f+".author", fmt.Sprintf("%d bytes", len(cm.Author)), fmt.Sprintf("is not UTF-8 text (no NUL) of at most %d bytes", runtimev1.MaxCommitAuthorBytes))
		}
		if len(cm.Message) > runtimev1.MaxCommitMessageBytes || !utf8.ValidString(cm.Message) || strings.ContainsRune(cm.Message, 0) {
			return errdefs.Invalid(f+".message", fmt.Sprintf("%d bytes", len(cm.Message)), fmt.Sprintf("is not UTF-8 text (no NUL) of at most %d bytes (the subject line)", runtimev1.MaxCommitMessageBytes))
		}
	}
	return nil
}

// isCommitSHA reports whether s is a full SHA-1 or SHA-256 commit ID in lower-case hex.
func isCommitSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// checkRollout validates a reported Rollout transition.
func checkRollout(field string, r *runtimev1.RolloutRecord) error {
	switch {
	case r == nil:
		return errdefs.Invalid(field, "", "is required for "+runtimev1.RolloutChanged+": the Rollout's transition")
	case len(validation.IsDNS1123Label(r.Namespace)) > 0:
		return errdefs.Invalid(field+".namespace", r.Namespace, "is not a namespace name (a DNS-1123 label)")
	case len(validation.IsDNS1123Subdomain(r.Name)) > 0:
		return errdefs.Invalid(field+".name", r.Name, "is not a Rollout name (a DNS-1123 subdomain)")
	case !slices.Contains(rolloutKinds, r.Kind):
		return errdefs.Invalid(field+".kind", r.Kind, "is not a Rollout transition: use "+strings.Join(rolloutKinds, ", "))
	case len(r.Phase) > 64 || hasControl(r.Phase) || len(r.PhaseFrom) > 64 || hasControl(r.PhaseFrom):
		return errdefs.Invalid(field+".phase", r.Phase+" "+r.PhaseFrom, "is not a phase: Healthy, Progressing, Paused or Degraded")
	case r.Strategy != "" && r.Strategy != "canary" && r.Strategy != "blueGreen":
		return errdefs.Invalid(field+".strategy", r.Strategy, "is not a strategy: canary or blueGreen")
	case r.Step != nil && (*r.Step < 0 || *r.Step > r.Steps) || r.Steps < 0:
		return errdefs.Invalid(field+".step", fmt.Sprintf("%v of %d", r.Step, r.Steps), "is not a step: 0 to the number of steps")
	case r.Revision < 0 || r.StableRevision < 0:
		return errdefs.Invalid(field+".revision", fmt.Sprintf("%d, stable %d", r.Revision, r.StableRevision), "is not a revision number")
	case len(r.PodHash) > 63 || hasSpaceOrControl(r.PodHash):
		return errdefs.Invalid(field+".podHash", r.PodHash, "is not a pod-template hash")
	case len(r.Message) > maxRolloutMessage:
		return errdefs.Invalid(field+".message", fmt.Sprintf("%d bytes", len(r.Message)), fmt.Sprintf("is too long: at most %d bytes", maxRolloutMessage))
	}
	return nil
}

// checkName checks an application name: a Kubernetes object name (DNS-1123 subdomain).
func checkName(field, name string) error {
	if name == "" {
		return errdefs.Invalid(field, "", "is required: the application's name")
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return errdefs.Invalid(field, name, "is not an application name: "+strings.Join(msgs, "; "))
	}
	return nil
}

// appRow validates an application and makes its row (without account and runtime).
func appRow(field string, a *runtimev1.Application) (store.Application, error) {
	if err := checkName(field+".name", a.Name); err != nil {
		return store.Application{}, err
	}
	for _, k := range slices.Sorted(maps.Keys(a.Labels)) { // the first bad label, always the same one
		v := a.Labels[k]
		lf := field + ".labels[" + k + "]"
		switch {
		case k == "" || len(k) > maxLabelKey || strings.ContainsAny(k, "=,") || hasSpaceOrControl(k):
			return store.Application{}, errdefs.Invalid(lf, k, fmt.Sprintf("is not a label key: use 1 to %d characters without spaces, '=' or ','", maxLabelKey))
		case len(v) > maxLabelValue || hasControl(v):
			return store.Application{}, errdefs.Invalid(lf, v, fmt.Sprintf("is not a label value: use at most %d characters without control characters", maxLabelValue))
		}
	}
	data, err := json.Marshal(a)
	if err != nil {
		return store.Application{}, errdefs.Invalid(field, a.Name, "cannot be encoded: "+err.Error())
	}
	if len(data) > MaxApplicationBytes {
		return store.Application{}, errdefs.Invalid(field, fmt.Sprintf("%s: %d bytes", a.Name, len(data)), fmt.Sprintf("is too large: an application is at most %d bytes encoded", MaxApplicationBytes))
	}
	c := noNUL
	return store.Application{Name: a.Name, Project: c(a.Project), RepoURL: c(a.RepoURL), Path: c(a.Path), TargetRevision: c(a.TargetRevision),
		DestServer: c(a.DestServer), DestName: c(a.DestName), DestNamespace: c(a.DestNamespace), Sync: c(a.Sync), Health: c(a.Health),
		HealthMessage: c(a.HealthMessage), Revision: c(a.Revision), Labels: a.Labels, Data: string(data)}, nil
}

// noNUL drops NUL characters, which PostgreSQL cannot store in text, from a column's copy of
// a reported value (the JSON of the whole keeps them, escaped).
func noNUL(s string) string { return strings.ReplaceAll(s, "\x00", "") }

func hasControl(s string) bool { return strings.IndexFunc(s, unicode.IsControl) >= 0 }

func hasSpaceOrControl(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0
}

// Report applies a runtime's report, in one transaction: with Snapshot, Applications become
// the runtime's whole set; then each event in order (AppChanged and HealthChanged set the
// application's state, AppDeleted forgets it and its syncs, SyncStarted and SyncFinished set
// its operation, and a finished numbered sync that was not a dry run is recorded and
// published once). rt is the runtime the token belongs to: a report changes that runtime's
// applications only. Each application is written once, in its state after the whole report,
// and only when that differs from what is stored: a report applied twice changes nothing the
// second time. It returns how many applications and events it accepted; invalid input changes
// nothing.
func (s *Service) Report(ctx context.Context, rt Runtime, req runtimev1.ReportRequest) (int, error) {
	rep, err := prepareReport(&req)
	if err != nil {
		return 0, err
	}
	now := s.now()
	published := 0
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		published = 0
		st := &reportState{tx: tx, rt: rt, snapshot: rep.snapshot, apps: map[string]*appState{}}
		for _, a := range rep.apps {
			st.set(a)
		}
		for _, ev := range rep.events {
			switch ev.typ {
			case runtimev1.AppChanged:
				st.set(ev.row)
			case runtimev1.HealthChanged:
				prev, err := st.get(ctx, ev.app)
				if err != nil {
					return err
				}
				// Published only when the stored health really changes: a re-sent report
				// publishes nothing twice.
				changed := !prev.exists || prev.row.Health != ev.row.Health
				st.set(ev.row)
				if changed {
					if err := queueHealthChanged(ctx, tx, rt, ev, now); err != nil {
						return err
					}
					published++
				}
			case runtimev1.RolloutChanged:
				if err := queueRolloutChanged(ctx, tx, rt, ev, now); err != nil {
					return err
				}
				published++
			case runtimev1.WorkflowFinished:
				row := *ev.wf
				row.AccountID, row.RuntimeID, row.ArchivedAt = rt.AccountID, rt.ID, now
				isNew, err := tx.ArchiveWorkflow(ctx, row)
				if err != nil {
					return err
				}
				if isNew {
					if err := queueWorkflowFinished(ctx, tx, rt, row, now); err != nil {
						return err
					}
					published++
				}
			case runtimev1.HelmReleaseChanged, runtimev1.HelmReleaseDeleted, runtimev1.HelmReleasesListed:
				if err := applyHelmEvent(ctx, tx, rt, ev, now); err != nil {
					return err
				}
			case runtimev1.AppDeleted:
				if _, err := tx.DeleteApplication(ctx, rt.AccountID, rt.ID, ev.app); err != nil {
					return err
				}
				st.put(ev.app, &appState{})
			case runtimev1.SyncStarted, runtimev1.SyncFinished:
				a, err := st.get(ctx, ev.app)
				if err != nil {
					return err
				}
				if err := a.setOperation(ev.sync, ev.typ == runtimev1.SyncFinished); err != nil {
					return err
				}
				if ev.rec == nil {
					continue
				}
				rec := *ev.rec
				rec.AccountID, rec.RuntimeID = rt.AccountID, rt.ID
				isNew, err := tx.RecordSync(ctx, rec)
				if err != nil {
					return err
				}
				if isNew {
					if err := queueSyncFinished(ctx, tx, rt, a, ev.sync, rec, now); err != nil {
						return err
					}
					published++
				}
			}
		}
		if err := st.write(ctx, now); err != nil {
			return err
		}
		// The limit reservations of applications this runtime has now reported are settled:
		// the reported rows count them (internal/billing Reserve).
		return tx.SettleApplicationReservations(ctx, rt.AccountID, rt.ID)
	})
	if err != nil {
		return 0, err
	}
	if published > 0 && s.onEvents != nil {
		s.onEvents()
	}
	// The last list of AppProject roles replaces the rules derived from the runtime's roles.
	for i := len(rep.events) - 1; i >= 0; i-- {
		if ev := rep.events[i]; ev.typ == runtimev1.ProjectRolesListed {
			if s.onProjectRoles != nil {
				if err := s.onProjectRoles(ctx, rt.AccountID, rt.ID, rt.Name, ev.roles); err != nil {
					return 0, fmt.Errorf("rules derived from AppProject roles: %w", err)
				}
			}
			break
		}
	}
	return len(rep.apps) + len(rep.events), nil
}

// reportState is the applications a report touches, as the report leaves them.
type reportState struct {
	tx       *store.Tx
	rt       Runtime
	snapshot bool
	apps     map[string]*appState
	order    []string // names in the order the report first mentions them
}

type appState struct {
	row    store.Application
	exists bool
	dirty  bool // differs from the stored row (or may: the write compares)
	app    *runtimev1.Application
}

func (st *reportState) set(row store.Application) {
	st.put(row.Name, &appState{row: row, exists: true, dirty: true})
}

func (st *reportState) put(name string, a *appState) {
	if _, ok := st.apps[name]; !ok {
		st.order = append(st.order, name)
	}
	st.apps[name] = a
}

// get returns an application's state, loading it when the report has not touched it yet. With
// a snapshot, an application not in it does not exist.
func (st *reportState) get(ctx context.Context, name string) (*appState, error) {
	if a, ok := st.apps[name]; ok {
		return a, nil
	}
	a := &appState{}
	if !st.snapshot {
		row, err := st.tx.GetApplication(ctx, st.rt.AccountID, st.rt.ID, name)
		switch {
		case err == nil:
			a.row, a.exists = row, true
		case !errors.Is(err, errdefs.ErrNotFound):
			return nil, err
		}
	}
	st.put(name, a)
	return a, nil
}

// setOperation makes sync the application's operation, unless its operation is newer (a report
// sent again after later ones). An application not known (yet) is left to its AppChanged event.
func (a *appState) setOperation(sync *runtimev1.SyncRecord, finished bool) error {
	if !a.exists {
		return nil
	}
	if a.app == nil {
		v, err := decodeState(a.row)
		if err != nil {
			return err
		}
		a.app = &v
	}
	if op := a.app.Operation; op != nil {
		// A started sync replaces only an older operation; a finished one also its own start.
		if op.StartedAt.After(sync.StartedAt) || (!finished && op.StartedAt.Equal(sync.StartedAt)) {
			return nil
		}
	}
	a.app.Operation = sync
	data, err := json.Marshal(a.app)
	if err != nil {
		return err
	}
	if len(data) > MaxApplicationBytes {
		return errdefs.Invalid("sync", fmt.Sprintf("%d bytes", len(data)), fmt.Sprintf("makes application %s too large: at most %d bytes encoded", a.row.Name, MaxApplicationBytes))
	}
	a.row.Data, a.dirty = string(data), true
	return nil
}

// write stores every application in its final state; with a snapshot, the runtime's other
// applications are deleted.
func (st *reportState) write(ctx context.Context, now time.Time) error {
	var final []store.Application
	for _, name := range st.order {
		if a := st.apps[name]; a.exists && (a.dirty || st.snapshot) {
			a.row.AccountID, a.row.RuntimeID, a.row.UpdatedAt = st.rt.AccountID, st.rt.ID, now
			final = append(final, a.row)
		}
	}
	if st.snapshot {
		_, err := st.tx.ReplaceApplications(ctx, st.rt.AccountID, st.rt.ID, final)
		return err
	}
	for _, a := range final {
		if _, err := st.tx.UpsertApplication(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// queueHealthChanged writes a health transition's bus event to the outbox, in the report's
// transaction. Its key (runtime, app, time, new health) makes a re-sent report publish nothing
// twice.
func queueHealthChanged(ctx context.Context, tx *store.Tx, rt Runtime, ev preparedEvent, now time.Time) error {
	h := HealthChanged{AccountID: rt.AccountID, RuntimeID: rt.ID, Runtime: rt.Name, Application: ev.app, From: ev.from,
		To: ev.row.Health, Message: ev.row.HealthMessage, Revision: ev.row.Revision, At: ev.at}
	payload, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return tx.InsertOutbox(ctx, store.OutboxMessage{
		AccountID: rt.AccountID,
		Subject:   events.DomainSubject(rt.AccountID, EventDomain, EventHealthChanged),
		Key:       fmt.Sprintf("%s-%s/%s/%s/%d/%s", EventDomain, EventHealthChanged, rt.ID, ev.app, ev.at.UnixMicro(), h.To),
		Payload:   string(payload),
		CreatedAt: now,
	})
}

// queueSyncFinished writes the sync's bus event to the outbox, in the report's transaction.
func queueSyncFinished(ctx context.Context, tx *store.Tx, rt Runtime, a *appState, sync *runtimev1.SyncRecord, rec store.ApplicationSync, now time.Time) error {
	ev := SyncFinished{AccountID: rt.AccountID, RuntimeID: rt.ID, Runtime: rt.Name, Application: rec.App, SyncID: rec.SyncID,
		Revision: sync.Revision, Phase: sync.Phase, Message: sync.Message, InitiatedBy: sync.InitiatedBy, User: sync.User, Commit: sync.Commit,
		Commits: sync.Commits, StartedAt: sync.StartedAt, FinishedAt: sync.FinishedAt}
	if a.exists {
		r := a.row
		ev.Project, ev.RepoURL, ev.DestServer, ev.DestName, ev.DestNamespace = r.Project, r.RepoURL, r.DestServer, r.DestName, r.DestNamespace
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return tx.InsertOutbox(ctx, store.OutboxMessage{
		AccountID: rt.AccountID,
		Subject:   events.DomainSubject(rt.AccountID, EventDomain, EventSyncFinished),
		// The sync's identity: the runtime's ID of it and when it started (a runtime's
		// history starts again at 1 when an application is created anew).
		Key:       fmt.Sprintf("%s-%s/%s/%s/%d/%d", EventDomain, EventSyncFinished, rt.ID, rec.App, rec.SyncID, rec.StartedAt.UnixMicro()),
		Payload:   string(payload),
		CreatedAt: now,
	})
}

// queueRolloutChanged writes a Rollout transition's bus event to the outbox, in the report's
// transaction. Its key (runtime, app, Rollout, kind, revision, time) makes a re-sent report
// publish nothing twice.
func queueRolloutChanged(ctx context.Context, tx *store.Tx, rt Runtime, ev preparedEvent, now time.Time) error {
	r := ev.ro
	rc := RolloutChanged{AccountID: rt.AccountID, RuntimeID: rt.ID, Runtime: rt.Name, Application: ev.app, Namespace: r.Namespace,
		Rollout: r.Name, Kind: r.Kind, Phase: noNUL(r.Phase), PhaseFrom: noNUL(r.PhaseFrom), Message: noNUL(r.Message), Strategy: r.Strategy,
		Step: r.Step, Steps: r.Steps, Revision: r.Revision, PodHash: r.PodHash, Stable: r.StableRevision, StartedAt: r.StartedAt, At: ev.at}
	payload, err := json.Marshal(rc)
	if err != nil {
		return err
	}
	return tx.InsertOutbox(ctx, store.OutboxMessage{
		AccountID: rt.AccountID,
		Subject:   events.DomainSubject(rt.AccountID, EventDomain, EventRolloutChanged),
		Key: fmt.Sprintf("%s-%s/%s/%s/%s/%s/%s/%s/%d", EventDomain, EventRolloutChanged, rt.ID, ev.app, r.Namespace, r.Name, r.Kind,
			r.PodHash, ev.at.UnixMicro()),
		Payload:   string(payload),
		CreatedAt: now,
	})
}
