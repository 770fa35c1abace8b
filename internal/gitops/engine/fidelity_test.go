package engine_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/git"
)

// Fidelity with Argo CD, found by trying its example apps (issue 14, item 9).

// A normal (not hard) refresh resolves the branch again at once: a push is seen even while
// the shared ref advertisement is still fresh.
func TestRefreshResolvesBranchHead(t *testing.T) {
	v := newEnv(t)
	v.restartWith(git.Options{RefsTTL: time.Hour})
	v.repo.Commit("main", map[string]string{"head/cm.yaml": configMap("head", "1")}, "one")
	v.upsert(v.application("head", "head", ""))
	if s := v.refresh("head"); s.Revision != v.repo.RevParse("main") {
		t.Fatalf("first refresh at %s", s.Revision)
	}
	second := v.repo.Commit("main", map[string]string{"head/cm.yaml": configMap("head", "2")}, "two")
	s := v.refresh("head")
	if s.Revision != second || s.Sync != engine.OutOfSync {
		t.Errorf("refresh after a push: revision %s sync %s, want %s OutOfSync", s.Revision, s.Sync, second)
	}
}

// helm.sh/hook-weight puts an object that is not a hook into a wave, as Argo CD does.
func TestHelmHookWeightOrdersWaves(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"hw/a.yaml": configMap("plain", "a"),
		"hw/b.yaml": configMap("weighted", "b", `helm.sh/hook-weight: "-2"`),
	}, "weights")
	v.upsert(v.application("hw", "hw", ""))
	res := v.sync("hw", engine.SyncOptions{})
	v.mustSucceed(res)
	var order []string
	for _, r := range res.Resources {
		order = append(order, r.Name)
	}
	if strings.Join(order, " ") != "weighted plain" || res.Resources[0].Wave != -2 {
		t.Errorf("order %v (first wave %d), want weighted (wave -2) before plain", order, res.Resources[0].Wave)
	}
}

// A hook Job its delete policy keeps shows in the resource tree and is deleted with the app.
func TestHookInTreeAndDeletedWithApp(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"ht/cm.yaml":   configMap("ht", "1"),
		"ht/post.yaml": job("ht-post", []string{`argocd.argoproj.io/hook: PostSync`}, "", ""),
	}, "hook")
	v.upsert(v.application("ht", "ht", ""))
	v.mustSucceed(v.sync("ht", engine.SyncOptions{}))
	tree, err := v.e.Tree(v.ctx(30*time.Second), "ht")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range tree {
		if n.Kind == "Job" && n.Name == "ht-post" {
			found = n.Hook && len(n.Children) > 0 // its Pod below it
		}
	}
	if !found {
		t.Errorf("the PostSync Job (with its Pod) is not in the tree: %+v", tree)
	}
	v.restart() // the engine that removes it has not run the hook itself
	v.upsert(v.application("ht", "ht", ""))
	v.refresh("ht")
	if err := v.e.Remove(v.ctx(30*time.Second), "ht", true); err != nil {
		t.Fatal(err)
	}
	v.eventually(30*time.Second, "hook Job deleted with the app", func() (bool, string) {
		obj, ok := v.get(gvrJob, "ht-post")
		return !ok || obj.GetDeletionTimestamp() != nil, ""
	})
}

// A running sync shows the commit it goes to, from its start.
func TestRunningSyncShowsRevision(t *testing.T) {
	v := newEnv(t)
	head := v.repo.Commit("main", map[string]string{
		"rs/job.yaml": job("rs-work", nil, "", "2s"),
		"rs/cm.yaml":  configMap("rs", "1", `argocd.argoproj.io/sync-wave: "1"`),
	}, "slow")
	v.upsert(v.application("rs", "rs", ""))
	var wg sync.WaitGroup
	wg.Go(func() { v.mustSucceed(v.sync("rs", engine.SyncOptions{})) })
	v.eventually(20*time.Second, "a running operation", func() (bool, string) {
		s, _ := v.e.Status("rs")
		return s.Operation != nil && s.Operation.Phase == engine.PhaseRunning, ""
	})
	s, _ := v.e.Status("rs")
	if s.Operation.Revision != head {
		t.Errorf("running sync's revision %q, want %s", s.Operation.Revision, head)
	}
	wg.Wait()
	if n := v.events.count(engine.EventSyncStarted, func(ev engine.Event) bool { return ev.Sync.Revision == head }); n != 1 {
		t.Errorf("%d SyncStarted events carry the revision, want 1", n)
	}
}

// The first automated sync is not followed by a self-heal of the same revision.
func TestNoSelfHealAfterFirstAutoSync(t *testing.T) {
	v := newEnv(t)
	// A comparison started while the sync runs (a watch event of wave 0) and finished after
	// it (wave 1 is large) saw wave 1 missing: acting on it was a self-heal right after the
	// first sync.
	files := map[string]string{
		"ah/deploy.yaml": deployment("ah", 1, ""),
		"ah/cm.yaml":     configMap("ah-0", "0"),
	}
	for i := range 60 {
		files[fmt.Sprintf("ah/cm%d.yaml", i)] = configMap(fmt.Sprintf("ah-w1-%d", i), "1", `argocd.argoproj.io/sync-wave: "1"`)
	}
	v.repo.Commit("main", files, "auto")
	v.upsert(v.application("ah", "ah", "  syncPolicy:\n    automated: {prune: true, selfHeal: true}\n"))
	v.run()
	v.waitStatus("ah", 40*time.Second, "synced and healthy", healthy)
	time.Sleep(3 * time.Second) // a redundant heal would start within 1s
	hist, err := v.e.History("ah")
	if err != nil {
		t.Fatal(err)
	}
	var by []string
	for _, h := range hist {
		by = append(by, string(h.InitiatedBy))
	}
	if len(hist) != 1 || hist[0].InitiatedBy != engine.InitiatedByAutomated {
		t.Errorf("syncs after the first automated one: %v, want [automated]", by)
	}
}

// Sync options Freshet accepts but does not act on are named in a warning.
func TestIgnoredSyncOptionsWarn(t *testing.T) {
	v := newEnv(t)
	v.repo.Commit("main", map[string]string{
		"io/cm.yaml": configMap("io", "1", "argocd.argoproj.io/sync-options: ServerSideApply=false", "argocd.argoproj.io/compare-options: ServerSideDiff=false"),
	}, "options")
	v.upsert(v.application("io", "io", "  syncPolicy:\n    syncOptions: [Validate=false, Force=true, FailOnSharedResource=true, CreateNamespace=true, SkipDryRunOnMissingResource=true, ServerSideApply=true]\n"))
	s := v.refresh("io")
	var msgs []string
	for _, c := range s.Conditions {
		if c.Type == engine.ConditionUnsupported {
			msgs = append(msgs, c.Message)
		}
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{
		"spec.syncPolicy.syncOptions: Force=true is ignored",
		"ConfigMap/" + v.ns + "/io argocd.argoproj.io/sync-options: ServerSideApply=false is ignored",
		"ConfigMap/" + v.ns + "/io argocd.argoproj.io/compare-options: ServerSideDiff=false is ignored",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning %q in:\n%s", want, all)
		}
	}
	if strings.Contains(all, "CreateNamespace") || strings.Contains(all, "Validate") || strings.Contains(all, "SkipDryRun") || strings.Contains(all, "FailOnSharedResource") || strings.Contains(all, "ServerSideApply=true") {
		t.Errorf("a supported option is warned about:\n%s", all)
	}
}
