package workflows

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// Keys of workflow-controller-configmap (Argo's names) read besides artifactRepository.
const (
	// ControllerConfigMapImagesKey maps images to their ENTRYPOINT and CMD, so that a
	// container without command needs no registry lookup (Argo's `images`).
	ControllerConfigMapImagesKey = "images"
	// ControllerConfigMapDefaultsKey holds workflowDefaults: the metadata and spec every
	// Workflow starts from.
	ControllerConfigMapDefaultsKey = "workflowDefaults"
)

// Bounds of the image lookup.
const (
	maxControllerConfigBytes = 256 << 10
	maxImageEntries          = 1000 // of the images key
	imageCacheSize           = 512
	imageCacheTTL            = 10 * time.Minute // an entry by tag; by digest it is kept until evicted
	imageLookupTimeout       = 30 * time.Second
	controllerConfigTTL      = 10 * time.Second
	maxDockerConfigBytes     = 1 << 20
)

// ImageCommand is an image's ENTRYPOINT and CMD, as workflow-controller-configmap's `images`
// gives them (Argo's `entrypoint` and `cmd`) or the image's config holds them.
type ImageCommand struct {
	Entrypoint []string `json:"entrypoint,omitempty"`
	Cmd        []string `json:"cmd,omitempty"`
}

// controllerConfig is what the controller reads of the runtime's workflow-controller-configmap
// besides the artifact repository.
type controllerConfig struct {
	images map[string]ImageCommand
	// defaults is workflowDefaults (nil: none given).
	defaults *WorkflowDefaults
}

// DecodeControllerConfig reads the keys images and workflowDefaults of a
// workflow-controller-configmap's data; where names the ConfigMap in errors.
func DecodeControllerConfig(data map[string]string, where string) (map[string]ImageCommand, *WorkflowDefaults, error) {
	var images map[string]ImageCommand
	if s := data[ControllerConfigMapImagesKey]; s != "" {
		field := where + " key " + ControllerConfigMapImagesKey
		if len(s) > maxControllerConfigBytes {
			return nil, nil, errdefs.Invalid(field, fmt.Sprintf("%d bytes", len(s)), fmt.Sprintf("must be at most %d bytes", maxControllerConfigBytes))
		}
		if err := yaml.UnmarshalStrict([]byte(s), &images); err != nil {
			return nil, nil, errdefs.Invalid(field, "", "is not a map of image references to {entrypoint: [...], cmd: [...]}: "+err.Error())
		}
		if len(images) > maxImageEntries {
			return nil, nil, errdefs.Invalid(field, fmt.Sprintf("%d images", len(images)), fmt.Sprintf("must hold at most %d", maxImageEntries))
		}
		for ref, ic := range images {
			if _, err := name.ParseReference(ref); err != nil {
				return nil, nil, errdefs.Invalid(field, ref, "is not an image reference (e.g. docker/whalesay:latest)")
			}
			if len(ic.Entrypoint) == 0 && len(ic.Cmd) == 0 {
				return nil, nil, errdefs.Invalid(field+"."+ref, "", "needs an entrypoint or a cmd")
			}
		}
	}
	var defaults *WorkflowDefaults
	if s := data[ControllerConfigMapDefaultsKey]; s != "" {
		d, err := decodeWorkflowDefaults(s, where+" key "+ControllerConfigMapDefaultsKey)
		if err != nil {
			return nil, nil, err
		}
		defaults = d
	}
	return images, defaults, nil
}

// controllerConfig reads the runtime's workflow-controller-configmap, at most every
// controllerConfigTTL. A ConfigMap that does not decode is logged and read as empty.
func (c *Controller) controllerConfig(ctx context.Context) (*controllerConfig, error) {
	if c.opts.ConfigNamespace == "" {
		return &controllerConfig{}, nil
	}
	now := time.Now()
	c.cfgMu.Lock()
	if c.ctrlCfg != nil && now.Sub(c.cfgAt) < controllerConfigTTL {
		defer c.cfgMu.Unlock()
		return c.ctrlCfg, nil
	}
	c.cfgMu.Unlock()
	cm, err := c.kube.CoreV1().ConfigMaps(c.opts.ConfigNamespace).Get(ctx, ControllerConfigMap, metav1.GetOptions{})
	cfg := &controllerConfig{}
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("read ConfigMap %s/%s: %w", c.opts.ConfigNamespace, ControllerConfigMap, err)
	default:
		images, defaults, err := DecodeControllerConfig(cm.Data, "ConfigMap "+c.opts.ConfigNamespace+"/"+ControllerConfigMap)
		if err != nil {
			c.log.Error("workflow-controller-configmap ignored", logErr, err)
		} else {
			cfg.images, cfg.defaults = images, defaults
		}
	}
	c.cfgMu.Lock()
	c.ctrlCfg, c.cfgAt = cfg, now
	c.cfgMu.Unlock()
	return cfg, nil
}

