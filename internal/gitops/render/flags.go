package render

import "github.com/spf13/pflag"

// BindFlags registers the renderer's limits as command-line flags.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.Concurrency, "render-concurrency", 0, "renders run at once (0: the number of CPUs)")
	fs.DurationVar(&o.Timeout, "render-timeout", DefaultTimeout, "time limit for one render")
	fs.Int64Var(&o.MaxFileBytes, "render-max-file-bytes", DefaultMaxFileBytes, "largest input file a render reads")
	fs.Int64Var(&o.MaxInputBytes, "render-max-input-bytes", DefaultMaxInputBytes, "most input one render reads")
	fs.Int64Var(&o.MaxOutputBytes, "render-max-output-bytes", DefaultMaxOutputBytes, "most rendered manifest bytes one render produces")
	fs.IntVar(&o.MaxObjects, "render-max-objects", DefaultMaxObjects, "most objects one render produces")
}
