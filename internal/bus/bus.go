// Package bus is Freshet's event bus: typed publish/subscribe over NATS JetStream, either on a
// server embedded in the process or on an external NATS (cluster).
//
// Publish stores a JSON event durably under an idempotency key (sent as Nats-Msg-Id, so a retried
// publish within the duplicate window is stored once). Subscribe runs a durable pull consumer that
// hands each event to a handler at least once: a nil error acks, an error naks with backoff up to a
// bounded number of deliveries, a Permanent error terminates at once, and a payload that is not
// valid JSON for the handler's type is logged and terminated. With a Ledger, each event is handled
// inside Ledger.Once, so a redelivered event changes nothing twice.
//
// Durable subjects are freshet.<account>.<domain>.<event>; core (non-persistent) traffic such as
// live log fan-out goes through Conn on subjects under LiveSubjectRoot. See docs/bus.md.
package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrClosed is returned by operations on a Bus after Close.
var ErrClosed = errors.New("bus closed")

// Log attribute keys.
const (
	logKeyComponent = "component"
	logKeySubject   = "subject"
	logKeyKey       = "key"
	logKeyDurable   = "durable"
	logKeyDelivered = "delivered"
	logKeySeq       = "seq"
	logKeyDelay     = "delay"
	logKeyErr       = "err"
	logKeyURL       = "url"
	logKeyStream    = "stream"
)

// Bus is a connection to NATS JetStream (and, when embedded, the server itself) with the Freshet
// stream in place. It is safe for concurrent use.
type Bus struct {
	opts Options
	log  *slog.Logger
	srv  *server.Server // nil when external
	nc   *nats.Conn
	js   jetstream.JetStream

	connClosed chan struct{} // closed by the connection's ClosedHandler

	mu      sync.Mutex
	closing bool
	subs    map[*Subscription]struct{}

	closeOnce sync.Once
	closeErr  error
}

// Open starts the embedded server (when opts.URL is empty) or connects to the external one, and
// creates or updates the stream. ctx bounds the stream set-up. log may be nil.
func Open(ctx context.Context, opts Options, log *slog.Logger) (*Bus, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts = opts.withDefaults()
	b := &Bus{
		opts:       opts,
		log:        log,
		connClosed: make(chan struct{}),
		subs:       make(map[*Subscription]struct{}),
	}
	if err := b.open(ctx); err != nil {
		b.shutdown()
		return nil, err
	}
	return b, nil
}