// imageCommand implements cluster: the ENTRYPOINT and CMD of image as workflow-controller-
// configmap's images gives them, else from the image's config in its registry (read with the
// pull secrets' credentials for that registry, through the runtime's network policy), cached.
func (c *Controller) imageCommand(ctx context.Context, ns, image string, secrets []corev1.LocalObjectReference) (ImageCommand, error) {
	cfg, err := c.controllerConfig(ctx)
	if err != nil {
		return ImageCommand{}, err
	}
	if ic, ok := cfg.images[image]; ok {
		return ic, nil
	}
	ref, err := name.ParseReference(image)
	if err != nil {
		return ImageCommand{}, fmt.Errorf("%w: not an image reference", errdefs.ErrInvalid)
	}
	names := make([]string, 0, len(secrets))
	for _, s := range secrets {
		names = append(names, s.Name)
	}
	key := ns + "\x00" + strings.Join(names, ",") + "\x00" + ref.Name()
	_, pinned := ref.(name.Digest)
	c.imgMu.Lock()
	e, ok := c.imgCache[key]
	c.imgMu.Unlock()
	if ok && (pinned || time.Since(e.at) < imageCacheTTL) {
		return e.cmd, nil
	}
	auth, err := c.registryAuth(ctx, ns, secrets, ref.Context().Registry)
	if err != nil {
		return ImageCommand{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, imageLookupTimeout)
	defer cancel()
	ic, err := fetchImageCommand(ctx, ref, auth, c.opts.Policy)
	if err != nil {
		return ImageCommand{}, err
	}
	c.imgMu.Lock()
	if len(c.imgCache) >= imageCacheSize {
		oldest := ""
		for k, v := range c.imgCache {
			if oldest == "" || v.at.Before(c.imgCache[oldest].at) {
				oldest = k
			}
		}
		delete(c.imgCache, oldest)
	}
	c.imgCache[key] = imageEntry{cmd: ic, at: time.Now()}
	c.imgMu.Unlock()
	return ic, nil
}

type imageEntry struct {
	cmd ImageCommand
	at  time.Time
}

// fetchImageCommand reads the config of ref (for the platform linux/GOARCH of an index).
// Errors say what failed in words of the protocol, never echoing what the registry sent.
func fetchImageCommand(ctx context.Context, ref name.Reference, auth authn.Authenticator, policy *netpolicy.Policy) (ImageCommand, error) {
	rt := capBodies{policy.HTTPClient(0).Transport}
	img, err := remote.Image(ref, remote.WithContext(ctx), remote.WithAuth(auth), remote.WithTransport(rt),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))
	if err != nil {
		return ImageCommand{}, describeRegistryError(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return ImageCommand{}, describeRegistryError(err)
	}
	return ImageCommand{Entrypoint: cf.Config.Entrypoint, Cmd: cf.Config.Cmd}, nil
}

// maxRegistryBody bounds each answer of a registry read (an index, a manifest, a config,
// a token): go-containerregistry's own bound for manifests is 100 MiB.
const maxRegistryBody = 8 << 20

// capBodies cuts every answer's body at maxRegistryBody: reading past it is an error.
type capBodies struct{ rt http.RoundTripper }

func (c capBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &cappedBody{rc: resp.Body, left: maxRegistryBody}
	return resp, nil
}

type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

var errRegistryBody = fmt.Errorf("an answer of the registry is larger than %d MiB", maxRegistryBody>>20)

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errRegistryBody
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// describeRegistryError is why an image's config could not be read: the network policy's
// refusal, a connection failure, or the registry's HTTP status and error codes (Docker
// Registry API codes, a fixed set), never a body the registry sent.
func describeRegistryError(err error) error {
	if d := netpolicy.Describe(err); d != "" {
		return errors.New(d)
	}
	var te *transport.Error
	if errors.As(err, &te) {
		var codes []string
		for _, d := range te.Errors {
			if knownRegistryCodes[d.Code] && !slices.Contains(codes, string(d.Code)) {
				codes = append(codes, string(d.Code))
			}
		}
		msg := fmt.Sprintf("the registry answered HTTP %d", te.StatusCode)
		if len(codes) > 0 {
			msg += " (" + strings.Join(codes, ", ") + ")"
		}
		switch te.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			msg += ": no access with the workflow's imagePullSecrets (spec.imagePullSecrets)"
		case http.StatusNotFound:
			msg += ": no such image"
		}
		return errors.New(msg)
	}
	if errors.Is(err, errRegistryBody) {
		return errRegistryBody
	}
	if errors.Is(err, remote.ErrSchema1) {
		return errors.New("the image has a schema 1 manifest, which is not read")
	}
	return errors.New("its manifest or config could not be read")
}

