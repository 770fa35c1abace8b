package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store/storetest"
	tunnelclient "github.com/freshet-dev/freshet/internal/tunnel/client"
)

// creatingRuntime stands in for a runtime's app-proxy behind a real tunnel: a create of an
// application or a cluster takes a moment (so concurrent creates overlap), then succeeds
// (201) unless its name starts with "fail-" (500). It records what it created, and reports
// nothing by itself: the test reports.
type creatingRuntime struct {
	mu      sync.Mutex
	created map[string][]string // "applications" or "clusters" → names
}

func (c *creatingRuntime) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind, ok := strings.CutPrefix(r.URL.Path, "/app-proxy/api/v1/")
	if !ok || r.Method != http.MethodPost || (kind != "applications" && kind != "clusters") {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	var body struct {
		Name     string `json:"name"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	data, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(data, &body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	name := body.Name + body.Metadata.Name
	time.Sleep(20 * time.Millisecond)
	if strings.HasPrefix(name, "fail-") {
		http.Error(w, `{"error":{"code":"internal","message":"the runtime failed"}}`, http.StatusInternalServerError)
		return
	}
	c.mu.Lock()
	c.created[kind] = append(c.created[kind], name)
	c.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{}`)
}

func (c *creatingRuntime) count(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.created[kind])
}

