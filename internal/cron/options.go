package cron

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// MissedPolicy says what the leader does with runs whose time passed while no replica was
// firing (downtime, or the gap of a failover).
type MissedPolicy string

// Missed-run policies.
const (
	// MissedSkip fires only runs at most Options.Grace late; older missed runs are dropped.
	MissedSkip MissedPolicy = "skip"
	// MissedOnce fires the most recent run within Options.MissedWindow, once, and drops the
	// older ones, like a Kubernetes CronJob with startingDeadlineSeconds.
	MissedOnce MissedPolicy = "once"
	// MissedAll fires every run within Options.MissedWindow, oldest first, but at most the
	// Options.MaxCatchUp most recent ones.
	MissedAll MissedPolicy = "all"
)

// Executor defaults and limits.
const (
	DefaultMissed         = MissedOnce
	DefaultMissedWindow   = 24 * time.Hour
	MaxMissedWindow       = 31 * 24 * time.Hour
	DefaultMaxCatchUp     = 10
	MaxCatchUpLimit       = 1000
	DefaultGrace          = time.Minute
	DefaultReloadInterval = 30 * time.Second
	MinReloadInterval     = time.Second
	DefaultFireTimeout    = 30 * time.Second
	DefaultFireAttempts   = 5
	MaxFireAttempts       = 100
	// DefaultRetention is how long run records are kept at least (and at least twice the
	// missed-run window); each schedule's latest record is kept regardless.
	DefaultRetention = 7 * 24 * time.Hour
)

func (p *MissedPolicy) String() string { return string(*p) }

// Set implements pflag.Value.
func (p *MissedPolicy) Set(s string) error {
	switch v := MissedPolicy(s); v {
	case MissedSkip, MissedOnce, MissedAll:
		*p = v
		return nil
	}
	return fmt.Errorf("%q is not a missed-run policy: use skip, once or all", s)
}

// Type implements pflag.Value.
func (p *MissedPolicy) Type() string { return "policy" }

// Options configures the cron executor and its leader election. Zero values mean the defaults.
type Options struct {
	// LeaseTTL is how long the leader's lease lasts without renewal (default 15s). A crashed
	// leader is replaced after about LeaseTTL to 4/3 LeaseTTL.
	LeaseTTL time.Duration
	// Missed is the missed-run policy (default once).
	Missed MissedPolicy
	// MissedWindow is how far back once and all look for missed runs (default 24h).
	MissedWindow time.Duration
	// MaxCatchUp bounds how many missed runs of one schedule all fires (default 10).
	MaxCatchUp int
	// Grace is how late a run may be and still count as on time (default 1m): the only runs
	// skip fires. Keep it above 4/3 LeaseTTL so a failover does not drop a run under skip.
	Grace time.Duration
	// ReloadInterval is how often the leader reloads schedules (default 30s); Reload reloads
	// at once.
	ReloadInterval time.Duration
	// FireTimeout bounds one call of the fire function (default 30s). A run claimed by a leader
	// that stopped is retried by the next one once its attempt is this old.
	FireTimeout time.Duration
	// FireAttempts bounds the attempts at one run that fails temporarily (default 5).
	FireAttempts int
}

// BindFlags registers the options as command-line flags on fs.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.LeaseTTL, "cron-lease-ttl", o.LeaseTTL, "cron leader lease TTL: a failed leader is replaced after about this long (default 15s)")
	fs.Var(&o.Missed, "cron-missed", "what to do with cron runs missed during downtime or failover: skip, once (the most recent, once) or all (default once)")
	fs.DurationVar(&o.MissedWindow, "cron-missed-window", o.MissedWindow, "how far back missed cron runs are still fired (default 24h)")
	fs.IntVar(&o.MaxCatchUp, "cron-max-catch-up", o.MaxCatchUp, "with --cron-missed=all, most missed runs fired per schedule (default 10)")
	fs.DurationVar(&o.Grace, "cron-grace", o.Grace, "how late a cron run may be and still count as on time (default 1m)")
	fs.DurationVar(&o.ReloadInterval, "cron-reload-interval", o.ReloadInterval, "how often the cron leader reloads cron triggers (default 30s)")
	fs.DurationVar(&o.FireTimeout, "cron-fire-timeout", o.FireTimeout, "timeout for queueing one cron run (default 30s)")
	fs.IntVar(&o.FireAttempts, "cron-fire-attempts", o.FireAttempts, "attempts at a cron run that fails temporarily (default 5)")
}