var knownRegistryCodes = map[transport.ErrorCode]bool{
	transport.BlobUnknownErrorCode: true, transport.ManifestUnknownErrorCode: true, transport.NameUnknownErrorCode: true,
	transport.UnauthorizedErrorCode: true, transport.DeniedErrorCode: true, transport.UnsupportedErrorCode: true,
	transport.TooManyRequestsErrorCode: true, transport.NameInvalidErrorCode: true, transport.ManifestInvalidErrorCode: true,
}

// registryAuth is the credentials of the first pull secret with an entry for registry
// (anonymous when none has). A secret that is missing or does not decode is an error naming it.
func (c *Controller) registryAuth(ctx context.Context, ns string, secrets []corev1.LocalObjectReference, reg name.Registry) (authn.Authenticator, error) {
	for _, ref := range secrets {
		s, err := c.kube.CoreV1().Secrets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // as the kubelet: a missing pull secret is skipped
		}
		if err != nil {
			return nil, fmt.Errorf("read imagePullSecret %s: %w", ref.Name, err)
		}
		data, key := s.Data[corev1.DockerConfigJsonKey], corev1.DockerConfigJsonKey
		if data == nil {
			data, key = s.Data[corev1.DockerConfigKey], corev1.DockerConfigKey
		}
		if data == nil {
			continue
		}
		ac, ok, err := DockerConfigAuth(data, key == corev1.DockerConfigKey, reg.RegistryStr())
		if err != nil {
			return nil, fmt.Errorf("imagePullSecret %s key %s: %w", ref.Name, key, err)
		}
		if ok {
			return authn.FromConfig(ac), nil
		}
	}
	return authn.Anonymous, nil
}

type dockerAuth struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// DockerConfigAuth finds the credentials for registry (host[:port]) in a pull secret's
// .dockerconfigjson ({"auths": {...}}), or with legacy in a .dockercfg (the map itself). Keys
// may be URLs ("https://index.docker.io/v1/"); Docker Hub's names are one registry.
func DockerConfigAuth(data []byte, legacy bool, registry string) (authn.AuthConfig, bool, error) {
	if len(data) > maxDockerConfigBytes {
		return authn.AuthConfig{}, false, fmt.Errorf("%w: %d bytes; at most %d", errdefs.ErrInvalid, len(data), maxDockerConfigBytes)
	}
	var auths map[string]dockerAuth
	if legacy {
		if err := json.Unmarshal(data, &auths); err != nil {
			return authn.AuthConfig{}, false, fmt.Errorf("%w: not a .dockercfg map of registries to credentials", errdefs.ErrInvalid)
		}
	} else {
		var cfg struct {
			Auths map[string]dockerAuth `json:"auths"`
		}
		if err := json.Unmarshal(data, &cfg); err != nil {
			return authn.AuthConfig{}, false, fmt.Errorf("%w: not a .dockerconfigjson ({\"auths\": {registry: credentials}})", errdefs.ErrInvalid)
		}
		auths = cfg.Auths
	}
	want := registryHost(registry)
	keys := make([]string, 0, len(auths))
	for k := range auths {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the same answer each time when two keys name one registry
	for _, k := range keys {
		if registryHost(k) != want {
			continue
		}
		a := auths[k]
		ac := authn.AuthConfig{Username: a.Username, Password: a.Password, IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken}
		if a.Auth != "" {
			b, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return authn.AuthConfig{}, false, fmt.Errorf("%w: auths[%q].auth is not base64", errdefs.ErrInvalid, k)
			}
			u, p, ok := strings.Cut(string(b), ":")
			if !ok {
				return authn.AuthConfig{}, false, fmt.Errorf("%w: auths[%q].auth is not base64 of user:password", errdefs.ErrInvalid, k)
			}
			ac.Username, ac.Password = u, p
		}
		return ac, true, nil
	}
	return authn.AuthConfig{}, false, nil
}

// registryHost is a registry key's host[:port], lower case, Docker Hub's names as one.
func registryHost(k string) string {
	k = strings.ToLower(k)
	if i := strings.Index(k, "://"); i >= 0 {
		k = k[i+3:]
	}
	k, _, _ = strings.Cut(k, "/")
	switch k {
	case "docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com":
		return name.DefaultRegistry
	}
	return k
}

// containerCommand is the argv of a container without command, as the container runtime
// would run it: the image's ENTRYPOINT, then the container's args, or the image's CMD when
// it gives none.
func containerCommand(ic ImageCommand, args []string) []string {
	if len(args) > 0 {
		return append(slices.Clone(ic.Entrypoint), args...)
	}
	return append(slices.Clone(ic.Entrypoint), ic.Cmd...)
}
