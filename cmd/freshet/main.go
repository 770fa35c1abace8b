// Command freshet is the whole Freshet delivery platform in one binary: the control plane
// (freshet server), the all-in-one mode (freshet up) and the CLI.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/freshet-dev/freshet/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
