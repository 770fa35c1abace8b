// Command bench measures the runtime tunnel against direct HTTP on loopback in one run and
// prints Markdown tables (kept in docs/tunnel.md):
//
//   - small GET: requests per second at concurrency 1 and 16, p50/p99 latency, and CPU per
//     request split between the parties;
//   - 1 MiB bodies downloaded and uploaded at concurrency 4: MiB/s and CPU per request;
//   - a killed runtime (its TCP connections reset): time until the control plane marks it
//     disconnected and answers 502; and a silent death (network blackholed), noticed by the
//     tunnel's keepalive ping.
//
// "direct" is a client talking HTTP/1.1 to the runtime's handler; "tunnel" is the same client
// talking to the control plane's /runtimes/{name}/… proxy, which forwards over the tunnel
// connections the runtime dialed. The load generator and the control plane run in this
// process, the runtime (its handler served both ways) in a child process, as in production;
// all share the machine's cores. Direct and tunnel are measured in alternating slices so that
// the machine's other load weighs on both alike; medians over the slices are reported.
//
// Usage: go run ./internal/tunnel/bench [-duration 6s] [-rounds 6] [-conns 2] [-only small|bodies|kill]
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/tunnel"
	"github.com/freshet-dev/freshet/internal/tunnel/client"
	"github.com/freshet-dev/freshet/internal/tunnel/wire"
)

const (
	runtimeName = "bench"
	token       = "bench-runtime-token"
	killedName  = "killed"
	killToken   = "killed-runtime-token"
	mib         = 1 << 20
)

func main() {
	duration := flag.Duration("duration", 6*time.Second, "measuring time per path per cell")
	conns := flag.Int("conns", client.DefaultConns, "tunnel connections of the runtime")
	kills := flag.Int("kills", 5, "killed-runtime trials")
	rounds := flag.Int("rounds", 6, "alternating direct/tunnel rounds per cell")
	silent := flag.Bool("silent", true, "also time a silent death (takes up to the ping interval plus timeout)")
	only := flag.String("only", "", "run one section: small, bodies or kill")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file (and the runtime process's to this file.runtime)")
	inProcess := flag.Bool("in-process", false, "run the runtime in this process instead of a child process")
	role := flag.String("role", "", "internal: \"runtime\" runs the runtime side for the parent")
	cpURL := flag.String("cp", "", "internal: the control plane URL, for -role runtime")
	flag.Parse()
	if *role == "runtime" {
		if *cpuprofile != "" {
			if f, err := os.Create(*cpuprofile); err == nil {
				pprof.StartCPUProfile(f)
				defer pprof.StopCPUProfile()
			}
		}
		if err := runRuntime(*cpURL, *conns); err != nil {
			fmt.Fprintln(os.Stderr, "bench runtime:", err)
			os.Exit(1)
		}
		return
	}
	if *cpuprofile != "" {
		runtimeProfile = *cpuprofile + ".runtime"
		f, err := os.Create(*cpuprofile)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if err := run(*duration, *conns, *kills, *rounds, *silent, *inProcess, *only); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// runtimeProfile is where the runtime process writes its CPU profile ("" for none): the
// -cpuprofile file with ".runtime" appended.
var runtimeProfile string

// handler is the runtime's app: a tiny answer, or n bytes, or it reads and counts a body.
func handler() http.Handler {
	blob := bytes.Repeat([]byte("freshet!"), mib/8)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/small":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("hello from the runtime\n"))
		case "/blob":
			w.Header().Set("Content-Length", strconv.Itoa(len(blob)))
			w.Write(blob)
		case "/upload":
			n, _ := io.Copy(io.Discard, r.Body)
			fmt.Fprintf(w, "%d\n", n)
		default:
			http.NotFound(w, r)
		}
	})
}

// cells can be run alone with -only, for profiling.
var cells = map[string]struct {
	path   string
	c      int
	upload bool
}{
	"direct1": {"/small", 1, false}, "tunnel1": {"/small", 1, false},
	"direct16": {"/small", 16, false}, "tunnel16": {"/small", 16, false},
	"directdown": {"/blob", 4, false}, "tunneldown": {"/blob", 4, false},
	"directup": {"/upload", 4, true}, "tunnelup": {"/upload", 4, true},
}

