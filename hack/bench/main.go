// Command bench measures Freshet the way an operator would see it and prints Markdown tables
// (copied into docs/benchmarks.md):
//
//   - `freshet up`: time from exec to a ready /readyz on a new and on an existing data dir, and
//     idle RSS after start-up;
//   - GET /api/v1/users and the GraphQL users query with 1,000 users, p50/p99 at concurrency 1
//     and 32, on SQLite and (when FRESHET_TEST_POSTGRES or FRESHET_BENCH_POSTGRES holds a DSN)
//     PostgreSQL, against a real `freshet server` process.
//
// Usage: go run ./hack/bench --binary bin/freshet
package main

import (
	"bytes"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/identity"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
)

const adminPassword = "bench-admin-password"

func main() {
	binary := flag.String("binary", "bin/freshet", "freshet binary to measure")
	runs := flag.Int("startup-runs", 5, "start-ups to time")
	requests := flag.Int("requests", 2000, "requests per latency cell")
	users := flag.Int("users", 1000, "users to seed")
	pickups := flag.Int("pickups", 200, "builds timed for pickup latency (streamed)")
	baseline := flag.Int("baseline-pickups", 20, "builds timed for the 3 s polling baseline")
	only := flag.String("only", "", "run one section: startup, api, ci, analytics or replay (analytics and replay run only when named)")
	var ao analyticsOptions
	flag.IntVar(&ao.deployments, "analytics-deployments", 1000000, "deployment records to load for the DORA queries")
	flag.IntVar(&ao.apps, "analytics-apps", 10000, "applications the deployment records belong to")
	flag.IntVar(&ao.queries, "analytics-queries", 100, "DORA reports timed per case")
	flag.IntVar(&ao.events, "analytics-events", 300, "finished syncs timed from report to visible")
	flag.IntVar(&ao.productApps, "analytics-product-apps", 200, "applications of the product whose DORA report is timed (its applications as one set)")
	flag.StringVar(&ao.reusePostgres, "analytics-reuse-postgres", "", "time the PostgreSQL schema an earlier run kept (FRESHET_BENCH_KEEP=1) instead of loading one")
	flag.StringVar(&ao.reuseSQLite, "analytics-reuse-sqlite", "", "time the SQLite file an earlier run kept (FRESHET_BENCH_KEEP=1) instead of loading one")
	flag.StringVar(&ao.backends, "analytics-backends", "", "only these backends, comma-separated (sqlite, postgres); default every one available")
	var ro replayOptions
	flag.IntVar(&ro.syncs, "replay-syncs", 1000000, "recorded syncs the replay section derives again")
	flag.IntVar(&ro.apps, "replay-apps", 10000, "applications the recorded syncs belong to")
	flag.StringVar(&ro.backends, "replay-backends", "", "only these backends, comma-separated (sqlite, postgres); default every one available")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *only == "replay" {
		if err := replayBench(benchPostgres(), ro); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *only == "analytics" {
		if err := analyticsBench(benchPostgres(), ao); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*binary, *runs, *requests, *users, *pickups, *baseline, *only); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(binary string, runs, requests, users, pickups, baseline int, only string) error {
	bin, err := filepath.Abs(binary)
	if err != nil {
		return err
	}
	fmt.Printf("# Freshet benchmarks\n\n%s, %d CPUs; %s\n\n", time.Now().UTC().Format(time.RFC3339), numCPU(), strings.TrimSpace(mustOut(bin, "version")))
	if only == "" || only == "startup" {
		if err := startup(bin, runs); err != nil {
			return err
		}
	}
	if only == "" || only == "ci" {
		if err := ciBench(bin, pickups, baseline); err != nil {
			return fmt.Errorf("ci: %w", err)
		}
	}
	if only != "" && only != "api" {
		return nil
	}
	backends := []string{"sqlite"}
	pg := os.Getenv("FRESHET_BENCH_POSTGRES")
	if pg == "" {
		pg = os.Getenv("FRESHET_TEST_POSTGRES")
	}
	if pg != "" {
		backends = append(backends, "postgres")
	}
	fmt.Printf("## API latency with %d users (%d requests per cell)\n\n", users, requests)
	fmt.Println("| backend | query | concurrency | p50 | p99 | req/s |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, b := range backends {
		if err := apiLatency(bin, b, pg, requests, users); err != nil {
			return fmt.Errorf("%s: %w", b, err)
		}
	}
	fmt.Println()
	return nil
}

func startup(bin string, runs int) error {
	fmt.Printf("## `freshet up` start-up (%d runs)\n\n", runs)
	fmt.Println("| case | min | median | max | idle RSS after start |")
	fmt.Println("|---|---|---|---|---|")
	for _, fresh := range []bool{true, false} {
		dir, err := os.MkdirTemp("", "freshet-bench-up")
		if err != nil {
			return err
		}
		var times []time.Duration
		var rss string
		if !fresh { // one start to create the data
			if _, _, err := upOnce(bin, dir, false); err != nil {
				return err
			}
		}
		for i := range runs {
			if fresh && i > 0 {
				os.RemoveAll(dir)
			}
			d, r, err := upOnce(bin, dir, i == runs-1)
			if err != nil {
				return err
			}
			times = append(times, d)
			if r != "" {
				rss = r
			}
		}
		os.RemoveAll(dir)
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		name := "existing data dir"
		if fresh {
			name = "new data dir (migrations, first admin)"
		}
		fmt.Printf("| %s | %s | %s | %s | %s |\n", name, ms(times[0]), ms(times[len(times)/2]), ms(times[len(times)-1]), rss)
	}
	fmt.Println()
	return nil
}

// upOnce starts `freshet up`, times it to a 200 from /readyz, optionally waits for it to idle
// and reads its RSS, and stops it.
func upOnce(bin, dir string, measureRSS bool) (time.Duration, string, error) {
	port := freePort()
	cmd := exec.Command(bin, "up", "--data-dir", dir, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--log-level", "warn")
	cmd.Env = append(os.Environ(), "FRESHET_ADMIN_PASSWORD="+adminPassword)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, "", err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	u := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	c := &http.Client{Timeout: time.Second}
	for {
		if resp, err := c.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Since(start) > 30*time.Second {
			return 0, "", fmt.Errorf("freshet up not ready in 30s: %s", stderr.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
	d := time.Since(start)
	rss := ""
	if measureRSS {
		time.Sleep(3 * time.Second)
		rss = readRSS(cmd.Process.Pid)
	}
	return d, rss, nil
}

func readRSS(pid int) string {
	b := rssBytes(strconv.Itoa(pid))
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// rssBytes is the resident set size of process proc ("self" or a PID), 0 where unknown.
func rssBytes(proc string) uint64 {
	b, err := os.ReadFile("/proc/" + proc + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func apiLatency(bin, backend, pgBase string, requests, users int) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "freshet-bench-api")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dsn := filepath.Join(dir, "freshet.db")
	if backend == "postgres" {
		schema := fmt.Sprintf("bench_%d", time.Now().UnixNano())
		admin, err := sql.Open("pgx", pgBase)
		if err != nil {
			return err
		}
		defer admin.Close()
		if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
			return err
		}
		defer admin.Exec("DROP SCHEMA " + schema + " CASCADE")
		u, _ := url.Parse(pgBase)
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		dsn = u.String()
	}
	if err := seed(ctx, dsn, users); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	port := freePort()
	args := []string{"server", "--data-dir", dir, "--db", dsn, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--log-level", "warn"}
	if backend == "postgres" { // a shared database wants keys every replica has: give one
		keys := filepath.Join(dir, "master.key")
		if out, err := exec.Command(bin, "master-key", "generate", keys).CombinedOutput(); err != nil {
			return fmt.Errorf("master-key generate: %v: %s", err, out)
		}
		args = append(args, "--master-key-file", keys)
	}
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for client.New(base).Health(ctx) != nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("server not ready: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	login, err := client.New(base).Login(ctx, client.LoginRequest{Email: "admin@bench.test", Password: adminPassword})
	if err != nil {
		return err
	}
	key, err := client.New(base, client.WithToken(login.Token)).CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "bench"})
	if err != nil {
		return err
	}
	gql := func(first int) func() (*http.Request, error) {
		body := fmt.Sprintf(`{"query":"{ users(first: %d) { nodes { id email name role createdAt } pageInfo { endCursor hasNextPage } } }"}`, first)
		return func() (*http.Request, error) {
			r, err := http.NewRequest("POST", base+"/api/graphql", strings.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			return r, err
		}
	}
	get := func(path string) func() (*http.Request, error) {
		return func() (*http.Request, error) { return http.NewRequest("GET", base+path, nil) }
	}
	cells := []struct {
		name string
		req  func() (*http.Request, error)
	}{
		{"GET /api/v1/users (page of 100)", get("/api/v1/users")},
		{"GET /api/v1/users?limit=1000", get("/api/v1/users?limit=1000")},
		{"GraphQL users(first: 100)", gql(100)},
		{"GraphQL users(first: 1000)", gql(1000)},
	}
	for _, c := range cells {
		for _, conc := range []int{1, 32} {
			res, err := load(key.Token, c.req, conc, requests)
			if err != nil {
				return fmt.Errorf("%s c=%d: %w", c.name, conc, err)
			}
			fmt.Printf("| %s | %s | %d | %s | %s | %.0f |\n", backend, c.name, conc, ms(res.p50), ms(res.p99), res.rps)
		}
	}
	return nil
}

// seed provisions the account and admin, then inserts users-1 more members in one transaction
// with one shared password hash (hashing 1,000 passwords would measure argon2, not the API).
func seed(ctx context.Context, dsn string, users int) error {
	db, err := store.Open(ctx, dsn, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	id := identity.New(identity.Deps{Store: db})
	res, err := id.Provision(ctx, "bench", "admin@bench.test", adminPassword)
	if err != nil {
		return err
	}
	hash, err := identity.HashPassword("bench-user-password")
	if err != nil {
		return err
	}
	return db.Tx(ctx, func(tx *store.Tx) error {
		now := time.Now()
		for i := 1; i < users; i++ {
			u := store.User{ID: store.NewID(store.PrefixUser), Email: fmt.Sprintf("user%04d@bench.test", i), Name: fmt.Sprintf("User %d", i), PasswordHash: hash, CreatedAt: now}
			if err := tx.CreateUser(ctx, u); err != nil {
				return err
			}
			if err := tx.AddMember(ctx, res.Account.ID, u.ID, string(rbac.Viewer), now); err != nil {
				return err
			}
		}
		return nil
	})
}

type result struct {
	p50, p99 time.Duration
	rps      float64
}

func load(token string, newReq func() (*http.Request, error), conc, total int) (result, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: conc, MaxConnsPerHost: conc}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	do := func() (time.Duration, error) {
		r, err := newReq()
		if err != nil {
			return 0, err
		}
		r.Header.Set("Authorization", "Bearer "+token)
		t0 := time.Now()
		resp, err := hc.Do(r)
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		if resp.StatusCode != 200 {
			return 0, fmt.Errorf("status %d", resp.StatusCode)
		}
		return d, err
	}
	for range 50 { // warm up connections and caches
		if _, err := do(); err != nil {
			return result{}, err
		}
	}
	lat := make([]time.Duration, 0, total)
	var mu sync.Mutex
	var firstErr error
	jobs := make(chan struct{}, total)
	for range total {
		jobs <- struct{}{}
	}
	close(jobs)
	start := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				d, err := do()
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return result{}, firstErr
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return result{p50: lat[len(lat)/2], p99: lat[len(lat)*99/100], rps: float64(total) / elapsed.Seconds()}, nil
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func mustOut(bin string, args ...string) string {
	out, _ := exec.Command(bin, args...).Output()
	return string(out)
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}

// benchPostgres is the PostgreSQL DSN the analytics sections use: FRESHET_BENCH_POSTGRES, else
// FRESHET_TEST_POSTGRES; empty for none.
func benchPostgres() string {
	if pg := os.Getenv("FRESHET_BENCH_POSTGRES"); pg != "" {
		return pg
	}
	return os.Getenv("FRESHET_TEST_POSTGRES")
}
