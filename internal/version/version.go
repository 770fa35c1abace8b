// Package version reports the build's version, set at link time with
// -ldflags "-X github.com/freshet-dev/freshet/internal/version.Version=v1.2.3".
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync/atomic"
)

// Version is the release version; "dev" for builds from source.
var Version = "dev"

var override atomic.Pointer[string]

// Current is the version the control plane compares agents' versions with: Version, unless
// Override set another. Safe to read while Override runs.
func Current() string {
	if v := override.Load(); v != nil {
		return *v
	}
	return Version
}

// Override makes Current answer v until the function it returns is called (a test of the skew
// policy; goroutines of a stopped server may still read it, so it is not a plain write to
// Version).
func Override(v string) (restore func()) {
	override.Store(&v)
	return func() { override.Store(nil) }
}

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
