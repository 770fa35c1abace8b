package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

// protoRunner speaks the runner protocol as the runner whose token it holds, one call at a
// time, so a test decides exactly what a runner reports and when.
type protoRunner struct {
	t     *testing.T
	url   string
	token string
}

func (r protoRunner) accept(id string) runnerv1.Job {
	r.t.Helper()
	job, err := callRunner[runnerv1.AcceptRequest, runnerv1.Job](r.url, r.token, runnerv1.ProcedureAccept, &runnerv1.AcceptRequest{BuildID: id})
	if err != nil {
		r.t.Fatalf("accept %s: %v", id, err)
	}
	return *job
}

func (r protoRunner) step(l runnerv1.Lease, name string, images ...runnerv1.Image) error {
	now := time.Now()
	_, err := callRunner[runnerv1.StepUpdate, runnerv1.Empty](r.url, r.token, runnerv1.ProcedureUpdateStep, &runnerv1.StepUpdate{Lease: l,
		Step: runnerv1.StepState{Name: name, Status: "success", Attempts: 1, StartedAt: now.Add(-time.Second), FinishedAt: now}, Images: images})
	return err
}

// renew renews lease l, so that the test's reports are not raced by its expiry.
func (r protoRunner) renew(l runnerv1.Lease) {
	r.t.Helper()
	res, err := callRunner[runnerv1.HeartbeatRequest, runnerv1.HeartbeatResponse](r.url, r.token, runnerv1.ProcedureHeartbeat, &runnerv1.HeartbeatRequest{Leases: []runnerv1.Lease{l}})
	if err != nil || len(res.Lost) != 0 {
		r.t.Fatalf("heartbeat: %+v, %v", res, err)
	}
}

func (r protoRunner) log(l runnerv1.Lease, offset int64, data string) error {
	_, err := callRunner[runnerv1.LogChunk, runnerv1.LogAck](r.url, r.token, runnerv1.ProcedureAppendLog, &runnerv1.LogChunk{Lease: l, Offset: offset, Data: []byte(data)})
	return err
}

func (r protoRunner) complete(l runnerv1.Lease) error {
	_, err := callRunner[runnerv1.CompleteRequest, runnerv1.Empty](r.url, r.token, runnerv1.ProcedureComplete, &runnerv1.CompleteRequest{Lease: l, Status: "success"})
	return err
}

func digest(n int) string { return fmt.Sprintf("sha256:%064x", n) }

// A build handed to a runner carries its pipeline's registries and the account's default,
// decrypted; the images a step reports through the real runner protocol are stored once, shown
// on the build by the REST API, and refused from a runner whose lease is gone or that belongs to
// another account.
func TestPushedImagesThroughTheRunnerProtocol(t *testing.T) {
	for _, d := range storetest_backends() {
		t.Run(string(d), func(t *testing.T) { testPushedImages(t, d) })
	}
}

