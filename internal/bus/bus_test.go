package bus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// testTimeout bounds every wait in these tests.
const testTimeout = 10 * time.Second

// fastBackoff keeps redelivery tests quick.
var fastBackoff = WithBackoff(10*time.Millisecond, 40*time.Millisecond)

type buildEvent struct {
	ID string `json:"id"`
	N  int    `json:"n"`
}

const subjFinished = "freshet.acme.builds.finished"

// logBuffer captures the bus log so tests can assert on it; it is printed when a test fails.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func testLogger(t *testing.T) (*slog.Logger, *logBuffer) {
	t.Helper()
	lb := &logBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("bus log:\n%s", lb)
		}
	})
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelInfo})), lb
}

// openBus opens an embedded bus in dir (a new temp dir when empty) and closes it at cleanup.
func openBus(t *testing.T, opts Options) (*Bus, *logBuffer) {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	log, lb := testLogger(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b, err := Open(ctx, opts, log)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b, lb
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func publish(t *testing.T, b *Bus, subject, key string, v buildEvent) {
	t.Helper()
	if err := Publish(testCtx(t), b, subject, key, v); err != nil {
		t.Fatalf("Publish(%s, %s): %v", subject, key, err)
	}
}

// collect subscribes with a handler that forwards every message to the returned channel.
func collect(t *testing.T, ctx context.Context, b *Bus, durable, subject string, opts ...SubOption) (*Subscription, <-chan Message[buildEvent]) {
	t.Helper()
	ch := make(chan Message[buildEvent], 1000)
	s, err := Subscribe(ctx, b, durable, subject, func(_ context.Context, m Message[buildEvent]) error {
		ch <- m
		return nil
	}, opts...)
	if err != nil {
		t.Fatalf("Subscribe(%s, %s): %v", durable, subject, err)
	}
	t.Cleanup(s.Stop)
	return s, ch
}

// receive waits for n messages and returns them.
func receive(t *testing.T, ch <-chan Message[buildEvent], n int) []Message[buildEvent] {
	t.Helper()
	var got []Message[buildEvent]
	deadline := time.After(testTimeout)
	for len(got) < n {
		select {
		case m := <-ch:
			got = append(got, m)
		case <-deadline:
			t.Fatalf("received %d of %d messages before timeout: %+v", len(got), n, got)
		}
	}
	return got
}

func ids(ms []Message[buildEvent]) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = m.Data.ID
	}
	return strings.Join(s, ",")
}

