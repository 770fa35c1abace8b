package host_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/testenv/fakedns"
	"github.com/freshet-dev/freshet/internal/tunnel/wire"
)

// A runtime under the operator's policy (a hosted runtime's) lists repositories only from the
// providers it allows and adds only clusters at addresses it allows: a base URL or server on
// loopback, or a name resolving there, is a 400 naming the field and nothing is connected to.
func TestHostAppliesItsPolicy(t *testing.T) {
	var hits atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`[{"name":"secret"}]`))
	}))
	defer internal.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(internal.URL, "http://"))
	dns := fakedns.Start(t, map[string][]string{"gitea.evil.test": {"127.0.0.1"}, "k8s.evil.test": {"127.0.0.1"}})
	dir := t.TempDir()
	p, err := netpolicy.Options{Resolver: dns.Resolver(), ProviderHosts: []string{"gitea.evil.test:" + port}}.Policy(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(host.Options{Dir: dir, Policy: p, ClusterStore: host.FileClusterStore{Dir: filepath.Join(dir, "clusters")}})
	if err != nil {
		t.Fatal(err)
	}
	api := h.Handler()
	call := func(method, path, body string, hdr map[string]string) (int, string, string) {
		req := httptest.NewRequest(method, host.APIPrefix+path, strings.NewReader(body))
		req.Header.Set(wire.HeaderAccount, "acc-1")
		req.Header.Set(wire.HeaderRole, "admin")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		var e struct {
			Error struct{ Field, Message string }
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &e)
		return rec.Code, e.Error.Field, rec.Body.String()
	}
	tok := map[string]string{host.GitTokenHeader: "glpat-secret"}
	for _, base := range []string{internal.URL, "http://[::1]:" + port, "http://169.254.169.254", "http://gitea.evil.test:" + port, "https://evil.example"} {
		code, field, body := call("GET", "git/repositories?provider=gitea&baseURL="+base, "", tok)
		if code != http.StatusBadRequest || field != "baseURL" || strings.Contains(body, "secret") {
			t.Errorf("baseURL %s: %d %s %s", base, code, field, body)
		}
	}
	for _, server := range []string{"https://127.0.0.1:" + port, "https://[::1]:" + port, "https://169.254.169.254", "https://k8s.evil.test:" + port, "https://localhost:" + port} {
		body, _ := json.Marshal(appproxyv1.ClusterCredential{Name: "edge", Server: server, Token: "t"})
		code, field, out := call("POST", "clusters", string(body), nil)
		if code != http.StatusBadRequest || field != "server" {
			t.Errorf("server %s: %d %s %s", server, code, field, out)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the internal server got %d requests", n)
	}
	if err := p.CheckRepoURL("repoURL", internal.URL); !strings.Contains(err.Error(), "loopback") || errdefs.Field(err) != "repoURL" {
		t.Fatal(err)
	}
}
