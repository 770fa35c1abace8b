package engine

import (
	"fmt"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// ConditionSyncWindow: the application is out of sync and a sync window of its project keeps
// the sync it needs (automated for an automated app, else manual) from running now; the
// message names the window and when a sync may next run.
const ConditionSyncWindow = "SyncBlockedBySyncWindow"

// ErrSyncWindow: a sync window of the application's project blocks the sync now.
var ErrSyncWindow = fmt.Errorf("blocked by a sync window: %w", errdefs.ErrConflict)

// manualSync reports whether a sync was asked for by a user (manualSync windows let those
// through) rather than started by automation.
func manualSync(by Initiator) bool {
	return by != InitiatedByAutomated && by != InitiatedBySelfHeal
}

// appProject returns the project an application is checked against, as compare resolves it
// (st.mu not held).
func (e *Engine) appProject(st *appState) (*app.Application, *app.AppProject) {
	st.mu.Lock()
	a, project, owner := st.app, st.project, st.owner
	st.mu.Unlock()
	if owner != "" || project == nil {
		project = e.resolveProject(a.Spec.Project)
	}
	return a, project
}

// checkSyncWindows returns ErrSyncWindow, with the message saying which window blocks and
// until when, when the project's windows block a sync initiated by by now. A dry run applies
// nothing and is never blocked. st.mu is not held.
func (e *Engine) checkSyncWindows(st *appState, by Initiator, dryRun bool) error {
	if dryRun {
		return nil
	}
	a, project := e.appProject(st)
	if dec := project.SyncWindowsAllow(a, e.now(), manualSync(by)); !dec.Allowed {
		return fmt.Errorf("%s: %w", dec.Message, ErrSyncWindow)
	}
	return nil
}

// windowWait is automation's gate: when the project's windows block an automated sync at now
// it returns true and how long until one may run (0: look again at the next poll).
func windowWait(a *app.Application, project *app.AppProject, now time.Time) (time.Duration, bool) {
	dec := project.SyncWindowsAllow(a, now, false)
	if dec.Allowed {
		return 0, false
	}
	if dec.NextAllowed.IsZero() {
		return 0, true
	}
	return max(dec.NextAllowed.Sub(now), time.Second), true
}

// windowCondition is the condition publish shows while the app is out of sync and its
// project's windows block the sync it needs: automated when automation is on, else manual.
func windowCondition(st *appState, project *app.AppProject, cmp *comparison, now time.Time) (Condition, bool) {
	if cmp.failed || cmp.sync != OutOfSync || project == nil || len(project.Spec.SyncWindows) == 0 {
		return Condition{}, false
	}
	manual := !st.app.Spec.SyncPolicy.IsAutomated() || st.autoSyncOff
	dec := project.SyncWindowsAllow(st.app, now, manual)
	if dec.Allowed {
		return Condition{}, false
	}
	return Condition{Type: ConditionSyncWindow, Message: dec.Message}, true
}