// settled waits until durable has made at least minDeliveries deliveries and has no pending and
// no unacked messages, and returns its info. (Right after a publish the consumer may not count
// the new message as pending yet, hence the lower bound.)
func settled(t *testing.T, b *Bus, durable string, minDeliveries uint64) *jetstream.ConsumerInfo {
	t.Helper()
	ctx := testCtx(t)
	var ci *jetstream.ConsumerInfo
	for {
		c, err := b.js.Consumer(ctx, b.opts.Stream, durable)
		if err == nil {
			ci, err = c.Info(ctx)
		}
		if err == nil && ci.Delivered.Consumer >= minDeliveries && ci.NumPending == 0 && ci.NumAckPending == 0 {
			return ci
		}
		select {
		case <-ctx.Done():
			t.Fatalf("consumer %s not settled: info %+v, err %v", durable, ci, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func streamMsgs(t *testing.T, b *Bus) uint64 {
	t.Helper()
	s, err := b.js.Stream(testCtx(t), b.opts.Stream)
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	return s.CachedInfo().State.Msgs
}

func TestPublishSubscribeRoundTrip(t *testing.T) {
	b, _ := openBus(t, Options{})
	if err := b.Ready(testCtx(t)); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	if u := b.ClientURL(); u != "" {
		t.Errorf("ClientURL() = %q for an in-process server, want \"\"", u)
	}
	start := time.Now()
	publish(t, b, subjFinished, "k1", buildEvent{ID: "b1", N: 1})
	publish(t, b, "freshet.acme.builds.started", "k2", buildEvent{ID: "b2", N: 2})
	publish(t, b, "freshet.acme.deploys.finished", "k3", buildEvent{ID: "d1", N: 3}) // filtered out

	_, ch := collect(t, testCtx(t), b, "roundtrip", "freshet.*.builds.>")
	got := receive(t, ch, 2)
	want := []Message[buildEvent]{
		{Subject: subjFinished, Key: "k1", Data: buildEvent{ID: "b1", N: 1}, Delivered: 1},
		{Subject: "freshet.acme.builds.started", Key: "k2", Data: buildEvent{ID: "b2", N: 2}, Delivered: 1},
	}
	for i, m := range got {
		if m.Published.Before(start.Add(-time.Second)) || m.Published.After(time.Now()) {
			t.Errorf("message %d: Published = %v, want about %v", i, m.Published, start)
		}
		m.Published = time.Time{}
		if m != want[i] {
			t.Errorf("message %d = %+v, want %+v", i, m, want[i])
		}
	}
	ci := settled(t, b, "roundtrip", 2)
	if ci.Delivered.Consumer != 2 {
		t.Errorf("consumer delivered %d messages, want 2 (deploys filtered out)", ci.Delivered.Consumer)
	}
}

func TestDurableResumesAfterStop(t *testing.T) {
	b, _ := openBus(t, Options{})
	ctx := testCtx(t)
	for i := 1; i <= 3; i++ {
		publish(t, b, subjFinished, fmt.Sprint("k", i), buildEvent{ID: fmt.Sprint(i)})
	}
	s, ch := collect(t, ctx, b, "resume", subjFinished)
	if got := ids(receive(t, ch, 3)); got != "1,2,3" {
		t.Fatalf("first subscription got %s, want 1,2,3", got)
	}
	settled(t, b, "resume", 3)
	s.Stop()
	for i := 4; i <= 6; i++ {
		publish(t, b, subjFinished, fmt.Sprint("k", i), buildEvent{ID: fmt.Sprint(i)})
	}
	_, ch = collect(t, ctx, b, "resume", subjFinished)
	if got := ids(receive(t, ch, 3)); got != "4,5,6" {
		t.Fatalf("resumed subscription got %s, want 4,5,6", got)
	}
	settled(t, b, "resume", 6)
	select {
	case m := <-ch:
		t.Fatalf("unexpected extra message %+v", m)
	default:
	}
}

func TestDurableResumesAfterReopen(t *testing.T) {
	dir := t.TempDir()
	log, _ := testLogger(t)
	open := func() *Bus {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		b, err := Open(ctx, Options{DataDir: dir}, log)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return b
	}

	b := open()
	ctx := testCtx(t)
	publish(t, b, subjFinished, "k1", buildEvent{ID: "1"})
	s, ch := collect(t, ctx, b, "reopen", subjFinished)
	if got := ids(receive(t, ch, 1)); got != "1" {
		t.Fatalf("got %s, want 1", got)
	}
	settled(t, b, "reopen", 1)
	s.Stop()
	publish(t, b, subjFinished, "k2", buildEvent{ID: "2"})
	publish(t, b, subjFinished, "k3", buildEvent{ID: "3"})
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	b = open()
	defer b.Close()
	if n := streamMsgs(t, b); n != 3 {
		t.Fatalf("stream holds %d messages after reopen, want 3", n)
	}
	_, ch = collect(t, ctx, b, "reopen", subjFinished)
	if got := ids(receive(t, ch, 2)); got != "2,3" {
		t.Fatalf("after reopen got %s, want 2,3 (1 was acked before Close)", got)
	}
	settled(t, b, "reopen", 3)
}

func TestPublishSameKeyStoredOnce(t *testing.T) {
	b, _ := openBus(t, Options{})
	publish(t, b, subjFinished, "same", buildEvent{ID: "first"})
	publish(t, b, subjFinished, "same", buildEvent{ID: "retry"}) // a retry within the window
	publish(t, b, subjFinished, "other", buildEvent{ID: "sentinel"})
	if n := streamMsgs(t, b); n != 2 {
		t.Fatalf("stream holds %d messages, want 2 (the retry dropped)", n)
	}
	_, ch := collect(t, testCtx(t), b, "dedup", subjFinished)
	if got := ids(receive(t, ch, 2)); got != "first,sentinel" {
		t.Fatalf("got %s, want first,sentinel", got)
	}
}

// fakeLedger is an in-memory Ledger with the semantics of the SQL one: fn's staged effects are
// committed together with the key only when fn succeeds.
type fakeLedger struct {
	mu        sync.Mutex
	done      map[string]bool
	committed []string
	calls     []string // "consumer/key" per Once call
	// afterCommit, when set, runs after a commit; an error simulates a crash between the commit
	// and the ack.
	afterCommit func(consumer, key string) error
}

type fakeTx struct{ effects []string }

type txKey struct{}

func (l *fakeLedger) Once(ctx context.Context, consumer, key string, fn func(context.Context) error) error {
	k := consumer + "/" + key
	l.mu.Lock()
	l.calls = append(l.calls, k)
	seen := l.done[k]
	l.mu.Unlock()
	if seen {
		return nil
	}
	tx := &fakeTx{}
	if err := fn(context.WithValue(ctx, txKey{}, tx)); err != nil {
		return err // rolled back: tx.effects dropped
	}
	l.mu.Lock()
	if l.done == nil {
		l.done = map[string]bool{}
	}
	l.done[k] = true
	l.committed = append(l.committed, tx.effects...)
	l.mu.Unlock()
	if l.afterCommit != nil {
		return l.afterCommit(consumer, key)
	}
	return nil
}

func (l *fakeLedger) snapshot() (committed, calls []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.committed...), append([]string(nil), l.calls...)
}

// stage records a side effect in the transaction Once handed to the handler.
func stage(ctx context.Context, effect string) {
	tx := ctx.Value(txKey{}).(*fakeTx)
	tx.effects = append(tx.effects, effect)
}

var _ Ledger = (*fakeLedger)(nil)

func TestHandlerFailureRedeliveredAndLedgerAppliesOnce(t *testing.T) {
	// DuplicateWindow is short so the same key can be published again after it.
	b, _ := openBus(t, Options{DuplicateWindow: MinDuplicateWindow})
	ctx := testCtx(t)

	var lostAck sync.Once
	ledger := &fakeLedger{afterCommit: func(_, key string) error {
		err := error(nil)
		if key == "deploy-1" {
			lostAck.Do(func() { err = errors.New("process died before the ack") })
		}
		return err
	}}
	type call struct {
		id        string
		delivered int
	}
	calls := make(chan call, 100)
	_, err := Subscribe(ctx, b, "deployer", "freshet.acme.deploys.>", func(ctx context.Context, m Message[buildEvent]) error {
		calls <- call{m.Data.ID, m.Delivered}
		stage(ctx, "deployed "+m.Data.ID)
		if m.Data.ID == "d1" && m.Delivered == 1 {
			return errors.New("cluster unreachable") // fails once, effect rolled back
		}
		return nil
	}, WithLedger(ledger), fastBackoff)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}

	publish(t, b, "freshet.acme.deploys.requested", "deploy-1", buildEvent{ID: "d1"})
	// delivery 1 fails, delivery 2 commits but "loses" its ack, delivery 3 is skipped by the ledger.
	settled(t, b, "deployer", 3)

	// The same key published again once the duplicate window has passed is a new stream message:
	// the ledger must still skip it.
	before := streamMsgs(t, b)
	deadline := time.Now().Add(testTimeout)
	for streamMsgs(t, b) == before {
		if time.Now().After(deadline) {
			t.Fatal("republished key never stored after the duplicate window")
		}
		time.Sleep(50 * time.Millisecond)
		publish(t, b, "freshet.acme.deploys.requested", "deploy-1", buildEvent{ID: "d1"})
	}
	publish(t, b, "freshet.acme.deploys.requested", "deploy-2", buildEvent{ID: "d2"})
	settled(t, b, "deployer", 5)
	close(calls)

	var got []call
	for c := range calls {
		got = append(got, c)
	}
	want := []call{{"d1", 1}, {"d1", 2}, {"d2", 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("handler calls (id, delivered) = %v, want %v", got, want)
	}
	committed, onces := ledger.snapshot()
	if fmt.Sprint(committed) != "[deployed d1 deployed d2]" {
		t.Errorf("committed side effects = %q, want each deploy exactly once", committed)
	}
	wantOnces := []string{"deployer/deploy-1", "deployer/deploy-1", "deployer/deploy-1", "deployer/deploy-1", "deployer/deploy-2"}
	if fmt.Sprint(onces) != fmt.Sprint(wantOnces) {
		t.Errorf("Ledger.Once calls = %q, want %q", onces, wantOnces)
	}
}

func TestFailingHandlerBoundedByMaxDeliver(t *testing.T) {
	b, lb := openBus(t, Options{})
	var mu sync.Mutex
	var delivered []int
	_, err := Subscribe(testCtx(t), b, "flaky", subjFinished, func(_ context.Context, m Message[buildEvent]) error {
		mu.Lock()
		defer mu.Unlock()
		delivered = append(delivered, m.Delivered)
		return errors.New("always fails")
	}, WithMaxDeliver(3), fastBackoff)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	publish(t, b, subjFinished, "k", buildEvent{ID: "x"})
	settled(t, b, "flaky", 3)
	time.Sleep(100 * time.Millisecond) // longer than the backoff: a further delivery would show
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(delivered) != "[1 2 3]" {
		t.Errorf("deliveries = %v, want [1 2 3]", delivered)
	}
	if log := lb.String(); !strings.Contains(log, "last delivery") || !strings.Contains(log, "subject="+subjFinished) {
		t.Errorf("log does not report the terminated message with its subject:\n%s", log)
	}
}

func TestPermanentErrorNotRedelivered(t *testing.T) {
	b, lb := openBus(t, Options{})
	var mu sync.Mutex
	calls := map[string]int{}
	_, err := Subscribe(testCtx(t), b, "strict", subjFinished, func(_ context.Context, m Message[buildEvent]) error {
		mu.Lock()
		calls[m.Data.ID]++
		mu.Unlock()
		if m.Data.ID == "bad" {
			return fmt.Errorf("validate: %w", Permanent(errors.New("unknown build")))
		}
		return nil
	}, fastBackoff)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	publish(t, b, subjFinished, "k1", buildEvent{ID: "bad"})
	publish(t, b, subjFinished, "k2", buildEvent{ID: "good"})
	ci := settled(t, b, "strict", 2)
	time.Sleep(100 * time.Millisecond) // longer than the backoff
	mu.Lock()
	defer mu.Unlock()
	if calls["bad"] != 1 || calls["good"] != 1 {
		t.Errorf("handler calls = %v, want bad:1 good:1", calls)
	}
	if ci.Delivered.Consumer != 2 {
		t.Errorf("consumer made %d deliveries, want 2 (no redelivery)", ci.Delivered.Consumer)
	}
	if !strings.Contains(lb.String(), "unknown build") {
		t.Errorf("permanent error not logged:\n%s", lb)
	}
}

func TestMalformedPayloadTerminated(t *testing.T) {
	b, lb := openBus(t, Options{})
	ctx := testCtx(t)
	// Published around Publish, as a foreign or buggy publisher would.
	for key, payload := range map[string]string{"garbage": "{not json", "wrongtype": `{"id": 42}`} {
		if _, err := b.js.Publish(ctx, subjFinished, []byte(payload), jetstream.WithMsgID(key)); err != nil {
			t.Fatalf("raw publish: %v", err)
		}
	}
	publish(t, b, subjFinished, "ok", buildEvent{ID: "ok"})
	s, ch := collect(t, ctx, b, "decoder", subjFinished, fastBackoff)
	if got := ids(receive(t, ch, 1)); got != "ok" {
		t.Fatalf("got %s, want only the valid message", got)
	}
	ci := settled(t, b, "decoder", 3)
	time.Sleep(100 * time.Millisecond) // longer than the backoff
	s.Stop()
	if ci.Delivered.Consumer != 3 {
		t.Errorf("consumer made %d deliveries, want 3 (no redelivery loop)", ci.Delivered.Consumer)
	}
	if len(ch) != 0 {
		t.Errorf("handler got %d extra messages", len(ch))
	}
	log := lb.String()
	if strings.Count(log, "malformed payload") != 2 || !strings.Contains(log, "subject="+subjFinished) {
		t.Errorf("want both malformed messages logged once with their subject:\n%s", log)
	}
}

func TestSameDurableSharesWork(t *testing.T) {
	b, _ := openBus(t, Options{})
	ctx := testCtx(t)
	const n = 40
	var mu sync.Mutex
	seen := map[string]int{}
	perSub := [2]int{}
	all := make(chan struct{})
	for i := range perSub {
		s, err := Subscribe(ctx, b, "workers", subjFinished, func(_ context.Context, m Message[buildEvent]) error {
			time.Sleep(2 * time.Millisecond) // let the other subscriber take its share
			mu.Lock()
			defer mu.Unlock()
			seen[m.Data.ID]++
			perSub[i]++
			if len(seen) == n {
				close(all)
			}
			return nil
		}, WithFetchBatch(1))
		if err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
		t.Cleanup(s.Stop)
	}
	for i := range n {
		publish(t, b, subjFinished, fmt.Sprint("k", i), buildEvent{ID: fmt.Sprint(i)})
	}
	select {
	case <-all:
	case <-ctx.Done():
		t.Fatal("not every message was handled")
	}
	settled(t, b, "workers", 40)
	mu.Lock()
	defer mu.Unlock()
	for id, c := range seen {
		if c != 1 {
			t.Errorf("message %s handled %d times, want once", id, c)
		}
	}
	if perSub[0] == 0 || perSub[1] == 0 || perSub[0]+perSub[1] != n {
		t.Errorf("work split %v, want both subscribers to share %d messages", perSub, n)
	}
}

func TestListenLoopback(t *testing.T) {
	b, _ := openBus(t, Options{ListenLoopback: true})
	u := b.ClientURL()
	if !strings.HasPrefix(u, "nats://127.0.0.1:") || strings.HasSuffix(u, ":4222") || strings.HasSuffix(u, ":0") {
		t.Fatalf("ClientURL() = %q, want nats://127.0.0.1:<random port>", u)
	}
	// A second connection, as another process (a runtime) would make.
	nc, err := nats.Connect(u, nats.Timeout(testTimeout))
	if err != nil {
		t.Fatalf("connect to %s: %v", u, err)
	}
	defer nc.Close()

	// Durable: published by the other connection, consumed through the bus.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if _, err := js.Publish(ctx, subjFinished, []byte(`{"id":"remote","n":7}`), jetstream.WithMsgID("r1")); err != nil {
		t.Fatalf("publish from second connection: %v", err)
	}
	_, ch := collect(t, ctx, b, "loopback", subjFinished)
	if m := receive(t, ch, 1)[0]; m.Data != (buildEvent{ID: "remote", N: 7}) || m.Key != "r1" {
		t.Errorf("got %+v, want remote event with key r1", m)
	}

	// Core: live fan-out through Conn reaches the other connection and is not stored.
	live := LiveSubjectRoot + ".acme.build-log.b1"
	sub, err := nc.SubscribeSync(live)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	before := streamMsgs(t, b)
	if err := b.Conn().Publish(live, []byte("line 1")); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.NextMsg(testTimeout)
	if err != nil || string(msg.Data) != "line 1" {
		t.Fatalf("live message: %v %v", msg, err)
	}
	if after := streamMsgs(t, b); after != before {
		t.Errorf("stream grew from %d to %d on a live subject", before, after)
	}
}

func TestContextCancelStopsSubscription(t *testing.T) {
	b, _ := openBus(t, Options{})
	ctx, cancel := context.WithCancel(testCtx(t))
	started := make(chan struct{})
	var calls atomic.Int32
	s, err := Subscribe(ctx, b, "cancel", subjFinished, func(ctx context.Context, m Message[buildEvent]) error {
		if calls.Add(1) == 1 {
			close(started)
		}
		<-ctx.Done() // a handler that honours cancellation
		return ctx.Err()
	})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	publish(t, b, subjFinished, "k", buildEvent{ID: "interrupted"})
	select {
	case <-started:
	case <-time.After(testTimeout):
		t.Fatal("handler never started")
	}
	cancel()
	select {
	case <-s.done:
	case <-time.After(testTimeout):
		t.Fatal("subscription still running after its context was cancelled")
	}
	s.Stop() // after cancellation: must not block
	if n := calls.Load(); n != 1 {
		t.Errorf("cancelled subscription called its handler %d times, want 1", n)
	}

	// The interrupted message was handed back, not lost and not delayed by a backoff.
	_, ch := collect(t, testCtx(t), b, "cancel", subjFinished)
	if m := receive(t, ch, 1)[0]; m.Data.ID != "interrupted" || m.Delivered != 2 {
		t.Errorf("got %+v, want the interrupted message on its second delivery", m)
	}
}

func TestStopWaitsForInFlightHandler(t *testing.T) {
	b, _ := openBus(t, Options{})
	started, release := make(chan struct{}), make(chan struct{})
	var finished bool
	s, err := Subscribe(testCtx(t), b, "inflight", subjFinished, func(ctx context.Context, m Message[buildEvent]) error {
		close(started)
		<-release
		finished = true
		return nil
	})
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	publish(t, b, subjFinished, "k", buildEvent{ID: "slow"})
	<-started
	stopped := make(chan struct{})
	go func() { s.Stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while the handler was still running")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case <-stopped:
	case <-time.After(testTimeout):
		t.Fatal("Stop did not return after the handler finished")
	}
	if !finished {
		t.Error("handler did not finish")
	}
	// settled fails unless the in-flight message was acked (not left to AckWait).
	if ci := settled(t, b, "inflight", 1); ci.Delivered.Consumer != 1 {
		t.Errorf("consumer made %d deliveries, want 1", ci.Delivered.Consumer)
	}
}

func TestCloseLeaksNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		b, _ := openBus(t, Options{ListenLoopback: true})
		_, ch := collect(t, testCtx(t), b, "leak", subjFinished)
		publish(t, b, subjFinished, "k", buildEvent{ID: "1"})
		receive(t, ch, 1)
		// A subscription left running: Close must stop it.
		if err := b.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := b.Ready(testCtx(t)); !errors.Is(err, ErrClosed) {
			t.Errorf("Ready after Close = %v, want ErrClosed", err)
		}
		if err := Publish(testCtx(t), b, subjFinished, "k2", buildEvent{}); !errors.Is(err, ErrClosed) {
			t.Errorf("Publish after Close = %v, want ErrClosed", err)
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			var buf bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
			t.Fatalf("goroutines: %d before Open, %d after Close:\n%s", before, runtime.NumGoroutine(), buf.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestArgumentErrors(t *testing.T) {
	b, _ := openBus(t, Options{})
	ctx := testCtx(t)
	noop := func(context.Context, Message[buildEvent]) error { return nil }
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"publish outside root", Publish(ctx, b, "other.acme.x", "k", 1), ErrInvalidSubject},
		{"publish root only", Publish(ctx, b, "freshet", "k", 1), ErrInvalidSubject},
		{"publish wildcard", Publish(ctx, b, "freshet.*.builds.finished", "k", 1), ErrInvalidSubject},
		{"publish empty token", Publish(ctx, b, "freshet..builds", "k", 1), ErrInvalidSubject},
		{"publish empty key", Publish(ctx, b, subjFinished, "", 1), ErrMissingKey},
		{"publish key with newline", Publish(ctx, b, subjFinished, "a\nb", 1), ErrMissingKey},
		{"subscribe bad durable", subErr(Subscribe(ctx, b, "a.b", subjFinished, noop)), ErrInvalidDurable},
		{"subscribe empty durable", subErr(Subscribe(ctx, b, "", subjFinished, noop)), ErrInvalidDurable},
		{"subscribe bad filter", subErr(Subscribe(ctx, b, "d", "freshet.acme.>.x", noop)), ErrInvalidSubject},
		{"subscribe nil handler", subErr(Subscribe[buildEvent](ctx, b, "d", subjFinished, nil)), ErrInvalidOptions},
		{"subscribe max deliver", subErr(Subscribe(ctx, b, "d", subjFinished, noop, WithMaxDeliver(0))), ErrInvalidOptions},
		{"subscribe backoff", subErr(Subscribe(ctx, b, "d", subjFinished, noop, WithBackoff(time.Second, time.Millisecond))), ErrInvalidOptions},
		{"subscribe batch", subErr(Subscribe(ctx, b, "d", subjFinished, noop, WithFetchBatch(0))), ErrInvalidOptions},
		{"subscribe ack wait", subErr(Subscribe(ctx, b, "d", subjFinished, noop, WithAckWait(time.Millisecond))), ErrInvalidOptions},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if n := streamMsgs(t, b); n != 0 {
		t.Errorf("rejected publishes stored %d messages", n)
	}
}

func subErr(s *Subscription, err error) error {
	if s != nil {
		s.Stop()
	}
	return err
}

func TestPermanent(t *testing.T) {
	if Permanent(nil) != nil {
		t.Error("Permanent(nil) != nil")
	}
	base := errors.New("boom")
	err := fmt.Errorf("wrapped: %w", Permanent(base))
	if !IsPermanent(err) || !errors.Is(err, base) || err.Error() != "wrapped: boom" {
		t.Errorf("wrapped permanent error: IsPermanent=%v Is(base)=%v %q", IsPermanent(err), errors.Is(err, base), err)
	}
	if IsPermanent(base) {
		t.Error("IsPermanent(plain error) = true")
	}
}

func TestNakDelay(t *testing.T) {
	c := subConfig{backoffMin: 100 * time.Millisecond, backoffMax: time.Second}
	for _, tc := range []struct {
		delivered int
		max       time.Duration
	}{
		{1, 100 * time.Millisecond},
		{2, 200 * time.Millisecond},
		{3, 400 * time.Millisecond},
		{4, 800 * time.Millisecond},
		{5, time.Second},
		{50, time.Second},
	} {
		for range 20 {
			if d := c.nakDelay(tc.delivered); d < tc.max/2 || d > tc.max {
				t.Errorf("nakDelay(%d) = %s, want within [%s, %s]", tc.delivered, d, tc.max/2, tc.max)
			}
		}
	}
}

func TestTruncate(t *testing.T) {
	if got := truncate("héllo", 2); got != "h" {
		t.Errorf("truncate split a rune: %q", got)
	}
	if got := truncate("abc", 5); got != "abc" {
		t.Errorf("truncate(abc, 5) = %q", got)
	}
}
