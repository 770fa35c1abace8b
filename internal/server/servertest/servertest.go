// Package servertest starts real Freshet control planes for tests: a server on a free
// 127.0.0.1 port with a temp data dir, on SQLite or PostgreSQL, bootstrapped with a known admin.
package servertest

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// readyWait bounds how long StartWith waits for a started server to answer.
const readyWait = 60 * time.Second

// AdminPassword is the password of every test server's first admin.
const AdminPassword = "correct-horse-battery"

// Server is a running test control plane.
type Server struct {
	*server.Server
	URL        string
	AdminEmail string
	Admin      *client.Client // logged in as the first admin
	HTTP       *http.Client   // used by every client of this server
	// Stop shuts the server down gracefully and waits for it (as at the test's end), so a test
	// can start another on the same database and data directory.
	Stop func()
}

func (s *Server) opts(extra ...client.Option) []client.Option {
	if s.HTTP != nil {
		extra = append(extra, client.WithHTTPClient(s.HTTP))
	}
	return extra
}

func (s *Server) anon() *client.Client { return client.New(s.URL, s.opts()...) }

// Start runs a control plane on backend d until t ends.
func Start(t testing.TB, d store.Dialect) *Server {
	t.Helper()
	return StartWith(t, d, Config{})
}

// Config changes how StartWith starts a server.
type Config struct {
	Edit func(*server.Options) // changes the options before the server starts
	HTTP *http.Client          // the HTTP client test clients use (e.g. one trusting a test CA)
}

// StartWith is Start with cfg applied.
func StartWith(t testing.TB, d store.Dialect, cfg Config) *Server {
	t.Helper()
	opts := server.Options{
		Listen: "127.0.0.1:0", DataDir: t.TempDir(), LogFormat: "text", LogLevel: "warn",
		Account: "first", AdminEmail: "admin@first.test", AdminPassword: AdminPassword, ShutdownTimeout: server.DefaultShutdownTimeout,
	}
	if d == store.Postgres {
		opts.DB = storetest.DSN(t, d)
		// Replicas on PostgreSQL need an explicit, shared master key.
		keyFile := filepath.Join(opts.DataDir, "test-master.key")
		if _, err := secrets.GenerateKeyFile(keyFile); err != nil {
			t.Fatal(err)
		}
		opts.MasterKeyFile = keyFile
	}
	if cfg.Edit != nil {
		cfg.Edit(&opts)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithCancel(context.Background())
	// Shutdown may wait up to 5 s for a connection a client dialed but never used (net/http
	// counts such connections as active until they are 5 s old), so tests use the production
	// shutdown timeout.
	srv, err := server.New(ctx, opts, log)
	if err != nil {
		cancel()
		t.Fatalf("start server: %v", err)
	}
	if _, err := srv.Bootstrap(ctx); err != nil {
		cancel()
		srv.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("server stopped with: %v", err)
				}
			case <-time.After(server.DefaultShutdownTimeout + 5*time.Second):
				t.Error("server did not stop within its shutdown timeout")
			}
		})
	}
	t.Cleanup(stop)
	s := &Server{Server: srv, URL: srv.URL(), AdminEmail: opts.AdminEmail, HTTP: cfg.HTTP, Stop: stop}
	c := s.anon()
	// A generous bound: on a busy machine under -race a start can take seconds; a server that
	// never answers still fails the test.
	deadline := time.Now().Add(readyWait)
	for c.Health(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("server not ready within %s", readyWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.Admin = s.Login(t, opts.AdminEmail, AdminPassword)
	return s
}

// Login returns a client logged in with email and password.
func (s *Server) Login(t testing.TB, email, password string) *client.Client {
	t.Helper()
	res, err := s.anon().Login(context.Background(), client.LoginRequest{Email: email, Password: password})
	if err != nil {
		t.Fatalf("login %s: %v", email, err)
	}
	return client.New(s.URL, s.opts(client.WithToken(res.Token))...)
}

// Client returns a client that authenticates with token.
func (s *Server) Client(token string) *client.Client {
	return client.New(s.URL, s.opts(client.WithToken(token))...)
}
