package server

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/analytics"
	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/cron"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/identity"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// Defaults.
const (
	DefaultUpListen        = "127.0.0.1:8080"
	DefaultServerListen    = ":8080"
	DefaultShutdownTimeout = 10 * time.Second
	dbFileName             = "freshet.db"
	minRunnerLeaseTTL      = 2 * time.Second
	// minRuntimeTokenTTL is the shortest --runtime-token-ttl: a runtime must have the time to
	// be installed with its token.
	minRuntimeTokenTTL = time.Hour
)

// Options configures the control plane. Every field is a flag, a FRESHET_* variable and a key
// of the config file (see internal/config).
type Options struct {
	Listen          string
	DataDir         string
	DB              string // SQLite path or postgres:// URL; empty: SQLite in DataDir
	NATS            string // external NATS URL(s); empty: embedded in DataDir
	NATSReplicas    int    // the event stream's replicas on a NATS cluster (0 means 1; 3 survives a node's loss)
	TLSCert         string
	TLSKey          string
	LogFormat       string
	LogLevel        string
	Account         string
	AdminEmail      string
	AdminPassword   string
	ShutdownTimeout time.Duration
	MasterKeyFile   string
	AdvertiseURL    string
	// PublicURL is the URL users reach the server at, for links the server hands out (a
	// build's CF_BUILD_URL); empty: the URL of the listen address.
	PublicURL string
	Cron      cron.Options
	// RunnerLeaseTTL is how long a build's lease lasts without a runner's heartbeat (0 means
	// runnerv1.LeaseTTL). A build whose runner went silent is requeued about this long after
	// its last heartbeat.
	RunnerLeaseTTL time.Duration
	// AnalyticsFailureWindow is how long after a deployment degraded health or a rollback
	// makes it a failed change (0 means analytics.DefaultFailureWindow).
	AnalyticsFailureWindow time.Duration
	// Net is the operator's policy for URLs from tenants: file:// repositories, private
	// networks, git provider hosts (see netpolicy).
	Net netpolicy.Options
	// StepCatalogURL is the git repository of typed plugin step definitions (NAME/step.yaml,
	// NAME/VERSION/step.yaml); empty: pipelines may use no typed plugin steps. The operator
	// sets it, so the tenants' network policy does not apply to it.
	StepCatalogURL string
	// StepCatalogRevision is the branch, tag or commit of the catalogue read (empty: its
	// default branch).
	StepCatalogRevision string
	// Billing is the plan catalogue and the default plan (see internal/billing).
	Billing billing.Options
	// SMTP is the operator's mail server for emailing password resets (see SMTPOptions).
	SMTP SMTPOptions
	// Hosted chooses where hosted runtimes run: in-process, or on a platform-managed cluster.
	Hosted HostedOptions
	// RuntimeTokenTTL is how long a hybrid runtime's token works after `freshet runtime
	// register` or `rotate-token` minted it; 0: forever (runtimes.Deps.TokenTTL).
	RuntimeTokenTTL time.Duration
}

// DefaultDataDir is $XDG_DATA_HOME/freshet, or ~/.local/share/freshet.
func DefaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "freshet")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "freshet")
	}
	return "freshet-data"
}

