package agent_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

// `freshet runtime` takes the operator's policy for tenants' URLs as `freshet server` does
// (what the Kubernetes provisioner starts each hosted runtime with): a runtime started with it
// refuses a cluster its tenant adds at an address the policy denies, with a 400 naming the
// field and what the operator allows, and adds one the policy allows. Without the flags, a
// hosted runtime takes the control plane's defaults (public addresses only) and a hybrid one
// reaches anything, as before.
func TestRuntimeAppliesTheOperatorsPolicy(t *testing.T) {
	ctx := context.Background()
	s := servertest.Start(t, store.SQLite)
	admin, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	// start runs `freshet runtime ARGS` as an ingress runtime of its own, and returns its
	// ingress.
	start := func(args ...string) string {
		t.Helper()
		n++
		name := "edge-" + string(rune('a'+n))
		reg, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: name, AccessMode: "ingress", IngressHost: name + ".example"})
		if err != nil {
			t.Fatal(err)
		}
		o := flagged(t, append([]string{"--server", s.URL, "--token", reg.Token, "--access-mode", "ingress", "--listen", "127.0.0.1:0",
			"--ingress-url", "https://" + name + ".example", "--data-dir", t.TempDir()}, args...)...)
		o.NoInCluster, o.Version = true, "test"
		r, err := agent.New(o, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = r.Run(rctx) }()
		t.Cleanup(func() { cancel(); <-done })
		for deadline := time.Now().Add(10 * time.Second); r.Status().Account == ""; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no heartbeat answered")
			}
		}
		ing := httptest.NewServer(r.IngressHandler())
		t.Cleanup(ing.Close)
		return ing.URL
	}
	// An API server on loopback, counting what reaches it.
	var hits atomic.Int32
	apiServer := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"33","gitVersion":"v1.33.0"}`))
	}))
	t.Cleanup(apiServer.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: apiServer.Certificate().Raw})
	// addCluster adds that cluster, as the runtime's tenant.
	addCluster := func(ing, name string) (int, string, string) {
		t.Helper()
		body, _ := json.Marshal(appproxyv1.ClusterCredential{Name: name, Server: apiServer.URL, Token: "t", CAData: ca})
		req, _ := http.NewRequest("POST", ing+"/app-proxy/api/v1/clusters", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+admin.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var e struct{ Error struct{ Field string } }
		_ = json.Unmarshal(b, &e)
		return resp.StatusCode, e.Error.Field, string(b)
	}
	const refusal = "URLs from tenants may reach public addresses"

	// What the provisioner passes for a control plane with the default policy.
	ing := start("--hosted", "--allow-file-repos=", "--allow-private-networks=", "--git-provider-hosts=")
	if code, field, body := addCluster(ing, "internal"); code != http.StatusBadRequest || field != "server" || !strings.Contains(body, refusal) {
		t.Errorf("a loopback cluster on a runtime with the default policy: %d %s %s; want a 400 naming server and what is allowed", code, field, body)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the refused cluster's API server got %d requests", n)
	}
	// The operator allows loopback: the same cluster is reached, and added.
	ing = start("--hosted", "--allow-file-repos=", "--allow-private-networks=10.20.0.0/16,loopback", "--git-provider-hosts=")
	if code, _, body := addCluster(ing, "internal"); code/100 != 2 || hits.Load() == 0 {
		t.Errorf("a loopback cluster on a runtime allowing loopback: %d %s, %d requests reached it", code, body, hits.Load())
	}
	// A hybrid runtime, no flags: anything, as before.
	ing = start()
	before := hits.Load()
	if code, _, body := addCluster(ing, "internal"); code/100 != 2 || hits.Load() == before {
		t.Errorf("a loopback cluster on a hybrid runtime: %d %s, no request reached it", code, body)
	}

	// Without the flags, a hosted runtime takes the control plane's defaults; the flags
	// otherwise take effect, and a bad one names itself.
	for _, tc := range []struct {
		args    []string
		refused bool // a loopback API server
	}{
		{[]string{"--hosted"}, true},
		{[]string{"--hosted", "--allow-private-networks=loopback"}, false},
		{nil, false},
		{[]string{"--allow-private-networks=private"}, true},
	} {
		o := flagged(t, append([]string{"--server", "https://freshet.example.test", "--token", "frt_x", "--data-dir", t.TempDir()}, tc.args...)...)
		if err := o.Validate(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		err := o.Policy.CheckServerURL("server", "https://127.0.0.1:6443")
		if (err != nil) != tc.refused {
			t.Errorf("%v: a loopback API server: %v, want refused %v", tc.args, err, tc.refused)
		}
	}
	o := flagged(t, "--server", "https://freshet.example.test", "--token", "frt_x", "--data-dir", t.TempDir(), "--hosted", "--allow-private-networks=the-office")
	if err := o.Validate(); !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != netpolicy.FlagPrivateNetworks || !strings.Contains(err.Error(), "the-office") {
		t.Errorf("a bad --allow-private-networks: %v, want an invalid allow-private-networks naming the value", err)
	}
}

// flagged returns the options `freshet runtime ARGS` parses.
func flagged(t *testing.T, args ...string) agent.Options {
	t.Helper()
	var o agent.Options
	fs := pflag.NewFlagSet("runtime", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}
