package bus

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Defaults and limits of the bus configuration.
const (
	// DefaultStream is the JetStream stream that holds every durable Freshet event.
	DefaultStream = "FRESHET"
	// SubjectRoot is the first token of every durable subject; the stream captures SubjectRoot+".>".
	SubjectRoot = "freshet"
	// LiveSubjectRoot is the first token of core (non-persistent) subjects, such as live build
	// log fan-out. It is deliberately outside SubjectRoot so the stream never stores them.
	LiveSubjectRoot = "freshet-live"
	// DefaultReplicas is the stream replica count when Options.Replicas is 0.
	DefaultReplicas = 1
	// MaxReplicas is the largest replica count JetStream allows.
	MaxReplicas = 5
	// DefaultDuplicateWindow is how long JetStream remembers a Nats-Msg-Id to drop a retried publish.
	DefaultDuplicateWindow = 2 * time.Minute
	// MinDuplicateWindow is the smallest duplicate window JetStream accepts.
	MinDuplicateWindow = 100 * time.Millisecond
	// StreamMaxAge bounds how long an event stays in the stream. A durable consumer that is away
	// longer than this misses the events that aged out.
	StreamMaxAge = 7 * 24 * time.Hour
	// LedgerRetention is how long a Ledger must remember a handled key: a message older than
	// the stream's MaxAge can no longer be delivered again; a day more covers clock skew and a
	// redelivery that started just before the message aged out.
	LedgerRetention = StreamMaxAge + 24*time.Hour

	// embeddedServerName names the embedded server in its own logs and in client INFO.
	embeddedServerName = "freshet-embedded"
	// embeddedStartTimeout bounds how long Open waits for the embedded server to be ready.
	embeddedStartTimeout = 10 * time.Second
	// drainTimeout bounds how long Close waits for the connection to drain.
	drainTimeout = 5 * time.Second
	// clientName is the NATS client name Freshet connects with.
	clientName = "freshet"
)

// ErrInvalidOptions is wrapped by every error Options.Validate and the SubOptions return.
var ErrInvalidOptions = errors.New("invalid bus options")

// Options configures the bus. A zero URL means an embedded server.
type Options struct {
	// URL lists external NATS server URLs, comma separated. Empty runs an embedded server.
	URL string
	// DataDir is the JetStream storage directory of the embedded server (required when embedded;
	// ignored when URL is set).
	DataDir string
	// ListenLoopback makes the embedded server also listen on a random 127.0.0.1 port, so other
	// processes can connect through ClientURL. By default the embedded server has no listener.
	ListenLoopback bool
	// Stream is the JetStream stream name (default DefaultStream). Its subjects are SubjectRoot+".>".
	Stream string
	// Replicas is the stream replica count on a clustered external NATS (default 1).
	Replicas int
	// DuplicateWindow is the JetStream deduplication window (default 2m).
	DuplicateWindow time.Duration
}

// BindFlags registers the options as command-line flags on fs.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.URL, "nats-url", o.URL, "external NATS server URL(s), comma separated; empty runs an embedded NATS server")
	fs.StringVar(&o.DataDir, "nats-data-dir", o.DataDir, "JetStream storage directory of the embedded NATS server")
	fs.BoolVar(&o.ListenLoopback, "nats-listen-loopback", o.ListenLoopback, "embedded NATS: also listen on a random 127.0.0.1 port for other processes")
	fs.StringVar(&o.Stream, "nats-stream", o.Stream, "JetStream stream name (default "+DefaultStream+")")
	fs.IntVar(&o.Replicas, "nats-replicas", o.Replicas, "stream replicas on a clustered external NATS (default 1)")
	fs.DurationVar(&o.DuplicateWindow, "nats-duplicate-window", o.DuplicateWindow, "JetStream deduplication window for idempotency keys (default 2m)")
}

// Validate reports every invalid field, naming the field, its value and what is valid.
// Zero values are valid and mean the documented defaults.
func (o *Options) Validate() error {
	var errs []error
	bad := func(field string, value any, valid string) {
		errs = append(errs, fmt.Errorf("%w: %s = %q: %s", ErrInvalidOptions, field, fmt.Sprint(value), valid))
	}
	embedded := strings.TrimSpace(o.URL) == ""
	if embedded {
		if strings.TrimSpace(o.DataDir) == "" {
			bad("DataDir", o.DataDir, "required when URL is empty (the embedded server stores JetStream data there)")
		}
	} else {
		for u := range strings.SplitSeq(o.URL, ",") {
			if err := checkURL(strings.TrimSpace(u)); err != nil {
				bad("URL", redactURL(u), err.Error())
			}
		}
		if o.ListenLoopback {
			bad("ListenLoopback", o.ListenLoopback, "only valid with the embedded server (empty URL)")
		}
	}
	if o.Stream != "" && !validName(o.Stream) {
		bad("Stream", o.Stream, "use letters, digits, '-' and '_' only (empty means "+DefaultStream+")")
	}
	switch {
	case o.Replicas < 0 || o.Replicas > MaxReplicas:
		bad("Replicas", o.Replicas, fmt.Sprintf("must be between 1 and %d (0 means %d)", MaxReplicas, DefaultReplicas))
	case embedded && o.Replicas > 1:
		bad("Replicas", o.Replicas, "the embedded server is a single node: use 1 (or 0), or set URL to a NATS cluster")
	}
	if o.DuplicateWindow != 0 && (o.DuplicateWindow < MinDuplicateWindow || o.DuplicateWindow > StreamMaxAge) {
		bad("DuplicateWindow", o.DuplicateWindow, fmt.Sprintf("must be between %s and %s (0 means %s)", MinDuplicateWindow, StreamMaxAge, DefaultDuplicateWindow))
	}
	return errors.Join(errs...)
}

// withDefaults returns a copy of o with zero values replaced by the defaults.
func (o Options) withDefaults() Options {
	o.URL = strings.TrimSpace(o.URL)
	if o.Stream == "" {
		o.Stream = DefaultStream
	}
	if o.Replicas == 0 {
		o.Replicas = DefaultReplicas
	}
	if o.DuplicateWindow == 0 {
		o.DuplicateWindow = DefaultDuplicateWindow
	}
	return o
}

// checkURL accepts nats://, tls://, ws://, wss:// URLs and bare host:port (nats.go assumes nats://).
func checkURL(raw string) error {
	if raw == "" {
		return errors.New("empty entry in the comma-separated list")
	}
	s := raw
	if !strings.Contains(s, "://") {
		s = "nats://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("not a URL; want nats://host:port, tls://host:port, ws(s)://host:port or host:port")
	}
	switch u.Scheme {
	case "nats", "tls", "ws", "wss":
	default:
		return fmt.Errorf("scheme %q not supported; want nats, tls, ws or wss", u.Scheme)
	}
	if u.Hostname() == "" {
		return errors.New("missing host; want nats://host:port")
	}
	return nil
}

// redactURL hides a password in a URL so it can appear in an error message.
func redactURL(raw string) string {
	s := strings.TrimSpace(raw)
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}

// validName reports whether s can name a stream or a durable consumer: it must be usable as a
// subject token and as a file name on the server.
func validName(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
		default:
			return false
		}
	}
	return true
}