// BindFlags registers the options on fs with defaults for `freshet up` (local) or `freshet server`.
func (o *Options) BindFlags(fs *pflag.FlagSet, local bool) {
	listen := DefaultServerListen
	if local {
		listen = DefaultUpListen
	}
	fs.StringVar(&o.Listen, "listen", listen, "address to serve HTTP on (host:port; port 0 picks a free one)")
	fs.StringVar(&o.DataDir, "data-dir", DefaultDataDir(), "directory for the SQLite database, embedded NATS data and other state")
	fs.StringVar(&o.DB, "db", "", "database: a postgres:// URL, or a SQLite file path (default: freshet.db in --data-dir)")
	fs.StringVar(&o.NATS, "nats", "", "external NATS URL(s), comma separated (default: an embedded NATS JetStream server in --data-dir)")
	fs.IntVar(&o.NATSReplicas, "nats-replicas", 0, "replicas of the event stream on a NATS cluster, 1 to 5 (default 1; 3 survives the loss of a node; --nats only)")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "TLS certificate file (PEM); with --tls-key, serve HTTPS")
	fs.StringVar(&o.TLSKey, "tls-key", "", "TLS private key file (PEM)")
	fs.StringVar(&o.LogFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&o.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.Account, "account", identity.DefaultAccountName, "name of the first account, created on first start")
	fs.StringVar(&o.AdminEmail, "admin-email", identity.DefaultAdminEmail, "email of the first admin, created on first start")
	fs.StringVar(&o.AdminPassword, "admin-password", "", "password of the first admin (default: generated and printed once); prefer FRESHET_ADMIN_PASSWORD")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", DefaultShutdownTimeout, "how long to let requests finish on SIGINT/SIGTERM")
	o.Cron.BindFlags(fs)
	fs.DurationVar(&o.RunnerLeaseTTL, "runner-lease-ttl", runnerv1.LeaseTTL, "how long a build's lease lasts without a heartbeat from its runner (at least 2s); a silent runner's builds are requeued after about this long")
	fs.DurationVar(&o.AnalyticsFailureWindow, "analytics-failure-window", analytics.DefaultFailureWindow, "how long after a deployment a transition to Degraded or a rollback makes it a failed change (1m to 168h)")
	fs.StringVar(&o.PublicURL, "public-url", "", "the URL users reach Freshet at, for links in builds (CF_BUILD_URL) (default: the listen address's URL)")
	fs.StringVar(&o.AdvertiseURL, "advertise-url", "", "the URL other replicas reach this one at (needed with FRESHET_TUNNEL_HOP_SECRET to forward tunnel requests between replicas)")
	fs.StringVar(&o.MasterKeyFile, "master-key-file", "", "file of the master keys that encrypt secrets (default: FRESHET_MASTER_KEY, else master.key in --data-dir, created on first start)")
	netDefaults := netpolicy.ServerDefaults
	if local {
		netDefaults = netpolicy.LocalDefaults
	}
	o.Net.BindFlags(fs, netDefaults)
	fs.StringVar(&o.StepCatalogURL, "step-catalog-url", "", "git repository of typed plugin step definitions (NAME/step.yaml) that pipelines name with type: NAME[:VERSION] (default: none, such steps are refused)")
	fs.StringVar(&o.StepCatalogRevision, "step-catalog-revision", "", "branch, tag or commit of --step-catalog-url to read (default: its default branch)")
	fs.DurationVar(&o.RuntimeTokenTTL, "runtime-token-ttl", 0, "how long a hybrid runtime's token works after register or rotate-token (like 2160h for 90 days; at least 1h; 0: never expires); hosted runtimes' tokens never expire")
	o.Billing.BindFlags(fs)
	o.SMTP.BindFlags(fs)
	o.Hosted.BindFlags(fs)
}