func testPushedImages(t *testing.T, d store.Dialect) {
	ctx := context.Background()
	s := servertest.Start(t, d)
	s.Dispatcher().SetLeaseTTL(2 * time.Second)
	const ghcrPW, localPW = "ghcr-pw-8421-secret", "local-pw-1357-secret"
	if _, err := s.Admin.CreateContext(ctx, client.ContextRequest{Name: "ghcr", Type: "registry",
		Registry: &client.RegistryContext{URL: "ghcr.io/acme", Username: "bot", Password: ghcrPW}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.CreateContext(ctx, client.ContextRequest{Name: "local", Type: "registry",
		Registry: &client.RegistryContext{URL: "127.0.0.1:5000", Username: "ci", Password: localPW, Default: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.CreateProject(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "app", Name: "ci", Spec: isolationSpec,
		Config: client.PipelineConfig{Contexts: []string{"ghcr"}}}); err != nil {
		t.Fatal(err)
	}
	const sha = "0123456789abcdef0123456789abcdef01234567"
	b, err := s.Admin.RunPipeline(ctx, "app/ci", client.RunRequest{Branch: "release/1.4", SHA: sha, Repo: "https://github.com/acme/app.git",
		Message: "APP-14: faster startup (#12)"})
	if err != nil {
		t.Fatal(err)
	}
	r1 := protoRunner{t, s.URL, registerRunner(t, s.Admin, "r1")}
	r2 := protoRunner{t, s.URL, registerRunner(t, s.Admin, "r2")}
	if _, err := s.Identity().Provision(ctx, "bravo", "eve@bravo.test", "eve-password"); err != nil {
		t.Fatal(err)
	}
	eve := s.Login(t, "eve@bravo.test", "eve-password")
	rb := protoRunner{t, s.URL, registerRunner(t, eve, "rb")}

	job := r1.accept(b.ID)
	want := []runnerv1.Registry{{Name: "ghcr", URL: "ghcr.io/acme", Username: "bot", Password: ghcrPW},
		{Name: "local", URL: "127.0.0.1:5000", Username: "ci", Password: localPW, Default: true}}
	if !slices.Equal(job.Registries, want) {
		t.Fatalf("job registries = %+v, want %+v", job.Registries, want)
	}
	if !slices.Contains(job.Secrets, ghcrPW) || !slices.Contains(job.Secrets, localPW) {
		t.Fatalf("job secrets %q lack the registry passwords", job.Secrets)
	}
	lease1 := runnerv1.Lease{BuildID: b.ID, LeaseID: job.LeaseID}

	app := runnerv1.Image{Registry: "ghcr", Repository: "ghcr.io/acme/app", Tags: []string{"1.4.2", "latest"}, Digest: digest(1), Size: 13_421_773}
	images := func() []client.Image {
		t.Helper()
		got, err := s.Admin.GetBuild(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Images
	}
	// The report and its retries (the runner did not see the answer) store the image once.
	for range 3 {
		if err := r1.step(lease1, "build", app); err != nil {
			t.Fatalf("report images: %v", err)
		}
	}
	got := images()
	if len(got) != 1 {
		t.Fatalf("after a retried report the build shows %d images: %+v", len(got), got)
	}
	im := got[0]
	if im.Step != "build" || im.Registry != "ghcr" || im.Repository != "ghcr.io/acme/app" || !slices.Equal(im.Tags, app.Tags) || im.Digest != digest(1) ||
		im.Size != 13_421_773 || im.SHA != sha || im.Branch != "release/1.4" || im.BuildID != b.ID || im.ID == "" || im.CreatedAt.IsZero() {
		t.Fatalf("stored image = %+v", im)
	}
	// The build's image is a reported image too, linked to the build's commit and the issues its
	// message names (#12 in the build's repository); the retries counted once.
	reported, err := s.Admin.ListImages(ctx, client.ImageFilter{Digest: digest(1)})
	if err != nil || len(reported.Items) != 1 {
		t.Fatalf("reported images of the build: %+v, %v", reported.Items, err)
	}
	if ri := reported.Items[0]; ri.BuildID != b.ID || ri.Repository != "ghcr.io/acme/app" || ri.Commit == nil || ri.Commit.SHA != sha ||
		ri.Commit.Branch != "release/1.4" || ri.Commit.Message != "APP-14: faster startup (#12)" || len(ri.Issues) != 2 ||
		ri.Issues[0].Key != "APP-14" || ri.Issues[1].Key != "acme/app#12" || ri.Issues[0].Error != "no issue tracker is configured for it" {
		t.Fatalf("reported image of the build: %+v", ri)
	}
	// A report naming more tags for the same image adds them; another step's push is another record.
	r1.renew(lease1)
	app2 := app
	app2.Tags = []string{"latest", "release-1.4"}
	if err := r1.step(lease1, "build", app2); err != nil {
		t.Fatal(err)
	}
	if err := r1.step(lease1, "push", runnerv1.Image{Registry: "local", Repository: "127.0.0.1:5000/app", Digest: digest(1), Size: 13_421_773}); err != nil {
		t.Fatal(err)
	}
	got = images()
	if len(got) != 2 || !slices.Equal(got[0].Tags, []string{"1.4.2", "latest", "release-1.4"}) || got[1].Step != "push" || got[1].Tags == nil {
		t.Fatalf("images = %+v", got)
	}

	// A bad report is refused, naming the field, and stores nothing (not even the step).
	r1.renew(lease1)
	bad := app
	bad.Digest = "sha256:short"
	err = r1.step(lease1, "bad", bad)
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "images[0].digest") {
		t.Fatalf("a bad digest: %v", err)
	}
	if cur, _ := s.Admin.GetBuild(ctx, b.ID); len(cur.Images) != 2 || stepByName(cur, "bad").Name != "" {
		t.Fatalf("a refused report stored something: %+v", cur)
	}

	// A runner of another account cannot report into this build.
	r1.renew(lease1)
	if err := rb.step(lease1, "evil", runnerv1.Image{Registry: "x", Repository: "evil.example/x", Digest: digest(9)}); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("another account's runner reporting images: %v, want not found", err)
	}

	// r1 stops renewing its lease: the build is requeued and r2 takes it. r1's late report is
	// refused as its other writes are, and stores nothing; r2's is stored.
	deadline := time.Now().Add(20 * time.Second)
	for {
		cur, err := s.Admin.GetBuild(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if cur.Status == "queued" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the build was not requeued after its lease expired: %s", cur.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	job2 := r2.accept(b.ID)
	lease2 := runnerv1.Lease{BuildID: b.ID, LeaseID: job2.LeaseID}
	stale := r1.step(lease1, "build", runnerv1.Image{Registry: "ghcr", Repository: "ghcr.io/acme/app", Tags: []string{"stale"}, Digest: digest(2)})
	staleLog := r1.log(lease1, job2.LogOffset, "late\n")
	if stale == nil || connect.CodeOf(stale) != connect.CodeOf(staleLog) {
		t.Fatalf("a stale lease's image report: %v; its log write: %v (want the same refusal)", stale, staleLog)
	}
	if got := images(); len(got) != 2 || slices.ContainsFunc(got, func(im client.Image) bool { return im.Digest == digest(2) }) {
		t.Fatalf("a stale lease's report was stored: %+v", got)
	}
	if err := r2.step(lease2, "build", runnerv1.Image{Registry: "ghcr", Repository: "ghcr.io/acme/app", Tags: []string{"1.4.2"}, Digest: digest(3), Size: 1}); err != nil {
		t.Fatal(err)
	}
	if err := r2.complete(lease2); err != nil {
		t.Fatal(err)
	}
	// After the build ended, no lease is held: even the last holder's report is refused.
	if err := r2.step(lease2, "after", runnerv1.Image{Registry: "ghcr", Repository: "ghcr.io/acme/app", Digest: digest(4)}); err == nil {
		t.Fatal("a report after the build ended was accepted")
	}
	final, err := s.Admin.GetBuild(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	var digests []string
	for _, im := range final.Images {
		digests = append(digests, im.Digest)
	}
	if final.Status != "success" || !slices.Equal(digests, []string{digest(1), digest(1), digest(3)}) {
		t.Fatalf("final build %s with images %v", final.Status, digests)
	}
	// The listing carries no images (GetBuild only); the other account sees nothing.
	if l, err := s.Admin.ListBuilds(ctx, client.BuildFilter{}); err != nil || len(l.Items) != 1 || l.Items[0].Images != nil {
		t.Fatalf("ListBuilds = %+v, %v", l.Items, err)
	}
	if _, err := eve.GetBuild(ctx, b.ID); !client.IsStatus(err, http.StatusNotFound) {
		t.Fatalf("another account reading the build: %v", err)
	}
}

// Registry contexts through the REST API: created, listed, read, updated and deleted with the
// password masked for everyone (admins may decrypt, audited), field errors named, at most one
// default per account; and the password is masked in a build's log by the real runner.
func TestRegistryContextsAPIAndLogMasking(t *testing.T) {
	for _, d := range storetest_backends() {
		t.Run(string(d), func(t *testing.T) { testRegistryContextsAPI(t, d) })
	}
}

func testRegistryContextsAPI(t *testing.T, d store.Dialect) {
	ctx := context.Background()
	s := servertest.Start(t, d)
	if _, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: "vic@first.test", Role: "viewer", Password: "viewer-password"}); err != nil {
		t.Fatal(err)
	}
	viewer := s.Login(t, "vic@first.test", "viewer-password")
	const pw = "Reg1stry-P@ss-4826"
	for _, c := range []struct {
		field string
		req   client.ContextRequest
	}{
		{"registry.url", client.ContextRequest{Name: "r", Type: "registry", Registry: &client.RegistryContext{URL: "https://ghcr.io"}}},
		{"registry.url", client.ContextRequest{Name: "r", Type: "registry", Registry: &client.RegistryContext{URL: "ghcr.io/Acme"}}},
		{"registry.password", client.ContextRequest{Name: "r", Type: "registry", Registry: &client.RegistryContext{URL: "ghcr.io", Username: "u"}}},
		{"registry.ca", client.ContextRequest{Name: "r", Type: "registry", Registry: &client.RegistryContext{URL: "ghcr.io", CA: "nope"}}},
		{"registry", client.ContextRequest{Name: "r", Type: "registry"}},
		{"registry", client.ContextRequest{Name: "r", Type: "secret", Values: map[string]string{"A": "b"}, Registry: &client.RegistryContext{URL: "ghcr.io"}}},
		{"type", client.ContextRequest{Name: "r", Type: "docker", Values: map[string]string{"A": "b"}}},
	} {
		var ae *client.Error
		if _, err := s.Admin.CreateContext(ctx, c.req); !errors.As(err, &ae) || ae.Status != 400 || ae.Field != c.field {
			t.Errorf("create %+v: %v, want a 400 naming %s", c.req.Registry, err, c.field)
		}
	}
	created, err := s.Admin.CreateContext(ctx, client.ContextRequest{Name: "ghcr", Type: "registry",
		Registry: &client.RegistryContext{URL: "ghcr.io/acme", Username: "bot", Password: pw, Default: true}})
	if err != nil {
		t.Fatal(err)
	}
	masked := client.RegistryContext{URL: "ghcr.io/acme", Username: "bot", Password: "*****", Default: true}
	if created.Type != "registry" || created.Registry == nil || *created.Registry != masked || len(created.Values) != 0 {
		t.Fatalf("created %+v %+v", created, created.Registry)
	}
	for who, c := range map[string]*client.Client{"admin": s.Admin, "viewer": viewer} {
		got, err := c.GetContext(ctx, "ghcr", false)
		if err != nil || *got.Registry != masked {
			t.Errorf("%s reads %+v, %v", who, got.Registry, err)
		}
		l, err := c.ListContexts(ctx)
		if err != nil || len(l.Items) != 1 || *l.Items[0].Registry != masked {
			t.Errorf("%s lists %+v, %v", who, l.Items, err)
		}
	}
	if _, err := viewer.GetContext(ctx, "ghcr", true); !client.IsStatus(err, http.StatusForbidden) {
		t.Errorf("a viewer decrypting: %v", err)
	}
	if _, err := viewer.UpdateContext(ctx, "ghcr", client.ContextRequest{Registry: &client.RegistryContext{URL: "evil.example", Password: "x"}}); !client.IsStatus(err, http.StatusForbidden) {
		t.Errorf("a viewer updating: %v", err)
	}
	if got, err := s.Admin.GetContext(ctx, "ghcr", true); err != nil || got.Registry.Password != pw {
		t.Fatalf("decrypted %+v, %v", got.Registry, err)
	}
	// The masked answer sent back keeps the password; another URL needs it again.
	back := masked
	back.Username = "robot"
	if _, err := s.Admin.UpdateContext(ctx, "ghcr", client.ContextRequest{Registry: &back}); err != nil {
		t.Fatal(err)
	}
	back.URL = "evil.example/acme"
	var ae *client.Error
	if _, err := s.Admin.UpdateContext(ctx, "ghcr", client.ContextRequest{Registry: &back}); !errors.As(err, &ae) || ae.Field != "registry.password" {
		t.Fatalf("moving the password to another URL: %v", err)
	}
	// A second default replaces the first.
	if _, err := s.Admin.CreateContext(ctx, client.ContextRequest{Name: "local", Type: "registry",
		Registry: &client.RegistryContext{URL: "127.0.0.1:5000", Default: true}}); err != nil {
		t.Fatal(err)
	}
	defaults := func() (out []string) {
		l, err := s.Admin.ListContexts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range l.Items {
			if c.Registry != nil && c.Registry.Default {
				out = append(out, c.Name)
			}
		}
		return out
	}
	if got := defaults(); !slices.Equal(got, []string{"local"}) {
		t.Fatalf("defaults = %v, want [local]", got)
	}

	// A build of a pipeline using the registry: a step that prints the password prints a mask.
	if _, err := s.Admin.CreateProject(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	spec := "version: '1.0'\nsteps:\n  leak:\n    commands: ['echo \"password=" + pw + "\"']\n"
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "app", Name: "ci", Spec: spec,
		Config: client.PipelineConfig{Contexts: []string{"ghcr"}}}); err != nil {
		t.Fatal(err)
	}
	startRunner(t, s, registerRunner(t, s.Admin, "r1"), "r1", nil)
	b, err := s.Admin.RunPipeline(ctx, "app/ci", client.RunRequest{Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	final := waitBuild(t, s.Admin, b.ID, 30*time.Second, "success", "failed", "terminated")
	log, _ := s.Admin.BuildLog(ctx, b.ID, 0)
	if final.Status != "success" || !strings.Contains(string(log), "password=") {
		t.Fatalf("build %s: %s\n%s", final.Status, final.Reason, log)
	}
	if strings.Contains(string(log), pw) || strings.Contains(string(log), pw[4:14]) {
		t.Fatalf("the registry password is in the log:\n%s", log)
	}

	// Deleting the default leaves the account without one.
	if err := s.Admin.DeleteContext(ctx, "local"); err != nil {
		t.Fatal(err)
	}
	if got := defaults(); len(got) != 0 {
		t.Fatalf("defaults after deleting the default = %v", got)
	}
	if _, err := s.Admin.GetContext(ctx, "local", false); !client.IsStatus(err, http.StatusNotFound) {
		t.Fatalf("deleted context: %v", err)
	}
}
