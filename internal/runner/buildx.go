package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/pipeline/spec"
	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/runner/imagesign"
)

// CosignPasswordVar is the variable whose value opens an encrypted cosign key (cosign's own
// environment variable), normally from a secret context.
const CosignPasswordVar = "COSIGN_PASSWORD"

// platformTag is the tag suffix of a platform's image in a multi-platform build:
// linux/arm64/v8 → linux-arm64-v8.
func platformTag(p string) string { return strings.ReplaceAll(p, "/", "-") }

// buildPlatforms builds bs once per platform (each image tagged locally <first ref>-<os>-<arch>),
// pushes each image to the registry, then writes the multi-platform image: an index of them,
// tagged with every one of tags. It returns the pushed image and the first platform's image ID,
// or why it failed.
func (e *engine) buildPlatforms(ctx context.Context, st *spec.Step, builder executor.ImageBuilder, bs executor.BuildSpec, platforms []string,
	reg runnerv1.Registry, repo string, tags []string) (img runnerv1.Image, imageID, msg string) {
	img = runnerv1.Image{Registry: reg.Name, Repository: imageRef(reg.URL, repo, ""), Tags: tags}
	target := imageRef(reg.URL, repo, tags[0])
	ereg := executor.Registry{Name: reg.Name, URL: reg.URL, Username: reg.Username, Password: reg.Password, CA: reg.CA}
	var digests []string
	if len(bs.CacheFrom) > 0 || bs.CacheTo != "" {
		e.logf("step %s: cache_from and cache_to are not used by a multi-platform build", st.Name)
	}
	for _, p := range platforms {
		pb := bs
		// Buildah's layer cache does not tell platforms apart for a stage FROM scratch: the
		// second platform would get the first one's image. Each platform builds without it.
		pb.Platform, pb.NoCache, pb.CacheFrom, pb.CacheTo = p, true, nil, ""
		local := bs.Tags[0] + "-" + platformTag(p)
		pb.Tags = []string{local}
		e.logf("step %s (build) platform %s as %s", st.Name, p, local)
		res, err := builder.Build(ctx, e.ws, pb, e.out)
		switch {
		case err != nil:
			return img, "", err.Error()
		case res.Canceled || ctx.Err() != nil:
			return img, "", ""
		case res.Message != "":
			return img, "", fmt.Sprintf("platform %s: %s", p, res.Message)
		}
		if imageID == "" {
			imageID = res.ImageID
		}
		pr, err := builder.Push(ctx, executor.PushSpec{Name: st.Name, Source: local, Target: target, Registry: ereg}, e.out)
		switch {
		case err != nil:
			return img, "", err.Error()
		case pr.Message != "":
			return img, "", fmt.Sprintf("platform %s: %s", p, pr.Message)
		case pr.Digest == "":
			return img, "", fmt.Sprintf("platform %s: the registry did not give the pushed image's digest", p)
		}
		digests = append(digests, pr.Digest)
	}
	d, size, err := executor.PushIndex(ctx, ereg, imageRef(reg.URL, repo, ""), digests, tags)
	if err != nil {
		return img, "", fmt.Sprintf("push the multi-platform image %s to registry %s: %v", target, reg.Name, err)
	}
	img.Digest, img.Size = d, size
	e.logf("step %s: pushed %s@%s (%s)", st.Name, target, d, strings.Join(platforms, ", "))
	return img, imageID, ""
}

// signImage signs the pushed image repo@digest in reg with the step's cosign key, storing the
// signature in the registry as cosign does. It returns why it could not.
func (e *engine) signImage(ctx context.Context, st *spec.Step, c *spec.Cosign, reg runnerv1.Registry, repo, digest string) string {
	key := e.interp(c.Key)
	if strings.TrimSpace(key) == "" || strings.Contains(key, "${{") {
		return fmt.Sprintf("cosign.options.key %q has no value: give the private key through a secret context's variable", c.Key)
	}
	password, _ := e.lookup(CosignPasswordVar)
	signer, err := imagesign.LoadKey([]byte(key), []byte(password))
	if err != nil {
		return "cosign.options.key: " + strings.TrimPrefix(err.Error(), imagesign.ErrKey.Error()+": ")
	}
	ref, err := name.NewDigest(imageRef(reg.URL, repo, "") + "@" + digest)
	if err != nil {
		return fmt.Sprintf("sign %s@%s: %v", repo, digest, err)
	}
	ereg := executor.Registry{Name: reg.Name, URL: reg.URL, Username: reg.Username, Password: reg.Password, CA: reg.CA}
	tag, err := imagesign.Sign(ctx, ref, signer, executor.RemoteOptions(ctx, ereg)...)
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return ""
		}
		return fmt.Sprintf("sign %s in registry %s: %v", ref, reg.Name, err)
	}
	e.logf("step %s: signed %s (signature %s)", st.Name, ref, tag)
	return ""
}