// Validate checks the options and names the first bad one.
func (o *Options) Validate() error {
	if o.Listen == "" || !strings.Contains(o.Listen, ":") {
		return errdefs.Invalid("listen", o.Listen, "is not host:port (like 127.0.0.1:8080 or :8080)")
	}
	if o.DataDir == "" {
		return errdefs.Invalid("data-dir", "", "is empty")
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return errdefs.Invalid("tls-cert", o.TLSCert, "and --tls-key go together: give both or neither")
	}
	for _, f := range []struct{ name, path string }{{"tls-cert", o.TLSCert}, {"tls-key", o.TLSKey}} {
		if f.path != "" {
			if _, err := os.Stat(f.path); err != nil {
				return errdefs.Invalid(f.name, f.path, "cannot be read: "+err.Error())
			}
		}
	}
	switch o.LogFormat {
	case "text", "json":
	default:
		return errdefs.Invalid("log-format", o.LogFormat, "is not text or json")
	}
	if _, err := parseLevel(o.LogLevel); err != nil {
		return err
	}
	if o.NATS != "" && !strings.HasPrefix(o.NATS, "nats://") && !strings.HasPrefix(o.NATS, "tls://") {
		return errdefs.Invalid("nats", o.NATS, "is not a nats:// or tls:// URL")
	}
	switch {
	case o.NATSReplicas < 0 || o.NATSReplicas > bus.MaxReplicas:
		return errdefs.Invalid("nats-replicas", fmt.Sprint(o.NATSReplicas), fmt.Sprintf("must be between 1 and %d (0 means 1)", bus.MaxReplicas))
	case o.NATSReplicas > 1 && o.NATS == "":
		return errdefs.Invalid("nats-replicas", fmt.Sprint(o.NATSReplicas), "needs --nats: the embedded NATS server is a single node")
	}
	if o.ShutdownTimeout <= 0 {
		return errdefs.Invalid("shutdown-timeout", o.ShutdownTimeout.String(), "must be positive")
	}
	if o.RunnerLeaseTTL != 0 && o.RunnerLeaseTTL < minRunnerLeaseTTL {
		return errdefs.Invalid("runner-lease-ttl", o.RunnerLeaseTTL.String(), "must be at least "+minRunnerLeaseTTL.String()+" (runners renew leases every third of it)")
	}
	if w := o.AnalyticsFailureWindow; w != 0 && (w < time.Minute || w > 7*24*time.Hour) {
		return errdefs.Invalid("analytics-failure-window", w.String(), "must be between 1m and 168h")
	}
	if t := o.RuntimeTokenTTL; t != 0 && t < minRuntimeTokenTTL {
		return errdefs.Invalid("runtime-token-ttl", t.String(), "must be 0 (never expires) or at least "+minRuntimeTokenTTL.String())
	}
	if o.PublicURL != "" {
		if u, err := url.Parse(o.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errdefs.Invalid("public-url", o.PublicURL, "is not an http(s) URL (like https://freshet.example.com)")
		}
	}
	if o.StepCatalogURL != "" {
		if _, err := git.NormalizeURL(o.StepCatalogURL); err != nil {
			return errdefs.Invalid("step-catalog-url", o.StepCatalogURL, "is not a git repository URL: "+err.Error())
		}
	}
	if strings.HasPrefix(o.StepCatalogRevision, "-") {
		return errdefs.Invalid("step-catalog-revision", o.StepCatalogRevision, "is not a branch, tag or commit: none starts with '-'")
	}
	if err := o.Cron.Validate(); err != nil {
		return err
	}
	if err := o.Billing.Validate(); err != nil {
		return err
	}
	if err := o.SMTP.Validate(); err != nil {
		return err
	}
	if err := o.Hosted.Validate(o.PublicURL, o.Net); err != nil {
		return err
	}
	return o.Net.Validate()
}

// DSN returns the database to open: DB, or the SQLite file in DataDir.
func (o *Options) DSN() string {
	if o.DB != "" {
		return o.DB
	}
	return filepath.Join(o.DataDir, dbFileName)
}

func parseLevel(s string) (level int, err error) {
	switch s {
	case "debug":
		return -4, nil
	case "info":
		return 0, nil
	case "warn":
		return 4, nil
	case "error":
		return 8, nil
	}
	return 0, errdefs.Invalid("log-level", s, "is not debug, info, warn or error")
}

// Scheme is "https" when TLS is configured.
func (o *Options) Scheme() string {
	if o.TLSCert != "" {
		return "https"
	}
	return "http"
}

func (o *Options) String() string {
	return fmt.Sprintf("listen=%s data-dir=%s", o.Listen, o.DataDir)
}
