package runner

import (
	"context"
	"crypto/elliptic"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/runner/imagesign"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
)

// registryGet reads path of the registry's API with its credentials.
func registryGet(t *testing.T, reg *containers.RegistryInstance, path, accept string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "https://"+reg.Addr+path, nil)
	req.SetBasicAuth(reg.Username, reg.Password)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := reg.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

const (
	acceptIndex    = "application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.index.v1+json"
	acceptManifest = "application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json"
)

// TestContainerMultiPlatformSigned builds a Dockerfile without RUN (nothing of a foreign
// architecture has to execute) for linux/amd64 and linux/arm64 with buildx and signs the pushed
// image with an encrypted cosign key from secret variables; another build exports its layer
// cache to the registry (cache_to). Read back through the registry's API: a manifest list of both platforms
// under both tags, each platform's config naming its architecture, the cache in the cache
// repository, and a signature that verifies against the public key. A key variable without a
// value fails its step, after the push, naming the field.
func TestContainerMultiPlatformSigned(t *testing.T) {
	reg := containers.Registry(t)
	busybox := reg.Ref(containers.ImageBusybox)
	repo := fmt.Sprintf("freshet-runner-test/multi-%d", time.Now().UnixNano())
	priv, pub, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc([]byte("pa55-word")))
	if err != nil {
		t.Fatal(err)
	}
	r := runOnEngineWith(t, `version: '1.0'
steps:
  prepare:
    image: `+busybox+`
    commands: ["echo multi > msg.txt"]
  multi:
    type: build
    image_name: `+repo+`
    tags: [v1, latest]
    platform: linux/amd64,linux/arm64
    buildx: true
    dockerfile:
      content: |
        FROM scratch
        COPY msg.txt /msg.txt
    cosign:
      sign: true
      options:
        key: ${{COSIGN_PRIVATE_KEY}}
  cached:
    type: build
    image_name: `+repo+`-cached
    cache_to: [`+reg.Addr+"/"+repo+`-cache]
    dockerfile:
      content: |
        FROM scratch
        COPY msg.txt /msg.txt
  unset_key:
    type: build
    image_name: `+repo+`-single
    tag: v1
    dockerfile:
      content: |
        FROM scratch
        COPY msg.txt /msg.txt
    cosign:
      sign: true
      options:
        key: ${{NO_SUCH_KEY}}
`, nil, map[string]string{"COSIGN_PRIVATE_KEY": string(priv), "COSIGN_PASSWORD": "pa55-word"}, []string{string(priv), "pa55-word"})
	if r.states["prepare"].Status != "success" || r.states["multi"].Status != "success" || r.states["cached"].Status != "success" {
		t.Fatalf("steps %+v (%s); log:\n%s", r.states, r.reason, r.log)
	}
	if r.status != stFailed || !strings.Contains(r.reason, `cosign.options.key "${{NO_SUCH_KEY}}" has no value`) {
		t.Errorf("build %s (%s), want unset_key to fail naming cosign.options.key", r.status, r.reason)
	}
	if lines := strings.Split(string(priv), "\n"); strings.Contains(r.log, lines[2]) || strings.Contains(r.log, "pa55-word") {
		t.Errorf("the log shows the key or its password:\n%s", r.log)
	}
	for _, s := range []string{"multi", "cached"} {
		t.Logf("step %s: %s", s, r.states[s].FinishedAt.Sub(r.states[s].StartedAt))
	}
	built := r.images["multi"]
	if len(built) != 1 || !slices.Equal(built[0].Tags, []string{"v1", "latest"}) || !strings.HasPrefix(built[0].Digest, "sha256:") {
		t.Fatalf("multi pushed %+v", built)
	}
	if r.vars["multi.digest"] != built[0].Digest || r.vars["multi"] != reg.Addr+"/"+repo+":v1" {
		t.Errorf("variables multi=%q multi.digest=%q", r.vars["multi"], r.vars["multi.digest"])
	}

	// Both tags are the manifest list, of one image per platform.
	var index struct {
		MediaType string `json:"mediaType"`
		Manifests []struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
			Platform  struct {
				OS           string `json:"os"`
				Architecture string `json:"architecture"`
			} `json:"platform"`
		} `json:"manifests"`
	}
	for _, tag := range []string{"v1", "latest"} {
		resp, body := registryGet(t, reg, "/v2/"+repo+"/manifests/"+tag, acceptIndex)
		if resp.StatusCode != 200 || resp.Header.Get("Docker-Content-Digest") != built[0].Digest {
			t.Fatalf("%s:%s: %d %s, want %s", repo, tag, resp.StatusCode, resp.Header.Get("Docker-Content-Digest"), built[0].Digest)
		}
		if err := json.Unmarshal(body, &index); err != nil {
			t.Fatal(err)
		}
	}
	if index.MediaType != "application/vnd.docker.distribution.manifest.list.v2+json" && index.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Errorf("%s:v1 is a %s, want an index", repo, index.MediaType)
	}
	var archs []string
	for _, m := range index.Manifests {
		archs = append(archs, m.Platform.OS+"/"+m.Platform.Architecture)
		// The platform's image: its config names the same architecture.
		resp, body := registryGet(t, reg, "/v2/"+repo+"/manifests/"+m.Digest, acceptManifest)
		var man struct {
			Config struct{ Digest string } `json:"config"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(body, &man) != nil {
			t.Fatalf("%s@%s: %d %s", repo, m.Digest, resp.StatusCode, body)
		}
		resp, body = registryGet(t, reg, "/v2/"+repo+"/blobs/"+man.Config.Digest, "")
		var cfg struct{ OS, Architecture string }
		if resp.StatusCode != 200 || json.Unmarshal(body, &cfg) != nil || cfg.Architecture != m.Platform.Architecture || cfg.OS != "linux" {
			t.Errorf("config of %s: %d %s, want %s", m.Platform.Architecture, resp.StatusCode, body, m.Platform.Architecture)
		}
	}
	if !slices.Equal(archs, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64; log:\n%s", archs, r.log)
	}

	// cache_to: the builder pushed its layer cache to the cache repository.
	resp, body := registryGet(t, reg, "/v2/"+repo+"-cache/tags/list", "")
	var tags struct{ Tags []string }
	if resp.StatusCode != 200 || json.Unmarshal(body, &tags) != nil || len(tags.Tags) == 0 {
		t.Errorf("cache repository %s-cache: %d %s", repo, resp.StatusCode, body)
	}

	// The signature verifies against the public key, for the index's digest.
	ctx := context.Background()
	digest, err := name.NewDigest(reg.Addr + "/" + repo + "@" + built[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	pubKey, err := cryptoutils.UnmarshalPEMToPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	opts := executor.RemoteOptions(ctx, executor.Registry{URL: reg.Addr, Username: reg.Username, Password: reg.Password, CA: string(reg.CACert)})
	if n, err := imagesign.Verify(ctx, digest, pubKey, opts...); n != 1 || err != nil {
		t.Errorf("cosign signature of %s: %d verified, %v", digest, n, err)
	}
	// The step that failed signing pushed its image but left no signature.
	single := r.states["unset_key"]
	if single.Status != "failed" {
		t.Errorf("unset_key: %+v", single)
	}
}
