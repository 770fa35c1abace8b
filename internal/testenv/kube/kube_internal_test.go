package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Without built binaries the tool exits with its "not built" code, which the helper turns
// into ErrNoBinaries: the one error Shared and New skip on (unless FRESHET_TEST_KUBE=1).
func TestMissingBinariesIsErrNoBinaries(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("FRESHET_DEVCLUSTER_CACHE", filepath.Join(tmp, "empty-cache"))
	e := &env{tmp: tmp, stateRoot: filepath.Join(tmp, "state"), tool: filepath.Join(tmp, "devcluster")}
	if err := buildTool(e.tool); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := e.run(ctx, "up", "--name", "nobin")
	if !errors.Is(err, ErrNoBinaries) {
		t.Fatalf("up with an empty cache: err = %v, want ErrNoBinaries", err)
	}
	if !strings.Contains(err.Error(), "kube-apiserver") {
		t.Fatalf("error %q does not say what is missing", err)
	}
	if left := processesUnder(tmp); len(left) > 0 {
		t.Fatalf("processes left: %v", left)
	}
	if _, err := os.Stat(filepath.Join(e.stateRoot, "nobin", "run", "etcd.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed up wrote pid files: %v", err)
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

func TestUnavailableSkipsOnlyForMissingBinaries(t *testing.T) {
	noBin := fmt.Errorf("%w (kube-apiserver missing)", ErrNoBinaries)

	t.Setenv(EnvRequire, "")
	f := &fakeTB{TB: t}
	unavailable(f, noBin)
	if f.failed != "" || !strings.Contains(f.skipped, "make devcluster-build") {
		t.Errorf("missing binaries: skipped %q failed %q; want a skip saying how to build them", f.skipped, f.failed)
	}

	f = &fakeTB{TB: t}
	unavailable(f, errors.New("kube-apiserver: not healthy after 2m"))
	if f.skipped != "" || f.failed == "" {
		t.Errorf("a broken cluster: skipped %q failed %q; want a failure", f.skipped, f.failed)
	}

	t.Setenv(EnvRequire, "1")
	f = &fakeTB{TB: t}
	unavailable(f, noBin)
	if f.skipped != "" || !strings.Contains(f.failed, "make devcluster-build") {
		t.Errorf("FRESHET_TEST_KUBE=1: skipped %q failed %q; want a failure saying how to build them", f.skipped, f.failed)
	}
}
