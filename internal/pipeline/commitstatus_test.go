package pipeline

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/gitops/providers"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// HandleBuildEvent posts the state of the build as it is when handled: a started event of a
// build that has ended posts nothing (its finished event posts the end), builds without a
// repository or git context post nothing, and without a trigger the first git context posts.
// The provider is a Gitea double (no Gitea can run here) that records what it got.
func TestHandleBuildEvent(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t, store.SQLite)
	keys, err := secrets.GenerateKeyFile(filepath.Join(t.TempDir(), "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	acct := store.Account{ID: store.NewID(store.PrefixAccount), Name: "acme", CreatedAt: time.Now()}
	if err := db.CreateAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	s := New(Deps{Store: db, Audit: audit.NewLog(db, log), Keys: keys, Log: log, BaseURL: "https://ci.example/"})
	p := rbac.Principal{AccountID: acct.ID, Email: "admin@acme.test", Role: rbac.Admin}
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]string
		json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		got = append(got, r.Header.Get("Authorization")+" "+r.URL.Path+" "+body["state"]+" "+body["target_url"])
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	for name, tok := range map[string]string{"gt": "tok-gt", "gt2": "tok-gt2"} {
		if _, err := s.PutContext(ctx, p, name, ContextInput{Type: ContextGit, Git: &GitProvider{Provider: providers.Gitea, URL: srv.URL, Token: tok}}, true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateProject(ctx, p, "app"); err != nil {
		t.Fatal(err)
	}
	for name, contexts := range map[string][]string{"ci": {"gt", "gt2"}, "none": nil} {
		if _, err := s.CreatePipeline(ctx, p, PipelineInput{Project: "app", Name: name, SpecYAML: "version: '1.0'\nsteps:\n  one:\n    commands: [\"true\"]\n",
			Config: Config{Contexts: contexts}}); err != nil {
			t.Fatal(err)
		}
	}
	const sha = "3f786850e387550fdab836ed7e6dc881de23001b"
	run := func(pl, repo string) Build {
		b, err := s.Run(ctx, p, "app/"+pl, RunInput{Branch: "main", SHA: sha, Repo: repo})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	handle := func(b Build, ev BuildEvent) []string {
		t.Helper()
		mu.Lock()
		got = nil
		mu.Unlock()
		ev.BuildID = b.ID
		if err := s.HandleBuildEvent(ctx, bus.Message[BuildEvent]{Subject: "freshet." + acct.ID + ".builds.x", Data: ev, Delivered: 1}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return got
	}
	b := run("ci", "acme/app")
	if _, err := s.claimBuild(ctx, store.Build{ID: b.ID, AccountID: acct.ID}, "r1", "l1", time.Now().Add(time.Minute), time.Now()); err != nil {
		t.Fatal(err)
	}
	want := "token tok-gt /api/v1/repos/acme/app/statuses/" + sha + " pending https://ci.example/builds/" + b.ID
	if r := handle(b, BuildEvent{Status: StatusRunning}); len(r) != 1 || r[0] != want {
		t.Fatalf("started: %q, want %q", r, want)
	}
	if ok, err := s.setBuildStatus(ctx, acct.ID, b.ID, "l1", nil, StatusFailed, "step failed", time.Now()); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if r := handle(b, BuildEvent{Status: StatusRunning}); len(r) != 0 {
		t.Errorf("a started event of an ended build posted %q", r)
	}
	if r := handle(b, BuildEvent{Status: StatusFailed}); len(r) != 1 || !strings.Contains(r[0], " failure ") {
		t.Errorf("finished: %q, want failure", r)
	}
	// Both transitions queued their events in the outbox.
	msgs, err := db.OutboxBatch(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var keysGot []string
	for _, m := range msgs {
		keysGot = append(keysGot, m.Subject+" "+m.Key)
	}
	if w := []string{"freshet." + acct.ID + ".builds.started build-started/" + b.ID + "/1", "freshet." + acct.ID + ".builds.finished build-finished/" + b.ID}; strings.Join(keysGot, ",") != strings.Join(w, ",") {
		t.Errorf("outbox = %q, want %q", keysGot, w)
	}
	for _, c := range []struct{ pl, repo string }{{"ci", ""}, {"none", "acme/app"}} {
		if r := handle(run(c.pl, c.repo), BuildEvent{Status: StatusRunning}); len(r) != 0 {
			t.Errorf("pipeline %s repo %q posted %q", c.pl, c.repo, r)
		}
	}
}
