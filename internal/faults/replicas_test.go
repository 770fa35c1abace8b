package faults

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	testproc "github.com/freshet-dev/freshet/internal/testenv/proc"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/freshet-dev/freshet/client"
)

// natsServer starts a JetStream server for one test on a random loopback port and returns its
// URL. The control planes of the test share it (`freshet server --nats URL`) as replicas share
// an external NATS in production, and the test reads their stream from it; no other test sees
// its subjects.
func natsServer(t *testing.T) string {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true,
		StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats: not ready")
	}
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	return srv.ClientURL()
}

// replica starts another `freshet server` on cp's database and bus (and its other flags), with
// its own port and data dir, logged in as the same admin.
func (cp *controlPlane) replica() *controlPlane {
	cp.t.Helper()
	port := testproc.FreePort(cp.t)
	r := &controlPlane{t: cp.t, url: fmt.Sprintf("http://127.0.0.1:%d", port), env: cp.env, args: slices.Clone(cp.args)}
	for i := 0; i+1 < len(r.args); i++ {
		switch r.args[i] {
		case "--listen":
			r.args[i+1] = fmt.Sprintf("127.0.0.1:%d", port)
		case "--data-dir":
			r.args[i+1] = filepath.Join(cp.t.TempDir(), "data")
		case "--advertise-url":
			r.args[i+1] = r.url
		}
	}
	r.start()
	login, err := client.New(r.url).Login(context.Background(), client.LoginRequest{Email: "admin@freshet.local", Password: adminPassword})
	if err != nil {
		cp.t.Fatal(err)
	}
	r.admin = client.New(r.url, client.WithToken(login.Token))
	return r
}

// streamReader reads what the control planes stored in the FRESHET stream of a test's NATS.
type streamReader struct {
	nc   *nats.Conn
	cons jetstream.Consumer
	keys map[string]int // idempotency key → how many times the stream holds it
}

// readStream follows subjects of the FRESHET stream on the NATS at url from its start.
func readStream(t *testing.T, url string, subjects ...string) *streamReader {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, "FRESHET", jetstream.OrderedConsumerConfig{FilterSubjects: subjects})
	if err != nil {
		t.Fatal(err)
	}
	return &streamReader{nc: nc, cons: cons, keys: map[string]int{}}
}

// poll takes what arrived since the last poll.
func (s *streamReader) poll(t *testing.T) {
	t.Helper()
	for {
		batch, err := s.cons.Fetch(1000, jetstream.FetchMaxWait(300*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			s.keys[m.Headers().Get(jetstream.MsgIDHeader)]++
			n++
		}
		if n == 0 {
			return
		}
	}
}
