//go:build !linux

package local

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// errNoSandbox: isolation needs Linux namespaces.
var errNoSandbox = errors.New("isolated steps need Linux namespaces")

// startSandbox cannot isolate a step outside Linux.
func startSandbox(cfg sandboxConfig, out *os.File, tag string) (*exec.Cmd, sandboxStatus, error) {
	return nil, sandboxStatus{}, errNoSandbox
}

// probe reports that isolation is not available outside Linux.
func (l *Local) probe() error {
	return fmt.Errorf("%w: isolation %s: %v", ErrIsolationUnavailable, l.opts.Isolation, errNoSandbox)
}
