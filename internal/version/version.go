// Package version reports the build's version, set at link time with
// -ldflags "-X github.com/freshet-dev/freshet/internal/version.Version=v1.2.3".
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release version; "dev" for builds from source.
var Version = "dev"

// Commit returns the VCS revision the binary was built from, if known.
func Commit() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return s.Value[:12]
			}
		}
	}
	return "unknown"
}

// String describes the build in one line.
func String() string {
	return fmt.Sprintf("freshet %s (commit %s, %s, %s/%s)", Version, Commit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
