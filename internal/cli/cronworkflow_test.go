package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/freshet-dev/freshet/api/appproxyv1"
)

// `freshet cron-workflow update -f FILE` against a hand-written app-proxy (the real one runs in
// internal/e2e's TestCronWorkflowCommands, with a cluster): it PUTs the manifest to the
// CronWorkflow the manifest names, in -n, else the manifest's namespace, else the one found by
// name; the server's refusal is printed naming the field; a manifest without a name or no -f
// is a usage error before any request.
func TestCronWorkflowUpdate(t *testing.T) {
	type call struct{ method, path, body string }
	var mu sync.Mutex
	var calls []call
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, call{r.Method, r.URL.Path, string(b)})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		const prefix = "/runtimes/local/app-proxy/api/v1/cron-workflows"
		switch {
		case r.Method == http.MethodGet && r.URL.Path == prefix:
			_ = json.NewEncoder(w).Encode(appproxyv1.List[appproxyv1.CronWorkflow]{Items: []appproxyv1.CronWorkflow{{Name: "nightly", Namespace: "ci"}}})
		case r.Method == http.MethodPut && strings.Contains(string(b), "cronworkflow.succeded"):
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"code":"invalid","message":"invalid spec: spec.when: \"cronworkflow.succeded < 1\" names cronworkflow.succeded, which is not a variable here"}}`)
		case r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, prefix+"/"):
			parts := strings.Split(strings.TrimPrefix(r.URL.Path, prefix+"/"), "/")
			_ = json.NewEncoder(w).Encode(appproxyv1.CronWorkflow{Namespace: parts[0], Name: parts[1], Schedules: []string{"30 4 * * *"}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const manifest = "apiVersion: argoproj.io/v1alpha1\nkind: CronWorkflow\nmetadata: {name: nightly%s}\nspec:\n  schedule: '30 4 * * *'\n  when: 'cronworkflow.succeeded < 1'\n  workflowSpec: {entrypoint: a, templates: [{name: a, suspend: {}}]}\n"
	bare := write("bare.yaml", strings.Replace(manifest, "%s", "", 1))
	inNS := write("ns.yaml", strings.Replace(manifest, "%s", ", namespace: prod", 1))
	last := func() call {
		mu.Lock()
		defer mu.Unlock()
		if len(calls) == 0 {
			return call{}
		}
		return calls[len(calls)-1]
	}

	for _, tc := range []struct {
		args []string
		path string
	}{
		{[]string{"-f", bare, "-n", "staging"}, "/runtimes/local/app-proxy/api/v1/cron-workflows/staging/nightly"},
		{[]string{"-f", inNS}, "/runtimes/local/app-proxy/api/v1/cron-workflows/prod/nightly"},
		{[]string{"-f", bare}, "/runtimes/local/app-proxy/api/v1/cron-workflows/ci/nightly"}, // found by name
	} {
		code, out, errs := runApp(t, srv.URL, "", append([]string{"cron-workflow", "update"}, tc.args...)...)
		c := last()
		if code != 0 || c.method != http.MethodPut || c.path != tc.path || !strings.Contains(out, "updated.") {
			t.Fatalf("update %v: exit %d %q %q; last call %+v", tc.args, code, out, errs, c)
		}
		var req appproxyv1.CronWorkflowCreateRequest
		if err := json.Unmarshal([]byte(c.body), &req); err != nil || !strings.Contains(string(req.CronWorkflow), `"when":"cronworkflow.succeeded \u003c 1"`) && !strings.Contains(string(req.CronWorkflow), `"when":"cronworkflow.succeeded < 1"`) {
			t.Fatalf("update %v sent %s (%v)", tc.args, c.body, err)
		}
	}
	if code, out, _ := runApp(t, srv.URL, "", "cron", "update", "-f", bare, "-n", "ci", "-o", "json"); code != 0 || !strings.Contains(out, `"30 4 * * *"`) {
		t.Fatalf("update -o json: %d %s", code, out)
	}

	bad := write("bad.yaml", strings.Replace(strings.Replace(manifest, "%s", "", 1), "succeeded", "succeded", 1))
	if code, _, errs := runApp(t, srv.URL, "", "cron", "update", "-f", bad, "-n", "ci"); code != 1 || !strings.Contains(errs, "spec.when") {
		t.Fatalf("a refused update: exit %d %q", code, errs)
	}
	mu.Lock()
	n := len(calls)
	mu.Unlock()
	noName := write("noname.yaml", "apiVersion: argoproj.io/v1alpha1\nkind: CronWorkflow\nspec: {schedule: '@daily'}\n")
	if code, _, errs := runApp(t, srv.URL, "", "cron", "update", "-f", noName); code == 0 || !strings.Contains(errs, "metadata.name") {
		t.Fatalf("a manifest without a name: exit %d %q", code, errs)
	}
	if code, _, errs := runApp(t, srv.URL, "", "cron", "update"); code == 0 || !strings.Contains(errs, "-f FILE") {
		t.Fatalf("no -f: exit %d %q", code, errs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != n {
		t.Fatalf("usage errors made requests: %+v", calls[n:])
	}
}
