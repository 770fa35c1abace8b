package emissary_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/freshet-dev/freshet/internal/gitops/workflows/artifacts"
	"github.com/freshet-dev/freshet/internal/gitops/workflows/emissary"
	"github.com/freshet-dev/freshet/internal/testenv/s3env"
)

func runWith(t *testing.T, spec artifacts.Spec, args ...string) (int, emissary.Outputs, string) {
	t.Helper()
	term := filepath.Join(t.TempDir(), "termination-log")
	t.Setenv(emissary.EnvTerminationPath, term)
	b, _ := json.Marshal(spec)
	t.Setenv(emissary.EnvArtifacts, string(b))
	var stdout, stderr bytes.Buffer
	code := emissary.Main(append([]string{"run", "--artifacts", "--"}, args...), strings.NewReader(""), &stdout, &stderr)
	var out emissary.Outputs
	msg, _ := os.ReadFile(term)
	if err := json.Unmarshal(msg, &out); err != nil {
		t.Fatalf("termination message %q: %v", msg, err)
	}
	return code, out, stdout.String() + stderr.String()
}

// TestRunWithArtifacts: the emissary loads the input artifacts from a real S3-compatible
// server before the command runs, hides the credentials from it, and stores its outputs after;
// a missing input stops the command from running.
func TestRunWithArtifacts(t *testing.T) {
	srv := s3env.Start(t, s3env.Options{})
	srv.Bucket(t, "art")
	ctx := context.Background()
	if _, err := srv.Client(t).PutObject(ctx, "art", "in/plain.txt", strings.NewReader("from s3"), 7, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Setenv(emissary.EnvSecretPrefix+"0", srv.AccessKey)
	t.Setenv(emissary.EnvSecretPrefix+"1", srv.SecretKey)
	loc := func(key string) artifacts.Location {
		return artifacts.Location{S3: &artifacts.S3{Endpoint: srv.Endpoint, Bucket: "art", Key: key, Insecure: true,
			AccessKeyEnv: emissary.EnvSecretPrefix + "0", SecretKeyEnv: emissary.EnvSecretPrefix + "1"}}
	}
	dir := t.TempDir()
	spec := artifacts.Spec{PrivateNetworks: []string{"loopback"},
		Inputs: []artifacts.Input{{Name: "in", Path: dir + "/in/plain.txt", Location: loc("in/plain.txt")}},
		Outputs: []artifacts.Output{
			{Name: "out", Path: dir + "/out", Location: loc("out/out.tgz")},
			{Name: "maybe", Path: dir + "/nothing", Optional: true, Location: loc("out/maybe.tgz")},
			{Name: "must", Path: dir + "/missing", Location: loc("out/must.tgz")},
		}}
	script := `mkdir -p "$0/out" && tr a-z A-Z < "$0/in/plain.txt" > "$0/out/upper.txt" && env | grep -c -e FRESHET_ARTIFACT_SECRET -e FRESHET_EMISSARY_ARTIFACTS || true`
	code, out, log := runWith(t, spec, "sh", "-c", script, dir)
	if code != 0 {
		t.Fatalf("code %d: %s", code, log)
	}
	if strings.TrimSpace(log) != "0" && !strings.HasPrefix(log, "0\n") {
		t.Fatalf("the command saw the artifacts' variables: %q", log)
	}
	if out.Artifacts["out"] == 0 || out.ArtifactErrors["must"] == "" || out.ArtifactErrors["maybe"] != "" || out.Artifacts["maybe"] != 0 {
		t.Fatalf("outputs %+v", out)
	}
	// What it stored loads back.
	m := &artifacts.Mover{Getenv: os.Getenv}
	if err := m.Load(ctx, artifacts.Input{Name: "x", Path: dir + "/back", Location: loc("out/out.tgz")}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dir + "/back/upper.txt"); string(b) != "FROM S3" {
		t.Fatalf("stored %q", b)
	}

	// A missing input: the command does not run.
	spec.Inputs = []artifacts.Input{{Name: "gone", Path: dir + "/gone", Location: loc("no/such")}}
	code, out, _ = runWith(t, spec, "sh", "-c", "touch "+dir+"/ran")
	if code == 0 || !strings.Contains(out.InputError, `failed to load input artifact "gone"`) || !strings.Contains(out.InputError, "no such key") {
		t.Fatalf("code %d, %+v", code, out)
	}
	if _, err := os.Stat(dir + "/ran"); err == nil {
		t.Fatal("the command ran without its input")
	}
}
