package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
)

// `freshet runtime --hosted` (what the Kubernetes provisioner runs) is a hosted runtime: CD
// only, its own cluster not a destination, and without --repo a local installation repository
// under its data dir, as the in-process hosted runtimes have.
func TestHostedFlag(t *testing.T) {
	dir := t.TempDir()
	var o Options
	fs := pflag.NewFlagSet("runtime", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--server", "https://freshet.example.test", "--token", "frt_x", "--data-dir", dir, "--hosted"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if !o.CDOnly || !o.NoInCluster {
		t.Fatalf("--hosted: CDOnly %v, NoInCluster %v; want both", o.CDOnly, o.NoInCluster)
	}
	repo := filepath.Join(dir, "installation.git")
	if o.InstallRepo.URL == "" {
		t.Fatal("--hosted without --repo: no installation repository")
	}
	if _, err := os.Stat(filepath.Join(repo, "HEAD")); err != nil {
		t.Fatalf("the local installation repository: %v", err)
	}

	// Without --hosted, none of it.
	var h Options
	fs = pflag.NewFlagSet("runtime", pflag.ContinueOnError)
	h.BindFlags(fs)
	if err := fs.Parse([]string{"--server", "https://freshet.example.test", "--token", "frt_x", "--data-dir", t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	if h.CDOnly || h.NoInCluster || h.InstallRepo.URL != "" {
		t.Fatalf("a hybrid runtime: %+v", h)
	}
}