func (b *Bus) open(ctx context.Context) error {
	copts := []nats.Option{
		nats.Name(clientName),
		nats.MaxReconnects(-1),
		nats.DrainTimeout(drainTimeout),
		nats.ClosedHandler(func(*nats.Conn) { close(b.connClosed) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				b.log.Warn("nats disconnected", logKeyErr, err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			b.log.Info("nats reconnected", logKeyURL, nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			var subj string
			if sub != nil {
				subj = sub.Subject
			}
			b.log.Warn("nats async error", logKeySubject, subj, logKeyErr, err)
		}),
	}
	url := b.opts.URL
	if url == "" {
		srv, err := startEmbedded(b.opts, b.log)
		if err != nil {
			return err
		}
		b.srv = srv
		copts = append(copts, nats.InProcessServer(srv))
	}
	nc, err := nats.Connect(url, copts...)
	if err != nil {
		if url == "" {
			return fmt.Errorf("connect to embedded nats: %w", err)
		}
		return fmt.Errorf("connect to nats %s: %w", redactURL(url), err)
	}
	b.nc = nc
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	b.js = js
	cfg := jetstream.StreamConfig{
		Name:        b.opts.Stream,
		Description: "Freshet events",
		Subjects:    []string{SubjectRoot + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      StreamMaxAge,
		Storage:     jetstream.FileStorage,
		Replicas:    b.opts.Replicas,
		Duplicates:  b.opts.DuplicateWindow,
	}
	if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("create or update stream %s: %w", b.opts.Stream, err)
	}
	b.log.Info("bus ready", logKeyStream, b.opts.Stream, "embedded", b.srv != nil, logKeyURL, b.logURL())
	return nil
}

// startEmbedded starts a JetStream server that stores in opts.DataDir and, unless
// opts.ListenLoopback, has no network listener at all.
func startEmbedded(opts Options, log *slog.Logger) (*server.Server, error) {
	srv, err := server.NewServer(&server.Options{
		ServerName: embeddedServerName,
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT, // never the standard 4222
		DontListen: !opts.ListenLoopback,
		JetStream:  true,
		StoreDir:   opts.DataDir,
		NoSigs:     true,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	srv.SetLoggerV2(serverLogger{log.With(logKeyComponent, "nats-server")}, false, false, false)
	srv.Start()
	if !srv.ReadyForConnections(embeddedStartTimeout) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("embedded nats: not ready after %s (data dir %s)", embeddedStartTimeout, opts.DataDir)
	}
	return srv, nil
}

// Close stops every subscription (waiting for in-flight handlers), drains the connection and
// shuts the embedded server down. It is safe to call more than once.
func (b *Bus) Close() error {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.closing = true
		subs := make([]*Subscription, 0, len(b.subs))
		for s := range b.subs {
			subs = append(subs, s)
		}
		b.mu.Unlock()
		for _, s := range subs {
			s.cancel() // all at once: each may take up to idleWait to notice
		}
		for _, s := range subs {
			s.Stop()
		}
		b.closeErr = b.shutdown()
	})
	return b.closeErr
}

// shutdown drains the connection and stops the embedded server; it tolerates a partial Open.
func (b *Bus) shutdown() error {
	var err error
	if b.nc != nil {
		if derr := b.nc.Drain(); derr != nil && !errors.Is(derr, nats.ErrConnectionClosed) {
			err = fmt.Errorf("drain nats connection: %w", derr)
			b.nc.Close()
		}
		select {
		case <-b.connClosed:
		case <-time.After(drainTimeout + time.Second):
			b.nc.Close()
			err = errors.Join(err, fmt.Errorf("drain nats connection: not closed after %s", drainTimeout))
		}
	}
	if b.srv != nil {
		b.srv.Shutdown()
		b.srv.WaitForShutdown()
	}
	return err
}

// Ready reports whether the bus is connected and its stream is reachable (for /readyz).
func (b *Bus) Ready(ctx context.Context) error {
	if b.isClosing() {
		return ErrClosed
	}
	if st := b.nc.Status(); st != nats.CONNECTED {
		return fmt.Errorf("nats connection is %s", st)
	}
	if _, err := b.js.Stream(ctx, b.opts.Stream); err != nil {
		return fmt.Errorf("stream %s: %w", b.opts.Stream, err)
	}
	return nil
}

// ClientURL is the URL another process can connect to: the embedded server's loopback listener
// when ListenLoopback is set, the configured URL(s) when external (which may carry credentials:
// do not log it), and "" for an embedded server reachable in-process only.
func (b *Bus) ClientURL() string {
	switch {
	case b.srv == nil:
		return b.opts.URL
	case b.opts.ListenLoopback:
		return b.srv.ClientURL()
	default:
		return ""
	}
}

// logURL is ClientURL without credentials.
func (b *Bus) logURL() string {
	if b.srv != nil && !b.opts.ListenLoopback {
		return "in-process"
	}
	return b.nc.ConnectedUrlRedacted()
}

// Conn is the underlying connection, for core (non-persistent) publish/subscribe such as live log
// fan-out. Use subjects under LiveSubjectRoot: anything under SubjectRoot is stored by the stream.
// The connection belongs to the Bus: do not close or drain it.
func (b *Bus) Conn() *nats.Conn { return b.nc }

// register adds s to the subscriptions Close stops; it fails once Close has begun.
func (b *Bus) register(s *Subscription) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing {
		return false
	}
	b.subs[s] = struct{}{}
	return true
}

func (b *Bus) unregister(s *Subscription) {
	b.mu.Lock()
	delete(b.subs, s)
	b.mu.Unlock()
}

func (b *Bus) isClosing() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closing
}

// serverLogger sends the embedded server's log to slog. Notices (start-up banner, config) go to
// Debug so a normal start stays quiet; warnings and errors keep their level.
type serverLogger struct{ log *slog.Logger }

var _ server.Logger = serverLogger{}

func (l serverLogger) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l serverLogger) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l serverLogger) Fatalf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l serverLogger) Errorf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l serverLogger) Debugf(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l serverLogger) Tracef(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
