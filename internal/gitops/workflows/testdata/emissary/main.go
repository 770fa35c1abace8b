// Command emissary is a small stand-in for the freshet binary in the real-node test's executor
// image: `emissary emissary ARGS` runs what `freshet emissary ARGS` runs, without building all
// of freshet.
package main

import (
	"fmt"
	"os"

	"github.com/freshet-dev/freshet/internal/gitops/workflows/emissary"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "emissary" {
		fmt.Fprintln(os.Stderr, "usage: emissary emissary init|run …")
		os.Exit(2)
	}
	os.Exit(emissary.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
}
