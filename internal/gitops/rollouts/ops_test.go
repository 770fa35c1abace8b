package rollouts_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/rollouts"
)

// appCanary is canary() defined by the application guestbook.
func appCanary(image string) string {
	return strings.Replace(canary(image), "metadata: {name: web}", "metadata: {name: web, labels: {freshet.dev/app: guestbook}}", 1)
}

func stepStatuses(d appproxyv1.RolloutDetail) string {
	var s []string
	for _, st := range d.Steps {
		s = append(s, st.Type+"("+st.Value+")="+st.Status)
	}
	return strings.Join(s, " ")
}

func revs(d appproxyv1.RolloutDetail) string {
	var s []string
	for _, r := range d.Revisions {
		s = append(s, strings.Join([]string{strconv.FormatInt(r.Revision, 10), r.Role, strings.Join(r.Images, ",")}, ":"))
	}
	return strings.Join(s, " ")
}

func ptr(p *int64) string {
	if p == nil {
		return "null"
	}
	return strconv.FormatInt(*p, 10)
}

// TestOperationsAndView drives a canary through the operations the app-proxy offers and checks
// what List and Detail show at each point, on the loopback cluster.
func TestOperationsAndView(t *testing.T) {
	e := newEnv(t)
	e.service("web-canary", "web")
	e.service("web-stable", "web")
	e.apply(appCanary("registry.local/web:1"))
	e.waitPhase("web", rollouts.PhaseHealthy, 4)
	e.apply(appCanary("registry.local/web:2"))
	e.waitPhase("web", rollouts.PhasePaused, 1)
	e.waitRS("web", "1:3/3 2:1/1")

	list, err := e.ctrl.List(e.ctx, "guestbook")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("list of guestbook's rollouts: %+v", list)
	}
	r := list[0]
	if r.Name != "web" || r.Namespace != e.ns || r.App != "guestbook" || r.Phase != "Paused" || r.Strategy != "canary" ||
		r.Step == nil || *r.Step != 1 || ptr(r.StableRevision) != "1" || ptr(r.CanaryRevision) != "2" {
		t.Fatalf("list: %+v step %v stable %s canary %s", r, r.Step, ptr(r.StableRevision), ptr(r.CanaryRevision))
	}
	if other, err := e.ctrl.List(e.ctx, "another-app"); err != nil || len(other) != 0 {
		t.Fatalf("list of another app: %+v, %v", other, err)
	}

	d, err := e.ctrl.Detail(e.ctx, e.ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := stepStatuses(d), "setWeight(25)=Succeeded pause()=Running setWeight(50)=Pending pause(2s)=Pending"; got != want {
		t.Errorf("steps %s, want %s", got, want)
	}
	if got, want := revs(d), "2:canary:registry.local/web:2 1:stable:registry.local/web:1"; got != want {
		t.Errorf("revisions %s, want %s", got, want)
	}
	// status.replicas counts the surge pod while the stable side scales down: 4 or 5.
	if d.Weight == nil || *d.Weight != 25 || d.Replicas < 4 || len(d.AnalysisRuns) != 0 || d.Message != "CanaryPauseStep" {
		w := "nil"
		if d.Weight != nil {
			w = strconv.Itoa(int(*d.Weight))
		}
		t.Errorf("detail: weight %s replicas %d runs %d message %q", w, d.Replicas, len(d.AnalysisRuns), d.Message)
	}
	if _, err := e.ctrl.Detail(e.ctx, e.ns, "nope"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("detail of a missing rollout: %v", err)
	}

	// Pause and resume: resume twice is nothing to do.
	if err := e.ctrl.Pause(e.ctx, e.ns, "web", true); err != nil {
		t.Fatal(err)
	}
	if err := e.ctrl.Resume(e.ctx, e.ns, "web"); err != nil {
		t.Fatal(err)
	}
	if err := e.ctrl.Resume(e.ctx, e.ns, "web"); !errors.Is(err, rollouts.ErrNothingToDo) {
		t.Fatalf("resume of a rollout not paused: %v", err)
	}

	// Full promotion, then undo: revision 1's template comes back as revision 3.
	if err := e.ctrl.Promote(e.ctx, e.ns, "web", true); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("web", rollouts.PhaseHealthy, 4)
	e.waitRS("web", "1:0/0 2:4/4")
	if _, err := e.ctrl.Undo(e.ctx, e.ns, "web", 7); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "toRevision") || !strings.Contains(err.Error(), "it has 1, 2") {
		t.Fatalf("undo to a revision that does not exist: %v", err)
	}
	if _, err := e.ctrl.Undo(e.ctx, e.ns, "web", 2); !errors.Is(err, rollouts.ErrNothingToDo) {
		t.Fatalf("undo to the current revision: %v", err)
	}
	rev, err := e.ctrl.Undo(e.ctx, e.ns, "web", 0)
	if err != nil || rev != 1 {
		t.Fatalf("undo: revision %d, %v", rev, err)
	}
	ro := e.waitPhase("web", rollouts.PhasePaused, 1)
	if img := ro.Spec.Template.Spec.Containers[0].Image; img != "registry.local/web:1" {
		t.Fatalf("after undo the template runs %s", img)
	}
	d, err = e.ctrl.Detail(e.ctx, e.ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	// The ReplicaSet's template carries the API server's defaults, which the Rollout's did
	// not: a new pod-template hash, so a new revision beside the old one (kept as history).
	if got, want := revs(d), "3:canary:registry.local/web:1 2:stable:registry.local/web:2 1:old:registry.local/web:1"; got != want {
		t.Errorf("after undo: revisions %s, want %s", got, want)
	}
	if err := e.ctrl.Promote(e.ctx, e.ns, "web", true); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("web", rollouts.PhaseHealthy, 4)

	// Restart: restartAt set, and every pod replaced.
	at, err := e.ctrl.Restart(e.ctx, e.ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor("restarted", 90*time.Second, func() (bool, string) {
		ro := e.rollout("web")
		return ro.Status.RestartedAt != nil && ro.Status.RestartedAt.Time.Equal(at), string(ro.Status.Phase)
	})
}
