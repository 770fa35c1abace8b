package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

const billingPlans = `
default: small
plans:
  - name: small
    title: Small
    limits: {users: 3, runners: 2, concurrent-builds: 2, build-minutes: 1000, hosted-runtimes: 0, applications: 0, clusters-per-runtime: 0}
  - name: large
    limits: {users: 10, runners: 10}
`

// billingServer starts a control plane whose catalogue's default plan is small, and returns it
// with a billing service on its database (the operator's `freshet plan set`).
func billingServer(t *testing.T, d store.Dialect) (*servertest.Server, *billing.Service) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "plans.yaml")
	if err := os.WriteFile(file, []byte(billingPlans), 0o600); err != nil {
		t.Fatal(err)
	}
	var opts server.Options
	s := servertest.StartWith(t, d, servertest.Config{Edit: func(o *server.Options) {
		o.Billing.PlansFile = file
		opts = *o
	}})
	db, err := store.Open(context.Background(), opts.DSN(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := opts.Billing.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	return s, billing.New(billing.Deps{Store: db, Catalogue: cat})
}

// limitRefusal checks err is the API's 402 refusal naming the plan, the limit and the use.
func limitRefusal(err error, wants ...string) error {
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != 402 || ae.Code != "limit_exceeded" {
		return fmt.Errorf("got %v; want a 402 limit_exceeded refusal", err)
	}
	for _, w := range wants {
		if !strings.Contains(ae.Message, w) {
			return fmt.Errorf("refusal %q does not say %q", ae.Message, w)
		}
	}
	return nil
}

// TestBillingLimitsThroughTheAPI registers runners and users in parallel at their plan's
// limits through the REST API: exactly the limit is created, every other request is refused
// with 402 naming the limit, the plan and the use; a plan change by the operator takes effect
// at the next request.
func TestBillingLimitsThroughTheAPI(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s, ops := billingServer(t, d)

			parallel := func(n int, fn func(i int) error) (ok int, errs []error) {
				var mu sync.Mutex
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() {
						err := fn(i)
						mu.Lock()
						defer mu.Unlock()
						if err == nil {
							ok++
						} else {
							errs = append(errs, err)
						}
					})
				}
				wg.Wait()
				return ok, errs
			}
			ok, errs := parallel(20, func(i int) error {
				_, err := s.Admin.RegisterRunner(ctx, client.RegisterRunnerRequest{Name: fmt.Sprintf("r%d", i)})
				return err
			})
			if ok != 2 {
				t.Errorf("%d runners registered in parallel on a plan of 2", ok)
			}
			for _, err := range errs {
				if e := limitRefusal(err, `plan "small" allows 2 runners; the account has 2`); e != nil {
					t.Error(e)
				}
			}
			ok, errs = parallel(10, func(i int) error {
				// A generated password is hashed before the user is admitted, a bounded number at
				// once: a 429 (busy hashing) is tried again; the limit's refusal is what counts.
				for range 100 {
					_, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: fmt.Sprintf("u%d@first.test", i), Role: "member"})
					var ae *client.Error
					if !errors.As(err, &ae) || ae.Status != http.StatusTooManyRequests {
						return err
					}
					time.Sleep(50 * time.Millisecond)
				}
				return errors.New("busy hashing passwords 100 times")
			})
			if ok != 2 { // the admin is the first of 3
				t.Errorf("%d users created in parallel with 1 of 3 taken", ok)
			}
			for _, err := range errs {
				if e := limitRefusal(err, `plan "small" allows 3 users; the account has 3`); e != nil {
					t.Error(e)
				}
			}

			// At the limit, adding an email that has a login in another account (an invitation)
			// is refused exactly as a new email is: the refusal tells nothing of other accounts.
			if _, err := s.Admin.CreateAccount(ctx, "other"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Admin.SwitchAccount(ctx, "other"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: "elsewhere@other.test", Role: "member", Password: "elsewhere-pw-1"}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Admin.SwitchAccount(ctx, "first"); err != nil {
				t.Fatal(err)
			}
			var msgs []string
			for _, email := range []string{"elsewhere@other.test", "nobody@nowhere.test"} {
				_, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: email, Role: "member", Password: "some-pw-12345"})
				if e := limitRefusal(err, `plan "small" allows 3 users; the account has 3`); e != nil {
					t.Errorf("%s at the limit: %v", email, e)
				} else {
					msgs = append(msgs, err.(*client.Error).Message)
				}
			}
			if len(msgs) == 2 && msgs[0] != msgs[1] {
				t.Errorf("refusals differ: %q and %q", msgs[0], msgs[1])
			}

			p, err := s.Admin.GetPlan(ctx)
			if err != nil {
				t.Fatal(err)
			}
			used := map[string][2]int64{}
			for _, l := range p.Limits {
				used[l.Resource] = [2]int64{l.Used, l.Limit}
			}
			if p.Name != "small" || !p.Default || used["runners"] != [2]int64{2, 2} || used["users"] != [2]int64{3, 3} ||
				used["applications"] != [2]int64{0, 0} || used["clusters-per-runtime"][0] != -1 {
				t.Errorf("plan %+v", p)
			}

			// The operator moves the account to large: the next registration is admitted.
			if _, err := ops.SetPlan(ctx, "first", "large", "test operator"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Admin.RegisterRunner(ctx, client.RegisterRunnerRequest{Name: "after-upgrade"}); err != nil {
				t.Fatalf("runner after the upgrade: %v", err)
			}
			if p, _ := s.Admin.GetPlan(ctx); p.Name != "large" || p.Default || p.ChangedAt == nil {
				t.Errorf("plan after the upgrade: %+v", p)
			}
			// Back to small: 3 runners on a plan of 2; the next is refused, naming the use.
			if _, err := ops.SetPlan(ctx, "first", "small", "test operator"); err != nil {
				t.Fatal(err)
			}
			_, err = s.Admin.RegisterRunner(ctx, client.RegisterRunnerRequest{Name: "after-downgrade"})
			if e := limitRefusal(err, "allows 2 runners; the account has 3"); e != nil {
				t.Error(e)
			}

			// A hosted runtime on a plan of 0.
			_, err = s.Admin.CreateHostedRuntime(ctx, "hosted")
			if e := limitRefusal(err, `plan "small" allows 0 hosted runtimes`); e != nil {
				t.Error(e)
			}

			// Usage: today has the admin's activity; the CSV has the header and a row for it.
			u, err := s.Admin.GetUsage(ctx, "7d")
			if err != nil {
				t.Fatal(err)
			}
			if u.Plan != "small" || len(u.Days) != 1 || u.Days[0].ActiveUsers != 1 || u.Days[0].Day != time.Now().UTC().Format(time.DateOnly) {
				b, _ := json.Marshal(u)
				t.Errorf("usage %s", b)
			}
			csv, err := s.Admin.GetUsageCSV(ctx, "7d")
			if err != nil {
				t.Fatal(err)
			}
			if lines := strings.Split(strings.TrimSpace(string(csv)), "\n"); len(lines) != 2 || lines[0] != "day,build_minutes,builds,deployments,active_users" {
				t.Errorf("usage CSV:\n%s", csv)
			}
			_, err = s.Admin.GetUsage(ctx, "forever")
			var ae *client.Error
			if !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(ae.Message, `since: "forever" is not a window`) {
				t.Errorf("bad since: %v", err)
			}
		})
	}
}