type env struct {
	runtimeCPU func() time.Duration // the runtime process's CPU time so far; nil in process
	direct     string               // base URL of the runtime's handler served directly
	tunnel     string               // base URL of the runtime through the control plane
	srv        *tunnel.Server
	cp         string // control plane base URL
	close      func()
}

func setup(conns int, inProcess bool) (*env, error) {
	srv, err := tunnel.NewServer(tunnel.Options{
		Authenticate: func(_ context.Context, tok string) (tunnel.Runtime, error) {
			switch tok {
			case token:
				return tunnel.Runtime{ID: "rt-1", AccountID: "acct-1", Name: runtimeName}, nil
			case killToken:
				return tunnel.Runtime{ID: "rt-2", AccountID: "acct-1", Name: killedName}, nil
			}
			return tunnel.Runtime{}, errors.New("bad token")
		},
		Authorize: func(*http.Request, tunnel.Runtime) error { return nil },
		Principal: func(*http.Request) (rbac.Principal, error) {
			return rbac.Principal{AccountID: "acct-1", UserID: "u-1", Email: "bench@example.com", Role: rbac.Admin}, nil
		},
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(wire.ConnectPath, srv.ConnectHandler())
	mux.Handle("/runtimes/", srv.ProxyHandler())
	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	csrv := &http.Server{Handler: httpx.WithRequestID(mux)}
	go csrv.Serve(cl)
	cp := "http://" + cl.Addr().String()
	e := &env{tunnel: cp + "/runtimes/" + runtimeName, srv: srv, cp: cp}

	var stop func()
	if inProcess {
		e.direct, stop, err = startRuntime(cp, conns)
	} else {
		e.direct, e.runtimeCPU, stop, err = spawnRuntime(cp, conns)
	}
	if err != nil {
		srv.Close()
		csrv.Close()
		return nil, err
	}
	e.close = func() {
		stop()
		srv.Close()
		csrv.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.Conns("rt-1") < conns && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if srv.Conns("rt-1") < conns {
		e.close()
		return nil, fmt.Errorf("the runtime did not open %d tunnel connections", conns)
	}
	return e, nil
}

// startRuntime is the runtime side: the handler served directly on loopback (the "direct"
// path) and through the tunnel.
func startRuntime(cp string, conns int) (direct string, stop func(), err error) {
	h := handler()
	dl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	dsrv := &http.Server{Handler: h}
	go dsrv.Serve(dl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{ServerURL: cp, Token: token, RuntimeName: runtimeName, Handler: h, Conns: conns})
	if err != nil {
		dsrv.Close()
		return "", nil, err
	}
	return "http://" + dl.Addr().String(), func() { c.Close(); dsrv.Close() }, nil
}

// runRuntime is the child process: it runs the runtime side until its stdin closes.
func runRuntime(cp string, conns int) error {
	direct, stop, err := startRuntime(cp, conns)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Printf("DIRECT %s\n", direct)
	io.Copy(io.Discard, os.Stdin)
	return nil
}

// spawnRuntime runs the runtime side in a child process, as in production, so that the CPU
// of each party can be told apart.
func spawnRuntime(cp string, conns int) (direct string, cpu func() time.Duration, stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, nil, err
	}
	args := []string{"-role", "runtime", "-cp", cp, "-conns", strconv.Itoa(conns)}
	if runtimeProfile != "" {
		args = append(args, "-cpuprofile", runtimeProfile)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, nil, err
	}
	stop = func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "DIRECT ")
	if err != nil || !ok {
		stop()
		return "", nil, nil, fmt.Errorf("runtime process: %q: %v", line, err)
	}
	pid := cmd.Process.Pid
	return addr, func() time.Duration { return procCPU(pid) }, stop, nil
}

// procCPU is the CPU time process pid used so far (from /proc, in clock ticks of 10 ms).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) start at state (field 3).
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

type result struct {
	cpu     time.Duration // this process's CPU time (user+system) while measuring
	rtCPU   time.Duration // the runtime process's, when it is one
	reqs    int64
	bytes   int64
	elapsed time.Duration
	lat     []time.Duration
	errs    int64
}

func (r result) rps() float64 { return float64(r.reqs) / r.elapsed.Seconds() }
func (r result) mibps() float64 {
	return float64(r.bytes) / mib / r.elapsed.Seconds()
}
func (r result) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	s := slices.Clone(r.lat)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p)]
}

