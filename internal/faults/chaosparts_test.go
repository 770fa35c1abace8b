package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	testproc "github.com/freshet-dev/freshet/internal/testenv/proc"
)

// The parts `make chaos` puts around the control plane: a NATS cluster of real nats-server
// processes, TCP proxies it can freeze or cut (in front of PostgreSQL, and between the runtime
// and the control plane), and a load balancer in front of the replicas.

// natsNode is one nats-server process of a cluster; it can be killed and started again on the
// same ports and store.
type natsNode struct {
	t    *testing.T
	name string
	args []string
	url  string
	proc *proc
}

// natsCluster starts n nats-server processes (the binary at bin) clustered on loopback with
// JetStream, and waits until JetStream answers on each. It returns the nodes; their client URLs
// joined by commas are what `freshet server --nats` takes.
func natsCluster(t *testing.T, bin string, n int) []*natsNode {
	t.Helper()
	clients, routes := make([]int, n), make([]string, n)
	taken := map[int]bool{}
	for i := range n {
		clients[i] = stablePort(t, taken)
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", stablePort(t, taken))
	}
	nodes := make([]*natsNode, n)
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		nodes[i] = &natsNode{t: t, name: name, url: fmt.Sprintf("nats://127.0.0.1:%d", clients[i]),
			args: []string{"-a", "127.0.0.1", "-p", strconv.Itoa(clients[i]), "-n", name, "-js", "-sd", t.TempDir(),
				"--cluster_name", "chaos", "--cluster", routes[i], "--routes", strings.Join(routes, ",")}}
		nodes[i].args = append([]string{bin}, nodes[i].args...)
		nodes[i].start()
	}
	for _, nd := range nodes {
		nd.waitJetStream(60*time.Second, nodes)
	}
	return nodes
}

// stablePort is a free loopback port below the kernel's ephemeral range (32768 and up), unique
// in taken. The nodes' client and route ports are chosen before any node starts: one from the
// ephemeral range (testproc.FreePort) can meanwhile become the source port of a node's outgoing
// route connection, and the node it was meant for fails to bind it — which left the cluster
// without a JetStream quorum in a CI run.
func stablePort(t *testing.T, taken map[int]bool) int {
	t.Helper()
	for range 1000 {
		p := 20000 + rand.IntN(12000)
		if taken[p] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		taken[p] = true
		return p
	}
	t.Fatal("no free port in 20000-31999")
	return 0
}

// natsURLs is the client URL list of a cluster.
func natsURLs(nodes []*natsNode) string {
	var urls []string
	for _, nd := range nodes {
		urls = append(urls, nd.url)
	}
	return strings.Join(urls, ",")
}

func (nd *natsNode) start() {
	nd.t.Helper()
	p := &proc{name: "nats-server " + nd.name, cmd: exec.Command(nd.args[0], nd.args[1:]...), out: &testproc.Buffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		nd.t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	nd.t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	nd.proc = p
}

// waitJetStream waits until the node's JetStream answers an account query (the cluster has a
// meta leader).
// Any node of cluster that has exited fails the test with its output (the others cannot make
// a quorum without it).
func (nd *natsNode) waitJetStream(limit time.Duration, cluster []*natsNode) {
	nd.t.Helper()
	waitFor(nd.t, limit, "nats "+nd.name+" JetStream ready", func() bool {
		for _, other := range append([]*natsNode{nd}, cluster...) {
			if other.proc.exited() {
				nd.t.Fatalf("nats-server %s exited: %v\n%s", other.name, other.proc.err, other.proc.out)
			}
		}
		nc, err := nats.Connect(nd.url, nats.NoReconnect(), nats.Timeout(time.Second))
		if err != nil {
			return false
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err = js.AccountInfo(ctx)
		return err == nil
	})
}

// tcpProxy forwards loopback TCP connections to target. Frozen, it passes no byte either way
// and serves no new connection (they wait in the listen backlog), as a SIGSTOPped server does;
// cut, it closes every connection and closes new ones at once.
type tcpProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	cond   *sync.Cond
	frozen bool
	cut    bool
	conns  map[net.Conn]struct{}
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.setFrozen(false)
		p.mu.Lock()
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	return p
}

// addr is the proxy's listen address (host:port).
func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

// pass blocks while the proxy is frozen and reports whether traffic may flow (not cut).
func (p *tcpProxy) pass() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.frozen {
		p.cond.Wait()
	}
	return !p.cut
}

func (p *tcpProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *tcpProxy) forget(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
}