// Validate reports every invalid option, naming the flag, its value and what is valid. Zero
// values are valid and mean the defaults.
func (o *Options) Validate() error {
	var errs []error
	bad := func(field string, v any, reason string) {
		errs = append(errs, errdefs.Invalid(field, fmt.Sprint(v), reason))
	}
	d := o.withDefaults()
	if o.LeaseTTL < 0 || o.LeaseTTL != 0 && o.LeaseTTL < MinLeaseTTL {
		bad("cron-lease-ttl", o.LeaseTTL, fmt.Sprintf("must be at least %s (0 means %s)", MinLeaseTTL, DefaultLeaseTTL))
	}
	if o.Missed != "" {
		if err := new(MissedPolicy).Set(string(o.Missed)); err != nil {
			bad("cron-missed", o.Missed, "must be skip, once or all (empty means "+string(DefaultMissed)+")")
		}
	}
	if o.MissedWindow < 0 || o.MissedWindow > MaxMissedWindow {
		bad("cron-missed-window", o.MissedWindow, fmt.Sprintf("must be between 1m and %s (0 means %s)", MaxMissedWindow, DefaultMissedWindow))
	} else if o.MissedWindow != 0 && o.MissedWindow < time.Minute {
		bad("cron-missed-window", o.MissedWindow, fmt.Sprintf("must be at least 1m (0 means %s)", DefaultMissedWindow))
	}
	if o.MaxCatchUp < 0 || o.MaxCatchUp > MaxCatchUpLimit {
		bad("cron-max-catch-up", o.MaxCatchUp, fmt.Sprintf("must be between 1 and %d (0 means %d)", MaxCatchUpLimit, DefaultMaxCatchUp))
	}
	if o.Grace < 0 || d.Grace > d.MissedWindow {
		bad("cron-grace", o.Grace, fmt.Sprintf("must be between 0 and the missed-run window %s (0 means %s)", d.MissedWindow, DefaultGrace))
	}
	if o.ReloadInterval < 0 || o.ReloadInterval != 0 && o.ReloadInterval < MinReloadInterval {
		bad("cron-reload-interval", o.ReloadInterval, fmt.Sprintf("must be at least %s (0 means %s)", MinReloadInterval, DefaultReloadInterval))
	}
	if o.FireTimeout < 0 || o.FireTimeout != 0 && o.FireTimeout < time.Second {
		bad("cron-fire-timeout", o.FireTimeout, fmt.Sprintf("must be at least 1s (0 means %s)", DefaultFireTimeout))
	}
	if o.FireAttempts < 0 || o.FireAttempts > MaxFireAttempts {
		bad("cron-fire-attempts", o.FireAttempts, fmt.Sprintf("must be between 1 and %d (0 means %d)", MaxFireAttempts, DefaultFireAttempts))
	}
	return errors.Join(errs...)
}

// withDefaults returns a copy of o with zero values replaced by the defaults.
func (o Options) withDefaults() Options {
	if o.LeaseTTL == 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Missed == "" {
		o.Missed = DefaultMissed
	}
	if o.MissedWindow == 0 {
		o.MissedWindow = DefaultMissedWindow
	}
	if o.MaxCatchUp == 0 {
		o.MaxCatchUp = DefaultMaxCatchUp
	}
	if o.Grace == 0 {
		o.Grace = DefaultGrace
	}
	if o.ReloadInterval == 0 {
		o.ReloadInterval = DefaultReloadInterval
	}
	if o.FireTimeout == 0 {
		o.FireTimeout = DefaultFireTimeout
	}
	if o.FireAttempts == 0 {
		o.FireAttempts = DefaultFireAttempts
	}
	return o
}

// retention is how long run records are kept: at least DefaultRetention and twice the window,
// so a record is never pruned while the run could still be fired as missed.
func (o Options) retention() time.Duration { return max(DefaultRetention, 2*o.MissedWindow) }