// loader drives one kind of request at concurrency c over its own keep-alive connections.
type loader struct {
	rtCPU  func() time.Duration
	url    string
	c      int
	upload bool
	cl     *http.Client
	body   []byte
}

func newLoader(url string, c int, upload bool) *loader {
	tr := &http.Transport{MaxIdleConnsPerHost: c, MaxIdleConns: c, DisableCompression: true}
	l := &loader{url: url, c: c, upload: upload, cl: &http.Client{Transport: tr}}
	if upload {
		l.body = bytes.Repeat([]byte("u"), mib)
	}
	return l
}

func (l *loader) close() { l.cl.CloseIdleConnections() }

func (l *loader) do() (int64, error) {
	var req *http.Request
	if l.upload {
		req, _ = http.NewRequest(http.MethodPost, l.url, bytes.NewReader(l.body))
	} else {
		req, _ = http.NewRequest(http.MethodGet, l.url, nil)
	}
	resp, err := l.cl.Do(req)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return n, fmt.Errorf("status %s", resp.Status)
	}
	if l.upload {
		n = mib
	}
	return n, err
}

// run drives the load for d and reports what it achieved.
func (l *loader) run(d time.Duration, keepLat bool) result {
	var wg sync.WaitGroup
	var reqs, nbytes, errs atomic.Int64
	lats := make([][]time.Duration, l.c)
	cpu0 := cpuTime()
	var rt0 time.Duration
	if l.rtCPU != nil {
		rt0 = l.rtCPU()
	}
	start := time.Now()
	end := start.Add(d)
	for i := range l.c {
		wg.Go(func() {
			for {
				t0 := time.Now()
				if !t0.Before(end) {
					return
				}
				n, err := l.do()
				if err != nil {
					errs.Add(1)
					continue
				}
				if keepLat {
					lats[i] = append(lats[i], time.Since(t0))
				}
				reqs.Add(1)
				nbytes.Add(n)
			}
		})
	}
	wg.Wait()
	r := result{reqs: reqs.Load(), bytes: nbytes.Load(), elapsed: time.Since(start), errs: errs.Load(), cpu: cpuTime() - cpu0}
	if l.rtCPU != nil {
		r.rtCPU = l.rtCPU() - rt0
	}
	for _, x := range lats {
		r.lat = append(r.lat, x...)
	}
	return r
}

// compare measures direct and tunnel in alternating slices (the order flips each round), so
// that the machine's other load, which drifts, weighs on both alike.
func compare(e *env, path string, c int, upload bool, d time.Duration, rounds int) (direct, tunnel []result) {
	ld, lt := newLoader(e.direct+path, c, upload), newLoader(e.tunnel+path, c, upload)
	ld.rtCPU, lt.rtCPU = e.runtimeCPU, e.runtimeCPU
	defer ld.close()
	defer lt.close()
	ld.run(d/4, false) // warm up connections and buffers
	lt.run(d/4, false)
	slice := d / time.Duration(rounds)
	for i := range rounds {
		if i%2 == 0 {
			direct = append(direct, ld.run(slice, true))
			tunnel = append(tunnel, lt.run(slice, true))
		} else {
			tunnel = append(tunnel, lt.run(slice, true))
			direct = append(direct, ld.run(slice, true))
		}
	}
	return direct, tunnel
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// stat is the median over rounds of f.
func stat(rs []result, f func(result) float64) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return median(xs)
}