// TestAppProxyCreatesUnderConcurrency: 20 applications (and 20 managed clusters of one
// runtime) created at once through the app-proxy at a limit of 3 (2): exactly the limit is
// forwarded and created, every other create is refused with 402 naming the limit, the plan
// and the use — before any runtime reported anything. The reservations then hold until the
// runtime reports (an application reported and then deleted frees its slot), a create the
// runtime refuses or that cannot reach it frees its slot at once, and a reservation the
// runtime never reports frees it when it expires.
func TestAppProxyCreatesUnderConcurrency(t *testing.T) {
	const ttl = 8 * time.Second
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			file := filepath.Join(t.TempDir(), "plans.yaml")
			if err := os.WriteFile(file, []byte("default: three\nplans:\n  - name: three\n    limits: {applications: 3, clusters-per-runtime: 2}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			s := servertest.StartWith(t, d, servertest.Config{Edit: func(o *server.Options) {
				o.Billing.PlansFile = file
				o.Billing.ReservationTTL = ttl
			}})
			reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge", AccessMode: "tunnel"})
			if err != nil {
				t.Fatal(err)
			}
			rt := &creatingRuntime{created: map[string][]string{}}
			dial := func() *tunnelclient.Client {
				cl, err := tunnelclient.Dial(ctx, tunnelclient.Options{ServerURL: s.URL, Token: reg.Token, RuntimeName: "edge", Handler: rt,
					MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				waitUntil(t, "the tunnel", func() bool { return cl.State().Connected > 0 })
				return cl
			}
			cl := dial()
			key, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "gitops"})
			if err != nil {
				t.Fatal(err)
			}
			create := func(kind, name string) (int, string) {
				body := fmt.Sprintf(`{"metadata":{"name":%q}}`, name)
				if kind == "clusters" {
					body = fmt.Sprintf(`{"name":%q,"server":"https://10.0.0.1:6443","token":"t"}`, name)
				}
				st, resp, _ := call(t, "POST", s.URL+"/runtimes/edge/app-proxy/api/v1/"+kind, key.Token, []byte(body))
				_, _, msg := errField(resp)
				return st, msg
			}
			appsRefusal := func(used int) string {
				return fmt.Sprintf(`plan "three" allows 3 applications; the account has %d`, used)
			}
			parallel := func(kind string, n, limit int, want string) time.Duration {
				t.Helper()
				start := time.Now()
				var mu sync.Mutex
				var wg sync.WaitGroup
				ok := 0
				for i := range n {
					wg.Go(func() {
						st, msg := create(kind, fmt.Sprintf("%s-%d", kind[:3], i))
						mu.Lock()
						defer mu.Unlock()
						switch {
						case st == http.StatusCreated:
							ok++
						case st != http.StatusPaymentRequired || msg != want:
							t.Errorf("create %s %d: %d %q; want 201 or 402 %q", kind, i, st, msg, want)
						}
					})
				}
				wg.Wait()
				took := time.Since(start)
				if took >= ttl {
					t.Fatalf("%d creates took %s, longer than the reservations live (%s): nothing can be concluded", n, took, ttl)
				}
				if ok != limit || rt.count(kind) != limit {
					t.Errorf("%d %s admitted and %d created of %d at once at a limit of %d", ok, kind, rt.count(kind), n, limit)
				}
				return took
			}
			took := parallel("applications", 20, 3, appsRefusal(3))
			parallel("clusters", 20, 2, `plan "three" allows 2 clusters per runtime; runtime edge has 2`)
			t.Logf("20 parallel creates at a limit of 3 took %s", took)

			// The app-proxy's GraphQL cannot create applications past the limit: while the plan
			// limits them, its createApplication is refused (however the JSON spells it) and
			// creates go through the REST API; other GraphQL requests pass.
			for _, q := range []string{`{"query":"mutation { a: createApplication(manifest: \"x\") { name } }"}`,
				`{"QUERY":"mutation { create\u0041pplication(manifest: \"x\") { name } }"}`} {
				st, resp, _ := call(t, "POST", s.URL+"/runtimes/edge/app-proxy/api/graphql", key.Token, []byte(q))
				if _, field, msg := errField(resp); st != http.StatusBadRequest || field != "query" || !strings.Contains(msg, "POST /runtimes/{runtime}/app-proxy/api/v1/applications") {
					t.Errorf("GraphQL createApplication %s: %d %v", q, st, resp)
				}
			}
			if st, _, _ := call(t, "POST", s.URL+"/runtimes/edge/app-proxy/api/graphql", key.Token, []byte(`{"query":"{ applications { name } }"}`)); st != http.StatusNotFound {
				t.Errorf("a GraphQL query: %d; want the runtime's answer (404 here)", st)
			}

			// Nothing reported yet: the reservations alone hold the limit.
			if st, msg := create("applications", "later"); st != http.StatusPaymentRequired || msg != appsRefusal(3) {
				t.Errorf("a create with 3 reserved: %d %q", st, msg)
			}
			// The runtime reports the three: still 3 (reported rows, reservations settled).
			rt.mu.Lock()
			made := append([]string(nil), rt.created["applications"]...)
			clusters := append([]string(nil), rt.created["clusters"]...)
			rt.mu.Unlock()
			snapshot := func(names ...string) {
				var rep runtimev1.ReportRequest
				rep.Snapshot = true
				for _, n := range names {
					rep.Applications = append(rep.Applications, runtimev1.Application{Name: n, Sync: "Synced", Health: "Healthy"})
				}
				reportApps(t, s.URL, reg.Token, rep)
			}
			snapshot(made...)
			if st, msg := create("applications", "later"); st != http.StatusPaymentRequired || msg != appsRefusal(3) {
				t.Errorf("a create with 3 reported: %d %q", st, msg)
			}
			// A create of an application that exists adds nothing: forwarded (the runtime
			// answers whether it replaces it).
			if st, msg := create("applications", made[0]); st != http.StatusCreated {
				t.Errorf("re-creating reported %s at the limit: %d %q", made[0], st, msg)
			}
			// The third is deleted in git and the runtime reports it gone: its slot is free,
			// its settled reservation does not come back.
			snapshot(made[:2]...)

			// A create the runtime refuses frees its slot at once.
			if st, _ := create("applications", "fail-1"); st != http.StatusInternalServerError {
				t.Errorf("a create the runtime fails: %d", st)
			}
			// So does one that cannot reach the runtime.
			cl.Close()
			waitUntil(t, "the runtime disconnected", func() bool {
				r, err := s.Admin.GetRuntime(ctx, "edge")
				return err == nil && r.Status == "disconnected"
			})
			if st, msg := create("applications", "unreachable"); st != http.StatusBadGateway {
				t.Errorf("a create with the runtime disconnected: %d %q", st, msg)
			}
			cl = dial()
			defer cl.Close()
			if st, msg := create("applications", "fourth"); st != http.StatusCreated {
				t.Fatalf("a create with 2 reported after a failed and an unreachable create: %d %q", st, msg)
			}
			lost := time.Now()
			if st, msg := create("applications", "fifth"); st != http.StatusPaymentRequired || msg != appsRefusal(3) {
				t.Errorf("a create with 2 reported and 1 reserved: %d %q", st, msg)
			}

			// Clusters: a heartbeat listing them settles their reservations; the limit holds.
			hb := runtimev1.HeartbeatRequest{Protocol: runtimev1.ProtocolVersion, Version: "test",
				Clusters: []runtimev1.Cluster{{Name: "in-cluster", Server: "https://kubernetes.default.svc"}}}
			for _, n := range clusters {
				hb.Clusters = append(hb.Clusters, runtimev1.Cluster{Name: n, Server: "https://10.0.0.1:6443"})
			}
			if _, err := callRunner[runtimev1.HeartbeatRequest, runtimev1.HeartbeatResponse](s.URL, reg.Token, runtimev1.ProcedureHeartbeat, &hb); err != nil {
				t.Fatal(err)
			}
			if st, msg := create("clusters", "third-cluster"); st != http.StatusPaymentRequired || msg != `plan "three" allows 2 clusters per runtime; runtime edge has 2` {
				t.Errorf("a cluster with 2 listed: %d %q", st, msg)
			}

			// "fourth" is never reported: once its reservation expires, its slot is free again.
			time.Sleep(time.Until(lost.Add(ttl + 100*time.Millisecond)))
			if st, msg := create("applications", "sixth"); st != http.StatusCreated {
				t.Errorf("a create after a reservation expired: %d %q", st, msg)
			}
		})
	}
}
