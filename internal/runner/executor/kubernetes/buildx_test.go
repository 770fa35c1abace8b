package kubernetes

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// TestBuilderScriptsPlatformsAndCache runs the builder pod's scripts with the real buildah and
// the loopback registry as the runner drives them for a build step with cache_to and for a
// multi-platform build: a build exporting its layer cache (--layers --cache-to) fills the cache
// repository; then one build per platform (FROM scratch, no RUN: nothing foreign executes)
// pushed to the same target, and the index the runner writes (executor.PushIndex) lists both
// platforms, each image's config naming its architecture.
func TestBuilderScriptsPlatformsAndCache(t *testing.T) {
	e := newScriptEnv(t)
	ws := executor.Workspace{BuildID: "b1", Path: e.ws, Handle: ClaimName("b1")}
	e.write(t, map[string]string{
		"app/Dockerfile": "FROM scratch\nCOPY hello.txt /hello.txt\n",
		"app/hello.txt":  "hello\n",
	})
	auth := filepath.Join(e.dir, "auth.json")
	writeAuth(t, auth, e.reg.Addr, e.reg.Username, e.reg.Password)
	creds := []string{"--authfile", auth, "--cert-dir", e.reg.CertDir}
	reg := executor.Registry{Name: "loopback", URL: e.reg.Addr, Username: e.reg.Username, Password: e.reg.Password, CA: string(e.reg.CACert)}
	repo := e.reg.Ref("freshet-test/script-" + strings.ToLower(t.Name()))

	// cache_to
	args, dir, msg := buildArgs(ws, executor.BuildSpec{ContextDir: filepath.Join(e.ws, "app"), Tags: []string{repo + ":cached"}, CacheTo: repo + "-cache"})
	if msg != "" {
		t.Fatal(msg)
	}
	code, out, term := e.run(t, buildScript, filepath.Join(e.ws, imagesSubdir, "cached.tar"), append(append(args, creds...), dir)...)
	if code != 0 || !strings.HasPrefix(term, msgBuilt) {
		t.Fatalf("build with --cache-to: exit %d, termination message %q\n%s", code, term, out)
	}
	cache, err := name.NewRepository(repo + "-cache")
	if err != nil {
		t.Fatal(err)
	}
	if tags, err := remote.List(cache, executor.RemoteOptions(t.Context(), reg)...); err != nil || len(tags) == 0 {
		t.Errorf("cache repository %s: tags %v, %v\n%s", cache, tags, err, out)
	}

	// several platforms
	var digests []string
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		local := repo + ":v1-" + strings.ReplaceAll(p, "/", "-")
		args, dir, msg := buildArgs(ws, executor.BuildSpec{ContextDir: filepath.Join(e.ws, "app"), Tags: []string{local}, Platform: p, NoCache: true})
		if msg != "" {
			t.Fatal(msg)
		}
		archive := filepath.Join(e.ws, imagesSubdir, strings.ReplaceAll(p, "/", "-")+".tar")
		if code, out, term := e.run(t, buildScript, archive, append(args, dir)...); code != 0 || !strings.HasPrefix(term, msgBuilt) {
			t.Fatalf("build for %s: exit %d, termination message %q\n%s", p, code, term, out)
		}
		code, out, term := e.run(t, pushScript, archive, append([]string{repo + ":v1"}, creds...)...)
		if code != 0 || !strings.HasPrefix(term, msgPushed+"sha256:") {
			t.Fatalf("push for %s: exit %d, termination message %q\n%s", p, code, term, out)
		}
		digests = append(digests, strings.TrimPrefix(term, msgPushed))
	}
	d, _, err := executor.PushIndex(t.Context(), reg, repo, digests, []string{"v1"})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(repo + ":v1")
	idx, err := remote.Index(ref, executor.RemoteOptions(t.Context(), reg)...)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := idx.Digest()
	var platforms []string
	for _, m := range im.Manifests {
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if m.Platform == nil || cf.Architecture != m.Platform.Architecture {
			t.Errorf("%s: index says %v, config %s", m.Digest, m.Platform, cf.Architecture)
			continue
		}
		platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
	}
	if got.String() != d || !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("index %s (PushIndex said %s) of %v", got, d, platforms)
	}
}