// ratio is the median over rounds of tunnel/direct for f.
func ratio(direct, tunnel []result, f func(result) float64) float64 {
	xs := make([]float64, len(direct))
	for i := range direct {
		xs[i] = f(tunnel[i]) / f(direct[i])
	}
	return median(xs)
}

func errCount(rs []result) (n int64) {
	for _, r := range rs {
		n += r.errs
	}
	return n
}

// cpuTime is the CPU time this process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuPerReq is the CPU time one request cost, all parties included.
func (r result) cpuPerReq() time.Duration {
	if r.reqs == 0 {
		return 0
	}
	return (r.cpu + r.rtCPU) / time.Duration(r.reqs)
}

// localCPUPerReq is this process's part: the load generator, and the control plane for the
// tunnel.
func (r result) localCPUPerReq() time.Duration {
	if r.reqs == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.reqs)
}

// runtimeCPUPerReq is the runtime process's part: its HTTP/1.1 server (direct) or its end of
// the tunnel, and the handler.
func (r result) runtimeCPUPerReq() time.Duration {
	if r.reqs == 0 {
		return 0
	}
	return r.rtCPU / time.Duration(r.reqs)
}

func usec(d time.Duration) string {
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

func run(d time.Duration, conns, kills, rounds int, silent, inProcess bool, only string) error {
	fmt.Printf("# Tunnel benchmark\n\n%s, %d CPUs (GOMAXPROCS %d), %s; tunnel connections per runtime: %d; %s per path per cell in %d alternating rounds\n\n",
		time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), conns, d, rounds)
	e, err := setup(conns, inProcess)
	if err != nil {
		return err
	}
	defer e.close()

	if cell, ok := cells[only]; ok { // one cell, for profiling
		base := e.tunnel
		if strings.HasPrefix(only, "direct") {
			base = e.direct
		}
		l := newLoader(base+cell.path, cell.c, cell.upload)
		l.rtCPU = e.runtimeCPU
		defer l.close()
		l.run(d/4, false)
		r := l.run(d, false)
		fmt.Printf("%s: %.0f req/s, %.0f MiB/s, CPU/req %s (this process %s, runtime %s), %d errors\n", only, r.rps(), r.mibps(), r.cpuPerReq(), r.localCPUPerReq(), r.runtimeCPUPerReq(), r.errs)
		return nil
	}
	rps := func(r result) float64 { return r.rps() }
	mibps := func(r result) float64 { return r.mibps() }
	cpu := func(r result) float64 { return float64(r.cpuPerReq()) }
	p50 := func(r result) float64 { return float64(r.pct(0.5)) }
	p99 := func(r result) float64 { return float64(r.pct(0.99)) }
	dur := func(f float64) time.Duration { return time.Duration(f) }

	if only == "" || only == "small" || only == "bodies" {
		fmt.Println("| measure | direct | tunnel | tunnel vs direct | target |")
		fmt.Println("|---|---|---|---|---|")
	}
	if only == "" || only == "small" {
		d1, t1 := compare(e, "/small", 1, false, d, rounds)
		d16, t16 := compare(e, "/small", 16, false, d, rounds)
		fmt.Printf("| small GET, c=1: req/s | %.0f | %.0f | %.0f%% | |\n", stat(d1, rps), stat(t1, rps), 100*ratio(d1, t1, rps))
		added := stat(t1, p50) - stat(d1, p50)
		fmt.Printf("| small GET, c=1: p50 latency | %s | %s | %+.3f ms | ≤ +0.2 ms %s |\n", ms(dur(stat(d1, p50))), ms(dur(stat(t1, p50))), added/1e6, verdict(added <= 0.2e6))
		fmt.Printf("| small GET, c=1: p99 latency | %s | %s | %+.3f ms | |\n", ms(dur(stat(d1, p99))), ms(dur(stat(t1, p99))), (stat(t1, p99)-stat(d1, p99))/1e6)
		r16 := ratio(d16, t16, rps)
		fmt.Printf("| small GET, c=16: req/s | %.0f | %.0f | %.0f%% | ≥ 50%% %s |\n", stat(d16, rps), stat(t16, rps), 100*r16, verdict(r16 >= 0.5))
		fmt.Printf("| small GET, c=16: p50 latency | %s | %s | %+.3f ms | |\n", ms(dur(stat(d16, p50))), ms(dur(stat(t16, p50))), (stat(t16, p50)-stat(d16, p50))/1e6)
		fmt.Printf("| small GET, c=16: CPU per request, all parties | %s | %s | ×%.1f | |\n", usec(dur(stat(d16, cpu))), usec(dur(stat(t16, cpu))), ratio(d16, t16, cpu))
		if e.runtimeCPU != nil {
			local := func(r result) float64 { return float64(r.localCPUPerReq()) }
			rtc := func(r result) float64 { return float64(r.runtimeCPUPerReq()) }
			fmt.Printf("| … of which load generator (+ control plane for the tunnel) | %s | %s | | |\n", usec(dur(stat(d16, local))), usec(dur(stat(t16, local))))
			fmt.Printf("| … of which runtime process (HTTP/1.1 direct, tunnel protocol) | %s | %s | | |\n", usec(dur(stat(d16, rtc))), usec(dur(stat(t16, rtc))))
		}
		if n := errCount(d1) + errCount(t1) + errCount(d16) + errCount(t16); n > 0 {
			fmt.Printf("| errors | | %d | | |\n", n)
		}
	}
	if only == "" || only == "bodies" {
		dd, td := compare(e, "/blob", 4, false, d, rounds)
		du, tu := compare(e, "/upload", 4, true, d, rounds)
		fmt.Printf("| 1 MiB download, c=4: MiB/s | %.0f | %.0f | %.0f%% | |\n", stat(dd, mibps), stat(td, mibps), 100*ratio(dd, td, mibps))
		fmt.Printf("| 1 MiB upload, c=4: MiB/s | %.0f | %.0f | %.0f%% | |\n", stat(du, mibps), stat(tu, mibps), 100*ratio(du, tu, mibps))
		fmt.Printf("| 1 MiB download, c=4: CPU per request | %s | %s | ×%.1f | |\n", usec(dur(stat(dd, cpu))), usec(dur(stat(td, cpu))), ratio(dd, td, cpu))
		fmt.Printf("| 1 MiB upload, c=4: CPU per request | %s | %s | ×%.1f | |\n", usec(dur(stat(du, cpu))), usec(dur(stat(tu, cpu))), ratio(du, tu, cpu))
		if n := errCount(dd) + errCount(td) + errCount(du) + errCount(tu); n > 0 {
			fmt.Printf("| errors | | %d | | |\n", n)
		}
	}
	fmt.Println()
	if only == "" || only == "kill" {
		if err := killTrials(e, conns, kills, silent); err != nil {
			return err
		}
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "✓"
	}
	return "✗"
}

