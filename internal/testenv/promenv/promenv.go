// Package promenv gives Go tests a real Prometheus (Debian's `prometheus` package) on loopback,
// scraping an HTTP metrics endpoint the test serves and sets: analysis that reads Prometheus can
// be made to pass and to fail.
//
//	target := promenv.NewTarget(t)                 // serves /metrics in the text format
//	target.Set(`success_rate{app="web"}`, 0.99)
//	prom := promenv.Start(t, target)               // scrapes it every 100 ms; basic auth
//	prom.WaitFor(t, `success_rate{app="web"}`, 0.99)
//
// Environment: without the prometheus binary the test skips with how to install it (`make
// containers-deps`), unless CI=true or FRESHET_TEST_PROMETHEUS=1, when it fails instead.
package promenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/freshet-dev/freshet/internal/testenv/proc"
)

// Binary is where Debian's package puts Prometheus.
const Binary = "/usr/bin/prometheus"

// ScrapeInterval is how often the instance scrapes its target.
const ScrapeInterval = 100 * time.Millisecond

// Target is an HTTP endpoint serving metrics in Prometheus' text format; the test sets them.
type Target struct {
	URL  string // http://127.0.0.1:PORT
	mu   sync.Mutex
	vals map[string]float64
}

// NewTarget serves /metrics until the test ends.
func NewTarget(t testing.TB) *Target {
	tg := &Target{vals: map[string]float64{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg.mu.Lock()
		defer tg.mu.Unlock()
		keys := make([]string, 0, len(tg.vals))
		for k := range tg.vals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		for _, k := range keys {
			fmt.Fprintf(w, "%s %s\n", k, strconv.FormatFloat(tg.vals[k], 'g', -1, 64))
		}
	}))
	t.Cleanup(srv.Close)
	tg.URL = srv.URL
	return tg
}

// Set sets a series (name{labels}) to v.
func (tg *Target) Set(series string, v float64) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	tg.vals[series] = v
}

// Instance is a running Prometheus.
type Instance struct {
	URL      string // http://127.0.0.1:PORT
	User     string
	Password string
}

// Start runs Prometheus on a free port of 127.0.0.1 with basic auth (User, Password) on its
// API, scraping target every ScrapeInterval, until the test ends.
func Start(t testing.TB, target *Target) *Instance {
	t.Helper()
	if _, err := os.Stat(Binary); err != nil {
		msg := fmt.Sprintf("%s is absent: install Debian's prometheus package with `make containers-deps` (apt-get, as root)", Binary)
		if os.Getenv("CI") == "true" || os.Getenv("FRESHET_TEST_PROMETHEUS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	in := &Instance{User: "analysis", Password: "s3cret-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)}
	hash, err := bcrypt.GenerateFromPassword([]byte(in.Password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(target.URL)
	cfg := fmt.Sprintf(`global: {scrape_interval: %s, scrape_timeout: %s, evaluation_interval: 1s}
scrape_configs:
- job_name: test
  static_configs: [{targets: [%q]}]
`, ScrapeInterval, ScrapeInterval, u.Host)
	web := fmt.Sprintf("basic_auth_users:\n  %s: %q\n", in.User, hash)
	for name, body := range map[string]string{"prometheus.yml": cfg, "web.yml": web} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	port := proc.FreePort(t)
	in.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, Binary,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--web.config.file="+filepath.Join(dir, "web.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+fmt.Sprintf("127.0.0.1:%d", port),
		"--log.level=warn")
	var out proc.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, in.URL+"/-/ready", nil)
		req.SetBasicAuth(in.User, in.Password)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-done:
			t.Fatalf("prometheus exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after 30s: %v; output: %s", err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return in
}

// Query runs an instant query and returns the first sample's value (false: no sample).
func (in *Instance) Query(t testing.TB, query string) (float64, bool) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, in.URL+"/api/v1/query?"+url.Values{"query": {query}}.Encode(), nil)
	req.SetBasicAuth(in.User, in.Password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Data struct {
			Result []struct {
				Value []any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Data.Result) == 0 || len(doc.Data.Result[0].Value) != 2 {
		return 0, false
	}
	s, _ := doc.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

// WaitFor waits until query's first sample is want (the target scraped since it was set).
func (in *Instance) WaitFor(t testing.TB, query string, want float64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var got float64
	var ok bool
	for time.Now().Before(deadline) {
		if got, ok = in.Query(t, query); ok && got == want {
			return
		}
		time.Sleep(ScrapeInterval / 2)
	}
	t.Fatalf("prometheus: %s = %v (present %v) after 20s, want %v", query, got, ok, want)
}
