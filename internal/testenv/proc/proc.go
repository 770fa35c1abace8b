// Package proc has what the suites that drive real processes share: the freshet binary built
// once per test binary, a free loopback port, and a buffer that a process's output goroutine and
// the test may use at once.
package proc

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// BuildFreshet builds cmd/freshet into a new temporary directory and returns the binary's path
// and a function that removes it. Call it from TestMain; the build's output goes to stderr.
func BuildFreshet() (binary string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "freshet-bin-")
	if err != nil {
		return "", nil, err
	}
	binary = filepath.Join(dir, "freshet")
	build := exec.Command("go", "build", "-o", binary, "github.com/freshet-dev/freshet/cmd/freshet")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("build freshet: %w", err)
	}
	return binary, func() { os.RemoveAll(dir) }, nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Buffer is a bytes.Buffer that several goroutines (exec's output copier, a logger, the test)
// may share.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