// TestConcurrentBuildLimitWithRunners queues builds in parallel for two runners with free
// slots on a plan of 2 concurrent builds: all run, never more than 2 at once.
func TestConcurrentBuildLimitWithRunners(t *testing.T) {
	ctx := context.Background()
	s, _ := billingServer(t, store.SQLite)
	startRunner(t, s, registerRunner(t, s.Admin, "r1"), "r1", nil)
	startRunner(t, s, registerRunner(t, s.Admin, "r2"), "r2", nil)
	s.Admin.CreateProject(ctx, "p")
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "p", Name: "slow",
		Spec: "version: '1.0'\nsteps:\n  s:\n    commands: ['sleep 0.3']\n"}); err != nil {
		t.Fatal(err)
	}
	const n = 10
	ids := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			b, err := s.Admin.RunPipeline(ctx, "p/slow", client.RunRequest{})
			if err != nil {
				t.Error(err)
				return
			}
			ids <- b.ID
		})
	}
	wg.Wait()
	close(ids)
	peak := 0
	deadline := time.Now().Add(60 * time.Second)
	for {
		page, err := s.Admin.ListBuilds(ctx, client.BuildFilter{ListOptions: client.ListOptions{Limit: 50}})
		if err != nil {
			t.Fatal(err)
		}
		running, done := 0, 0
		for _, b := range page.Items {
			switch b.Status {
			case "running", "pending-approval", "terminating":
				running++
			case "success":
				done++
			case "failed", "terminated":
				t.Fatalf("build %s %s: %s", b.ID, b.Status, b.Reason)
			}
		}
		peak = max(peak, running)
		if done == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d builds done", done, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if peak > 2 {
		t.Errorf("%d builds ran at once on a plan of 2 concurrent builds", peak)
	}
	if peak < 2 {
		t.Logf("peak %d running: the runners never both ran", peak)
	}
}

// TestAppProxyLimits: applications and clusters are created by a runtime, through its
// app-proxy; the control plane refuses the request before it reaches the runtime when the
// plan allows no more, and forwards it once the plan does.
func TestAppProxyLimits(t *testing.T) {
	ctx := context.Background()
	s, ops := billingServer(t, store.SQLite)
	reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge", AccessMode: "tunnel"})
	if err != nil {
		t.Fatal(err)
	}
	_, stop := startRuntime(t, s, reg.Token)
	defer stop()
	waitRuntime(t, s.Admin, "edge", 10*time.Second, "healthy")
	key, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "gitops"})
	if err != nil {
		t.Fatal(err)
	}
	post := func(path string) (int, string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			st, body, _ := call(t, "POST", s.URL+"/runtimes/edge"+path, key.Token, []byte(`{}`))
			if st != http.StatusBadGateway || time.Now().After(deadline) { // the tunnel may still be coming up
				_, _, msg := errField(body)
				return st, msg
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, c := range []struct{ path, want string }{
		{"/app-proxy/api/v1/applications", `plan "small" allows 0 applications; the account has 0`},
		{"/app-proxy/api/v1/clusters", `plan "small" allows 0 clusters per runtime; runtime edge has 0`},
	} {
		if st, msg := post(c.path); st != http.StatusPaymentRequired || msg != c.want {
			t.Errorf("POST %s on small: %d %q; want 402 %q", c.path, st, msg, c.want)
		}
	}
	// Reads and other changes are not limits' business.
	if st, _, _ := call(t, "GET", s.URL+"/runtimes/edge/app-proxy/api/v1/applications", key.Token, nil); st != http.StatusOK {
		t.Errorf("list applications on small: %d", st)
	}
	if _, err := ops.SetPlan(ctx, "first", "large", "test operator"); err != nil {
		t.Fatal(err)
	}
	// Forwarded now: the runtime answers (an empty body is its 400, not the plan's 402).
	for _, path := range []string{"/app-proxy/api/v1/applications", "/app-proxy/api/v1/clusters"} {
		if st, msg := post(path); st == http.StatusPaymentRequired || st == http.StatusBadGateway {
			t.Errorf("POST %s on large: %d %s", path, st, msg)
		}
	}
}