// killTrials connects a second runtime, resets its TCP connections (as a killed process's
// kernel does) and times how long the control plane takes to notice.
func killTrials(e *env, conns, n int, silent bool) error {
	var toRegistry, to502 []time.Duration
	for range n {
		var mu sync.Mutex
		var raw []*net.TCPConn
		var blocked atomic.Bool
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			if blocked.Load() {
				return nil, errors.New("killed")
			}
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				mu.Lock()
				raw = append(raw, c.(*net.TCPConn))
				mu.Unlock()
			}
			return c, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := client.Dial(ctx, client.Options{ServerURL: e.cp, Token: killToken, Handler: handler(), Conns: conns, DialContext: dial, MinBackoff: time.Hour, MaxBackoff: time.Hour})
		if err != nil {
			cancel()
			return err
		}
		for e.srv.Conns("rt-2") < conns && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		killed := e.cp + "/runtimes/" + killedName + "/small"
		resp, err := http.Get(killed)
		if err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("kill trial: tunnel not serving before the kill: %v", err)
		}
		resp.Body.Close()

		blocked.Store(true)
		t0 := time.Now()
		mu.Lock()
		for _, tc := range raw {
			tc.SetLinger(0) // RST, as when the process dies
			tc.Close()
		}
		mu.Unlock()
		var reg time.Duration
		for deadline := t0.Add(5 * time.Second); time.Now().Before(deadline); {
			if e.srv.Conns("rt-2") == 0 {
				reg = time.Since(t0)
				break
			}
			time.Sleep(20 * time.Microsecond)
		}
		// What a user sees right after: the request is answered 502 at once.
		t1 := time.Now()
		resp, err = http.Get(killed)
		if err != nil {
			c.Close()
			return fmt.Errorf("kill trial: request after the kill: %w", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got := time.Since(t1)
		c.Close()
		if reg == 0 || resp.StatusCode != http.StatusBadGateway {
			return fmt.Errorf("kill trial: the control plane did not notice within 5 s (status after: %s)", resp.Status)
		}
		toRegistry = append(toRegistry, reg)
		to502 = append(to502, got)
	}
	slices.Sort(toRegistry)
	slices.Sort(to502)
	fmt.Println("| killed runtime (TCP reset), trials | kill → marked disconnected, p50 / max | next request → 502 answer, p50 / max |")
	fmt.Println("|---|---|---|")
	fmt.Printf("| %d | %s / %s | %s / %s |\n", n, ms(toRegistry[len(toRegistry)/2]), ms(toRegistry[len(toRegistry)-1]), ms(to502[len(to502)/2]), ms(to502[len(to502)-1]))
	if !silent {
		fmt.Println()
		return nil
	}
	d, err := silentTrial(e)
	if err != nil {
		return err
	}
	fmt.Printf("| silent death (network blackholed, no reset), 1 trial | %.1f s | (requests wait for the ping, then 502) |\n\n", d.Seconds())
	fmt.Printf("A silent death is noticed by the keepalive ping: after %s without a frame, then %s without an answer (at most %s).\n",
		wire.PingInterval, wire.PingTimeout, wire.PingInterval+wire.PingTimeout)
	return nil
}