func (p *tcpProxy) handle(c net.Conn) {
	if !p.pass() {
		c.Close()
		return
	}
	d, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, d) {
		c.Close()
		d.Close()
		return
	}
	var once sync.Once
	done := func() { once.Do(func() { p.forget(c, d) }) }
	pipe := func(dst, src net.Conn) {
		defer done()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if !p.pass() {
					return
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	go pipe(d, c)
	pipe(c, d)
}

func (p *tcpProxy) setFrozen(v bool) {
	p.mu.Lock()
	p.frozen = v
	p.mu.Unlock()
	p.cond.Broadcast()
}

// setCut cuts every connection and refuses new ones (true), or lets them through again.
func (p *tcpProxy) setCut(v bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = v
	if v {
		for c := range p.conns {
			c.Close()
			delete(p.conns, c)
		}
	}
}

// chaosLoadHeader marks the suite's own load requests, so the balancer counts those in flight
// on each replica (it removes the header before passing the request on).
const chaosLoadHeader = "X-Chaos-Load"

// frontDoor stands for the ingress in front of the replicas: each request goes to the next
// ready replica in turn (readiness polled on /readyz every 250 ms, as a Service's endpoints
// follow a readiness probe); a connection refused marks that replica not ready and the request
// goes to the next one (nothing was sent yet, as an ingress retries), and upgrades (the tunnel)
// and streams (the runner's) pass through.
type frontDoor struct {
	backends []*doorBackend
	next     atomic.Uint64
}

type doorBackend struct {
	url      string
	proxy    *httputil.ReverseProxy
	ready    atomic.Bool
	inFlight atomic.Int64 // the suite's load requests being served here
}

type attemptKey struct{}

// attempt is how one try of a request ended: refused when the replica refused the connection.
type attempt struct{ refused bool }

func newFrontDoor(t *testing.T, urls ...string) *frontDoor {
	fd := &frontDoor{}
	for _, u := range urls {
		target, _ := url.Parse(u)
		b := &doorBackend{url: u, proxy: httputil.NewSingleHostReverseProxy(target)}
		b.proxy.FlushInterval = -1
		b.proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
			if a, ok := r.Context().Value(attemptKey{}).(*attempt); ok && refusedErr(err) {
				a.refused = true
				b.ready.Store(false)
				return
			}
			w.WriteHeader(http.StatusBadGateway)
		}
		b.ready.Store(true)
		fd.backends = append(fd.backends, b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go fd.probe(ctx)
	return fd
}

// refusedErr reports a connection refused (or reset on connect): the replica is gone and the
// request never reached it.
func refusedErr(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" || errors.Is(err, syscall.ECONNREFUSED)
}

func (fd *frontDoor) probe(ctx context.Context) {
	c := &http.Client{Timeout: time.Second}
	for {
		for _, b := range fd.backends {
			resp, err := c.Get(b.url + "/readyz")
			ok := err == nil && resp.StatusCode == http.StatusOK
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			b.ready.Store(ok)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// unclosable keeps a request body open when a refused try closes it, and reports whether any
// of it was read (then the request cannot be tried elsewhere).
type unclosable struct {
	io.Reader
	read bool
}

func (u *unclosable) Read(p []byte) (int, error) {
	n, err := u.Reader.Read(p)
	if n > 0 {
		u.read = true
	}
	return n, err
}
func (u *unclosable) Close() error { return nil }

func (fd *frontDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	load := r.Header.Get(chaosLoadHeader) != ""
	r.Header.Del(chaosLoadHeader)
	var body *unclosable
	if r.Body != nil && r.Body != http.NoBody {
		body = &unclosable{Reader: r.Body}
		r.Body = body
	}
	n := uint64(len(fd.backends))
	start := fd.next.Add(1)
	tried := 0
	for i := range 2 * n { // ready replicas first, then any
		b := fd.backends[(start+i)%n]
		if i < n && !b.ready.Load() {
			continue
		}
		a := &attempt{}
		if load {
			b.inFlight.Add(1)
		}
		b.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), attemptKey{}, a)))
		if load {
			b.inFlight.Add(-1)
		}
		tried++
		if !a.refused || (body != nil && body.read) || tried >= int(n) {
			if a.refused {
				w.WriteHeader(http.StatusBadGateway)
			}
			return
		}
	}
	w.WriteHeader(http.StatusServiceUnavailable)
}

// inFlight is the suite's load requests being served by the replica at u.
func (fd *frontDoor) inFlight(u string) int64 {
	for _, b := range fd.backends {
		if b.url == u {
			return b.inFlight.Load()
		}
	}
	return 0
}

// fds counts a process's open file descriptors (-1 when it is gone).
func fds(pid int) int {
	entries, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		return -1
	}
	return len(entries)
}

// goroutines reads go_goroutines from a control plane's /metrics (-1 when it does not answer).
func goroutines(base string) int {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "go_goroutines "); ok {
			n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(n)
		}
	}
	return -1
}
