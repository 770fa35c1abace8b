package security_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
)

// Login attacks: a flood of logins must not exhaust memory (each password check holds 19 MiB of
// argon2id), parallel guesses must not get past the per-email limit, and an unknown email must
// not answer faster than a known one.

// loginFrom returns a client of s whose connections come from ip (any 127.0.0.0/8 address
// reaches the server), so a test can play several source addresses against the per-address
// limit.
func loginFrom(s *servertest.Server, ip string) *client.Client {
	return client.New(s.URL, client.WithHTTPClient(httpFrom(ip)))
}

func httpFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 100}}
}

// hashBudget is what identity lets password hashing hold at once (hashMemoryBudget).
const hashBudget = 128 << 20

// heapPeak samples the Go heap in use until stop is closed and returns the highest value seen.
func heapPeak(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var ms runtime.MemStats
		var peak uint64
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// 80 parallel logins with unknown emails, from 8 addresses (so the per-address limit does not
// hide the flood): the heap may grow by the hashing budget and the garbage of finished hashes,
// not by 80 hashes (1.5 GB).
func TestLoginFloodMemory(t *testing.T) {
	s := servertest.StartWith(t, backend(), servertest.Config{})
	ctx := context.Background()
	clients := make([]*client.Client, 8)
	for i := range clients {
		clients[i] = loginFrom(s, fmt.Sprintf("127.0.1.%d", i+1))
	}
	runtime.GC()
	debug.FreeOSMemory()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	stop := make(chan struct{})
	peakc := heapPeak(stop)

	const n = 80
	var wg sync.WaitGroup
	var checked, refused, other atomic.Int32
	var worst atomic.Int64
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			t0 := time.Now()
			_, err := clients[i%len(clients)].Login(ctx, client.LoginRequest{Email: fmt.Sprintf("flood%d@nowhere.test", i), Password: "guess-password"})
			d := int64(time.Since(t0))
			for w := worst.Load(); d > w && !worst.CompareAndSwap(w, d); w = worst.Load() {
			}
			switch {
			case client.IsStatus(err, 401):
				checked.Add(1)
			case client.IsStatus(err, 429):
				refused.Add(1)
			default:
				other.Add(1)
				t.Errorf("flood login: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	close(stop)
	peak := <-peakc
	growth := int64(peak) - int64(base.HeapInuse)
	t.Logf("%d parallel unknown-email logins: %d checked, %d refused (429); heap in use %d MiB before, peak %d MiB (+%d MiB); worst answer %s",
		n, checked.Load(), refused.Load(), base.HeapInuse>>20, peak>>20, growth>>20, time.Duration(worst.Load()).Round(time.Millisecond))
	// The bound: the budget, plus as much again of finished hashes' garbage, plus slack for the
	// server's own work. Without the bound this flood holds 80 × 19 MiB.
	limit := int64(3 * hashBudget)
	over := 0
	if growth > limit {
		over = 1
		t.Errorf("heap grew by %d MiB under the flood, more than %d MiB", growth>>20, limit>>20)
	}
	if checked.Load() == 0 {
		t.Error("no login was checked at all: the flood measured nothing")
	}
	attack(t, "login: flood exhausts memory", n, over, time.Duration(worst.Load()))
}

// 40 parallel wrong passwords for one email: at most the limit (10) are checked; the rest, and
// then even the right password, are refused with 429 and Retry-After.
func TestLoginGuessRace(t *testing.T) {
	s := servertest.StartWith(t, backend(), servertest.Config{})
	ctx := context.Background()
	const n, limit = 40, 10
	var wg sync.WaitGroup
	var checked, refused atomic.Int32
	var worst atomic.Int64
	start := make(chan struct{})
	for i := range n {
		c := loginFrom(s, fmt.Sprintf("127.0.2.%d", i%8+1))
		wg.Go(func() {
			<-start
			t0 := time.Now()
			_, err := c.Login(ctx, client.LoginRequest{Email: s.AdminEmail, Password: fmt.Sprintf("guess-%02d-password", i)})
			d := int64(time.Since(t0))
			for w := worst.Load(); d > w && !worst.CompareAndSwap(w, d); w = worst.Load() {
			}
			switch {
			case client.IsStatus(err, 401):
				checked.Add(1)
			case client.IsStatus(err, 429):
				refused.Add(1)
			default:
				t.Errorf("guess: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	raced := checked.Load()
	// Guesses refused because the server was busy hashing count for nothing: go on guessing, one
	// at a time, until the limit answers. All guesses checked, raced or not, stay within it.
	c := loginFrom(s, "127.0.2.98")
	for range 2 * limit {
		_, err := c.Login(ctx, client.LoginRequest{Email: s.AdminEmail, Password: "one-more-guess"})
		if client.IsStatus(err, 429) {
			break
		}
		if !client.IsStatus(err, 401) {
			t.Fatalf("sequential guess: %v", err)
		}
		checked.Add(1)
	}
	t.Logf("%d parallel wrong passwords for one email: %d checked, %d refused; then %d more checked one at a time",
		n, raced, refused.Load(), checked.Load()-raced)
	if raced == 0 {
		t.Error("no parallel guess was checked: the attack measured nothing")
	}
	// With the limit used up, the right password is refused too, and says when to retry.
	body := fmt.Sprintf(`{"email":%q,"password":%q}`, s.AdminEmail, servertest.AdminPassword)
	resp, err := httpFrom("127.0.2.99").Post(s.URL+"/api/v1/auth/login", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("right password after %d guesses: %d, Retry-After %q; want 429 with Retry-After", checked.Load(), resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	attack(t, "login: parallel guesses past the limit", n, max(0, int(checked.Load())-limit), time.Duration(worst.Load()))
}

// An unknown email must answer like a known one with a wrong password: same status and
// message (internal/server tests that), and the same time — the median difference of paired
// tries, from fresh addresses and emails so no limit is reached. The bound is loose on purpose
// (a busy 2-core machine shifts single answers by tens of milliseconds); without the dummy check
// an unknown email answers in a millisecond against a known one's 20-50 ms, far outside it.
func TestLoginTimingOracle(t *testing.T) {
	s := servertest.StartWith(t, backend(), servertest.Config{})
	ctx := context.Background()
	const tries = 32
	known := make([]string, tries/8) // each known email takes 8 wrong passwords, under its limit
	for i := range known {
		known[i] = fmt.Sprintf("known%d@first.test", i)
		if _, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: known[i], Role: "viewer", Password: "known-password-123"}); err != nil {
			t.Fatal(err)
		}
	}
	measure := func(c *client.Client, email string) time.Duration {
		t0 := time.Now()
		_, err := c.Login(ctx, client.LoginRequest{Email: email, Password: "wrong-password-x"})
		d := time.Since(t0)
		if !client.IsStatus(err, 401) {
			t.Fatalf("login %s: %v, want 401", email, err)
		}
		return d
	}
	// Pairs of tries, back to back on one warm connection, in alternating order: a burst of load
	// on the machine hits both of a pair, and the median of the pairs' differences ignores it.
	var kt, ut, diffs []time.Duration
	for i := range tries {
		c := loginFrom(s, fmt.Sprintf("127.0.3.%d", i/16+1)) // 32 failures per address, under 50
		if err := c.Health(ctx); err != nil {
			t.Fatal(err)
		}
		var k, u time.Duration
		if i%2 == 0 {
			k = measure(c, known[i%len(known)])
			u = measure(c, fmt.Sprintf("nobody%d@first.test", i))
		} else {
			u = measure(c, fmt.Sprintf("nobody%d@first.test", i))
			k = measure(c, known[i%len(known)])
		}
		kt, ut, diffs = append(kt, k), append(ut, u), append(diffs, k-u)
	}
	mk, mu, md := medianLatency(kt), medianLatency(ut), medianLatency(diffs)
	t.Logf("over %d pairs: median known email %s, unknown email %s, median difference %s (known %v; unknown %v)", tries, mk, mu, md, kt, ut)
	bound := max(5*time.Millisecond, min(mk, mu)/3)
	leak := 0
	if md > bound || md < -bound {
		leak = 1
		t.Errorf("a known email answers %s later than an unknown one (median of pairs), more than %s", md, bound)
	}
	attack(t, "login: timing tells known emails", 2*tries, leak, max(slices.Max(kt), slices.Max(ut)))
}

func medianLatency(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