// silentTrial connects a runtime whose network then drops everything (no FIN, no RST: a
// pulled cable or a frozen VM) and times how long the control plane takes to notice.
func silentTrial(e *env) (time.Duration, error) {
	var mu sync.Mutex
	var held []*blackhole
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		b := &blackhole{Conn: c, gone: make(chan struct{})}
		mu.Lock()
		held = append(held, b)
		mu.Unlock()
		return b, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{ServerURL: e.cp, Token: killToken, Handler: handler(), Conns: 1, DialContext: dial, MinBackoff: time.Hour, MaxBackoff: time.Hour})
	if err != nil {
		return 0, err
	}
	for e.srv.Conns("rt-2") < 1 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	t0 := time.Now()
	for _, b := range held {
		b.freeze()
	}
	mu.Unlock()
	var d time.Duration
	limit := 2 * (wire.PingInterval + wire.PingTimeout)
	for time.Since(t0) < limit {
		if e.srv.Conns("rt-2") == 0 {
			d = time.Since(t0)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Close()
	mu.Lock()
	for _, b := range held {
		b.Conn.Close()
	}
	mu.Unlock()
	if d == 0 {
		return 0, fmt.Errorf("silent trial: not noticed within %s", limit)
	}
	return d, nil
}

// blackhole is a connection whose network can be made to drop everything silently.
type blackhole struct {
	net.Conn
	frozen    atomic.Bool
	gone      chan struct{}
	closeOnce sync.Once
}

func (b *blackhole) freeze() { b.frozen.Store(true) }

func (b *blackhole) Read(p []byte) (int, error) {
	if b.frozen.Load() {
		<-b.gone
		return 0, net.ErrClosed
	}
	n, err := b.Conn.Read(p)
	if b.frozen.Load() { // arrived after the freeze: lost
		<-b.gone
		return 0, net.ErrClosed
	}
	return n, err
}

func (b *blackhole) Write(p []byte) (int, error) {
	if b.frozen.Load() {
		return len(p), nil // into the void
	}
	return b.Conn.Write(p)
}

// Close does not close the socket: the peer must not see a FIN.
func (b *blackhole) Close() error {
	b.closeOnce.Do(func() { close(b.gone) })
	return nil
}
