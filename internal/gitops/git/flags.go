package git

import "github.com/spf13/pflag"

// BindFlags registers the cache's options as command-line flags (the wiring in
// internal/agent or the CLI calls it; the Logger is set in code).
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.Timeout, "git-timeout", DefaultTimeout, "time limit for one git network operation (ls-remote, fetch, push)")
	fs.DurationVar(&o.RefsTTL, "git-refs-ttl", DefaultRefsTTL, "how long one ref advertisement answers every lookup of a repository (webhooks invalidate it)")
	fs.Int64Var(&o.MaxCheckoutBytes, "git-max-checkout-bytes", DefaultMaxCheckoutBytes, "largest checkout, in bytes of files")
	fs.Int64Var(&o.MaxFileBytes, "git-max-file-bytes", DefaultMaxFileBytes, "largest single file read from a repository")
	fs.IntVar(&o.PushAttempts, "git-push-attempts", DefaultPushAttempts, "pushes tried before a commit gives up when the branch keeps moving")
}
