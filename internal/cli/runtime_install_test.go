package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/runtimes/manifests"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

// `freshet runtime install --dry-run` prints what install applies: with --storage-size the
// runtime's data dir is on a claim of that size and class, without it (or with 0) on the pod's
// emptyDir, as before; bad values name the flag and the value. The dry run dials nothing.
func TestRuntimeInstallStorageFlags(t *testing.T) {
	const url = "https://freshet.example.test"
	dryRun := func(args ...string) (int, string, string) {
		t.Helper()
		return runIn(t, url, "fsk_unused", "", append([]string{"runtime", "install", "edge", "--dry-run"}, args...)...)
	}
	claim := "kind: PersistentVolumeClaim\n"
	mount := "claimName: " + manifests.DataClaimName + "\n"

	code, out, errOut := dryRun()
	if code != 0 {
		t.Fatalf("install --dry-run: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "kind: Deployment\n") || strings.Contains(out, claim) || strings.Contains(out, mount) {
		t.Errorf("install --dry-run without --storage-size has a data claim, or no Deployment:\n%s", out)
	}
	if code, out, errOut = dryRun("--storage-size", "0"); code != 0 || strings.Contains(out, claim) || strings.Contains(out, mount) {
		t.Errorf("--storage-size 0: exit %d (%s), a claim in:\n%s", code, errOut, out)
	}

	code, out, errOut = dryRun("--storage-size", "5Gi", "--storage-class", "fast-ssd")
	if code != 0 {
		t.Fatalf("--storage-size 5Gi: exit %d: %s", code, errOut)
	}
	for _, want := range []string{claim, "name: " + manifests.DataClaimName + "\n", "storage: 5Gi\n", "storageClassName: fast-ssd\n", mount,
		"mountPath: " + manifests.DataDir + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("--storage-size 5Gi --storage-class fast-ssd: the manifests lack %q:\n%s", want, out)
		}
	}
	if code, out, _ = dryRun("--storage-size", "2Gi"); code != 0 || !strings.Contains(out, "storage: 2Gi\n") || strings.Contains(out, "storageClassName") {
		t.Errorf("--storage-size 2Gi, the cluster's default class: exit %d:\n%s", code, out)
	}

	for _, c := range []struct {
		args []string
		says []string
	}{
		{[]string{"--storage-size", "lots"}, []string{"storage-size", `"lots"`, "0 for no data claim"}},
		{[]string{"--storage-size", "-1Gi"}, []string{"storage-size", `"-1Gi"`, "positive"}},
		{[]string{"--storage-size", "5Gi", "--storage-class", "Fast SSD"}, []string{"storage-class", `"Fast SSD"`, "storage class name"}},
		{[]string{"--storage-size", "0", "--storage-class", "fast-ssd"}, []string{"storage-class", `"fast-ssd"`, "--storage-size other than 0"}},
		{[]string{"--storage-class", "fast-ssd"}, []string{"storage-class", `"fast-ssd"`, "needs a data claim"}},
	} {
		code, out, errOut := dryRun(c.args...)
		if code == 0 {
			t.Errorf("%v: accepted:\n%s", c.args, out)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(errOut, s) {
				t.Errorf("%v: %q does not say %q", c.args, errOut, s)
			}
		}
	}
}

// `freshet runtime manifests` takes the same storage flags; its default is no claim.
func TestRuntimeManifestsStorageFlags(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	ctx := context.Background()
	key, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "edge"}); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		return runIn(t, s.URL, key.Token, "", append([]string{"runtime", "manifests", "edge"}, args...)...)
	}
	if code, out, errOut := run(); code != 0 || strings.Contains(out, "PersistentVolumeClaim") {
		t.Errorf("runtime manifests: exit %d (%s), a claim without --storage-size:\n%s", code, errOut, out)
	}
	if code, out, errOut := run("--storage-size", "3Gi", "--storage-class", "standard"); code != 0 ||
		!strings.Contains(out, "storage: 3Gi\n") || !strings.Contains(out, "storageClassName: standard\n") || !strings.Contains(out, "claimName: "+manifests.DataClaimName) {
		t.Errorf("runtime manifests --storage-size 3Gi: exit %d (%s):\n%s", code, errOut, out)
	}
	if code, _, errOut := run("--storage-size", "big"); code == 0 || !strings.Contains(errOut, `storage-size: "big"`) {
		t.Errorf("runtime manifests --storage-size big: exit %d: %s", code, errOut)
	}
}
