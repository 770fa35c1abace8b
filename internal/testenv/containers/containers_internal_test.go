package containers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tool's "cannot run here" exit codes (3: packages missing, 5: not root) become
// ErrUnavailable with the tool's message; any other failure stays a plain error.
func TestToolExitCodes(t *testing.T) {
	tmp := t.TempDir()
	for _, tc := range []struct {
		code        int
		message     string
		unavailable bool
	}{
		{3, "ctrenv registry: missing Debian packages: docker-registry; install them with `make containers-deps` (apt-get, as root)", true},
		{5, "ctrenv engine: the engine is rootful Podman and needs root", true},
		{1, "ctrenv engine: engine \"shared\": podman system service exited", false},
	} {
		tool := filepath.Join(tmp, fmt.Sprintf("ctrenv-%d", tc.code))
		script := fmt.Sprintf("#!/bin/sh\ncat >&2 <<'EOF'\n%s\nEOF\nexit %d\n", tc.message, tc.code)
		if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		e := &env{tool: tool, tmp: tmp, stateRoot: filepath.Join(tmp, "state")}
		_, err := e.run(t.Context(), "registry", "up")
		if errors.Is(err, ErrUnavailable) != tc.unavailable {
			t.Errorf("exit %d: %v; ErrUnavailable %v, want %v", tc.code, err, errors.Is(err, ErrUnavailable), tc.unavailable)
		}
		_, detail, _ := strings.Cut(tc.message, ": ")
		if err == nil || !strings.Contains(err.Error(), detail) {
			t.Errorf("exit %d: %v does not carry the tool's message", tc.code, err)
		}
	}
}

// fakeTB records what unavailable decides instead of ending the test.
type fakeTB struct {
	testing.TB
	skipped, failed string
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Skipf(format string, a ...any)  { f.skipped = fmt.Sprintf(format, a...) }
func (f *fakeTB) Fatalf(format string, a ...any) { f.failed = fmt.Sprintf(format, a...) }

func TestUnavailableSkipsOnlyWhenThisMachineCannot(t *testing.T) {
	notRoot := fmt.Errorf("%w: the engine is rootful Podman and needs root", ErrUnavailable)

	t.Setenv(EnvRequire, "")
	f := &fakeTB{TB: t}
	unavailable(f, notRoot)
	if f.failed != "" || !strings.Contains(f.skipped, "needs root") || !strings.Contains(f.skipped, "make containers-deps") {
		t.Errorf("not root: skipped %q failed %q; want a skip saying why and how to install", f.skipped, f.failed)
	}

	f = &fakeTB{TB: t}
	unavailable(f, errors.New("engine \"shared\": API not answering after 1m0s"))
	if f.skipped != "" || f.failed == "" {
		t.Errorf("a broken engine: skipped %q failed %q; want a failure", f.skipped, f.failed)
	}

	t.Setenv(EnvRequire, "1")
	f = &fakeTB{TB: t}
	unavailable(f, notRoot)
	if f.skipped != "" || !strings.Contains(f.failed, "FRESHET_TEST_CONTAINERS=1") {
		t.Errorf("FRESHET_TEST_CONTAINERS=1: skipped %q failed %q; want a failure", f.skipped, f.failed)
	}
}

func TestPinned(t *testing.T) {
	r := &RegistryInstance{Addr: "127.0.0.1:5000", Images: map[string]Image{ImageEcho: {Name: ImageEcho, Digest: "sha256:abc"}}}
	if got := r.Pinned(ImageEcho); got != "127.0.0.1:5000/freshet-test/echo@sha256:abc" {
		t.Errorf("Pinned = %s", got)
	}
	if got := r.Ref("team/app:1"); got != "127.0.0.1:5000/team/app:1" {
		t.Errorf("Ref = %s", got)
	}
}
