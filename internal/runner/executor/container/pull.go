package container

import (
	"context"
	"fmt"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"

	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// pullPolicy returns the policy for image: p, or the default for the image's tag.
func pullPolicy(image, p string) string {
	if p != "" {
		return p
	}
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return executor.PullAlways
	}
	if _, ok := named.(reference.Digested); ok {
		return executor.PullIfNotPresent
	}
	if t, ok := named.(reference.Tagged); ok && t.Tag() != "latest" {
		return executor.PullIfNotPresent
	}
	return executor.PullAlways
}

// ensureImage makes image present on the engine as policy says. A message says why the image cannot be had (the step fails with
// it); an error is the engine's failure.
func (c *Container) ensureImage(ctx context.Context, image, policy string, regs []executor.Registry, o *executor.Output) (msg string, err error) {
	policy = pullPolicy(image, policy)
	if policy != executor.PullAlways {
		_, err := c.cli.ImageInspect(ctx, image)
		if err == nil {
			return "", nil
		}
		if !cerrdefs.IsNotFound(err) {
			return "", fmt.Errorf("inspect image %s: %w", image, err)
		}
		if policy == executor.PullNever {
			return fmt.Sprintf("image %s is not on the engine, and its pull_policy is Never", image), nil
		}
	}
	return c.pull(ctx, image, regs, o), nil
}

// pull pulls image with the credentials of the registry its host matches; it returns why it
// failed, naming the image and the registry context.
func (c *Container) pull(ctx context.Context, image string, regs []executor.Registry, o *executor.Output) string {
	reg, auth := registryFor(image, regs)
	via := ""
	if reg != nil {
		via = fmt.Sprintf(" (with the credentials of registry %s)", reg.Name)
	}
	o.Notice("pulling image %s%s", image, via)
	resp, err := c.cli.ImagePull(ctx, image, client.ImagePullOptions{RegistryAuth: auth})
	if err == nil {
		err = resp.Wait(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return "canceled while pulling image " + image
		}
		return fmt.Sprintf("image %s could not be pulled%s: %s", image, via, oneLine(err.Error()))
	}
	return ""
}

// registryFor returns the registry whose URL matches image (the longest match: host, then
// path prefix) and its credentials for the engine (X-Registry-Auth), or nil and "".
func registryFor(image string, regs []executor.Registry) (*executor.Registry, string) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return nil, ""
	}
	full := reference.Domain(named) + "/" + reference.Path(named)
	var best *executor.Registry
	for i := range regs {
		u := strings.TrimSuffix(hostPath(regs[i].URL), "/")
		if u == "" {
			continue
		}
		if full == u || strings.HasPrefix(full, u+"/") || reference.Domain(named) == u {
			if best == nil || len(hostPath(best.URL)) < len(u) {
				best = &regs[i]
			}
		}
	}
	if best == nil || (best.Username == "" && best.Password == "") {
		return best, ""
	}
	return best, encodeAuth(*best)
}

// hostPath strips a scheme from a registry URL.
func hostPath(u string) string {
	u = strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://")
	if u == "docker.io" || u == "index.docker.io" || u == "registry-1.docker.io" {
		return "docker.io"
	}
	return u
}

// encodeAuth is a registry's X-Registry-Auth value.
func encodeAuth(r executor.Registry) string {
	host := executor.RegistryHost(r.URL)
	s, _ := authconfig.Encode(registry.AuthConfig{Username: r.Username, Password: r.Password, ServerAddress: host})
	return s
}

// authConfigs are the credentials of every registry, by host, for the build API.
func authConfigs(regs []executor.Registry) map[string]registry.AuthConfig {
	m := map[string]registry.AuthConfig{}
	for _, r := range regs {
		host := executor.RegistryHost(r.URL)
		if host == "" || (r.Username == "" && r.Password == "") {
			continue
		}
		m[host] = registry.AuthConfig{Username: r.Username, Password: r.Password, ServerAddress: host}
	}
	return m
}
