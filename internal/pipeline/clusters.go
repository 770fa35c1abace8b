package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/pipeline/spec"
	"github.com/freshet-dev/freshet/internal/store"
)

// Cluster and Helm repository contexts are stored like the others, as a JSON object of strings
// with these keys; the secret ones are encrypted under the same AAD as a secret context's value.
// They are written and read as the context's values, with these keys and no others.
const (
	// kubernetes: a kubeconfig (its current context is used), or server + token (+ ca).
	clusterKubeconfig = "kubeconfig"
	clusterServer     = "server"
	clusterToken      = "token"
	clusterCA         = "ca"
	// helm-repository: url, and optional basic auth and CA.
	helmRepoURL      = "url"
	helmRepoUsername = "username"
	helmRepoPassword = "password"
	helmRepoCA       = "ca"
)

// typedKeys are the keys a typed context's values may have; secretKeys those kept encrypted.
var (
	typedKeys = map[string][]string{
		ContextKubernetes: {clusterKubeconfig, clusterServer, clusterToken, clusterCA},
		ContextHelmRepo:   {helmRepoURL, helmRepoUsername, helmRepoPassword, helmRepoCA},
	}
	secretKeys = map[string][]string{
		ContextKubernetes: {clusterKubeconfig, clusterToken},
		ContextHelmRepo:   {helmRepoPassword},
	}
)

// sealTyped checks a kubernetes or helm-repository context's values and returns them as
// stored, the secret ones encrypted. old is the context it replaces (nil when created): a secret
// value of MaskedValue keeps old's, but only while every other value stays the same, so
// whoever may edit contexts but not read secrets cannot send a stored token or password to a
// server of their choosing.
func (s *Service) sealTyped(accountID, name, typ string, in map[string]string, old *store.ConfigContext) (string, error) {
	if in == nil {
		in = map[string]string{}
	}
	keys := typedKeys[typ]
	for k, v := range in {
		if !slices.Contains(keys, k) {
			return "", errdefs.Invalid("values."+k, "", fmt.Sprintf("is not a key of a %s context: give %s", typ, strings.Join(keys, ", ")))
		}
		if len(v) > maxContextValueBytes {
			return "", errdefs.Invalid("values."+k, "", fmt.Sprintf("is larger than %d KiB", maxContextValueBytes>>10))
		}
	}
	was, err := storedValues(old)
	if err != nil {
		return "", err
	}
	var bounds []boundTo // every value that is not a secret
	for _, k := range keys {
		if !slices.Contains(secretKeys[typ], k) {
			bounds = append(bounds, boundTo{"values." + k, was[k], in[k]})
		}
	}
	kept := map[string]string{}
	for _, k := range secretKeys[typ] {
		if in[k] != MaskedValue {
			continue
		}
		if kept[k], err = keepMasked("values."+k, was[k], bounds...); err != nil {
			return "", err
		}
	}
	switch typ {
	case ContextKubernetes:
		err = s.checkCluster(in)
	case ContextHelmRepo:
		err = s.checkHelmRepo(in)
	}
	if err != nil {
		return "", err
	}
	stored := map[string]string{}
	for k, v := range in {
		if v == "" {
			continue
		}
		switch {
		case v == MaskedValue && slices.Contains(secretKeys[typ], k):
			v = kept[k]
		case slices.Contains(secretKeys[typ], k):
			ct, err := s.keys.Encrypt([]byte(v), contextAAD(accountID, name, k))
			if err != nil {
				return "", err
			}
			v = ct
		}
		stored[k] = v
	}
	return encodeJSON(stored), nil
}

// checkCluster checks a kubernetes context: a kubeconfig whose current context names a
// cluster, or a server URL with a bearer token, and the servers allowed by the network policy.
func (s *Service) checkCluster(v map[string]string) error {
	if v[clusterKubeconfig] != "" {
		if v[clusterServer] != "" || v[clusterToken] != "" || v[clusterCA] != "" {
			return errdefs.Invalid("values.kubeconfig", "", "is given with server, token or ca: give a kubeconfig, or server and token, not both")
		}
		if v[clusterKubeconfig] == MaskedValue {
			return nil // kept as stored, and checked when it was
		}
		cfg, err := clientcmd.Load([]byte(v[clusterKubeconfig]))
		if err != nil {
			return errdefs.Invalid("values.kubeconfig", "", "is not a kubeconfig: "+err.Error())
		}
		kc, ok := cfg.Contexts[cfg.CurrentContext]
		if cfg.CurrentContext == "" || !ok {
			return errdefs.Invalid("values.kubeconfig", cfg.CurrentContext, "has no current-context naming one of its contexts: set current-context")
		}
		cl, ok := cfg.Clusters[kc.Cluster]
		if !ok {
			return errdefs.Invalid("values.kubeconfig", kc.Cluster, "has a current context whose cluster is not in its clusters")
		}
		if au, ok := cfg.AuthInfos[kc.AuthInfo]; ok && (au.Exec != nil || au.AuthProvider != nil || au.TokenFile != "" || au.ClientCertificate != "" || au.ClientKey != "") {
			return errdefs.Invalid("values.kubeconfig", kc.AuthInfo, "has a user that runs a program, uses an auth provider or reads files: give a token or client certificate data in the kubeconfig itself")
		}
		if cl.CertificateAuthority != "" {
			return errdefs.Invalid("values.kubeconfig", kc.Cluster, "names a certificate-authority file: give certificate-authority-data")
		}
		return s.checkServer("values.kubeconfig", cl.Server)
	}
	if v[clusterServer] == "" {
		return errdefs.Invalid("values.server", "", "is required: give server (https://host:port) and token, or kubeconfig")
	}
	if v[clusterToken] == "" {
		return errdefs.Invalid("values.token", "", "is required with server: give a service account's bearer token")
	}
	if v[clusterCA] != "" {
		if err := checkCA("values.ca", v[clusterCA]); err != nil {
			return err
		}
	}
	return s.checkServer("values.server", v[clusterServer])
}

func (s *Service) checkServer(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" || u.User != nil {
		return errdefs.Invalid(field, raw, "is not a Kubernetes API server URL: give https://host[:port]")
	}
	if s.net != nil {
		return s.net.CheckServerURL(field, raw)
	}
	return nil
}

// checkHelmRepo checks a helm-repository context.
func (s *Service) checkHelmRepo(v map[string]string) error {
	raw := v[helmRepoURL]
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "oci" || u.Host == "" {
		return errdefs.Invalid("values.url", raw, "is not a chart repository URL: give http(s)://host/path or an OCI registry's oci://host/path (cm:// and cloud-specific schemes are not supported)")
	}
	if u.User != nil {
		return errdefs.Invalid("values.url", "", "carries credentials: give them as username and password")
	}
	if (v[helmRepoUsername] == "") != (v[helmRepoPassword] == "") {
		return errdefs.Invalid("values.password", "", "and username come together: give both for basic authentication, or neither")
	}
	if v[helmRepoCA] != "" {
		if err := checkCA("values.ca", v[helmRepoCA]); err != nil {
			return err
		}
	}
	if s.net != nil {
		return s.net.CheckServerURL("values.url", raw)
	}
	return nil
}

// ErrClusterNotAllowed: a step names a kubernetes context its pipeline may not use.
var ErrClusterNotAllowed = fmt.Errorf("cluster context not allowed: %w", errdefs.ErrForbidden)

// checkClusters refuses a build whose deploy or helm steps name a cluster context the
// pipeline may not use: one that is not a kubernetes context of the account, or that the
// pipeline does not list among its contexts. It runs before the build starts, naming the step
// and the context.
func (s *Service) checkClusters(ctx context.Context, accountID string, cfg Config, p *spec.Pipeline) error {
	for _, u := range p.Clusters() {
		if !slices.Contains(cfg.Contexts, u.Context) {
			return fmt.Errorf("%w: step %s (%s) deploys to cluster context %q, which this pipeline may not use: add it to the pipeline's contexts (config.contexts)",
				ErrClusterNotAllowed, u.Step, u.Path, u.Context)
		}
		c, err := s.db.GetContext(ctx, accountID, u.Context)
		if errors.Is(err, errdefs.ErrNotFound) {
			return fmt.Errorf("%w: step %s (%s) names cluster context %q, which does not exist", ErrClusterNotAllowed, u.Step, u.Path, u.Context)
		}
		if err != nil {
			return err
		}
		if c.Type != ContextKubernetes {
			return fmt.Errorf("%w: step %s (%s) names context %q, a %s context, as its cluster: give a kubernetes context", ErrClusterNotAllowed, u.Step, u.Path, u.Context, c.Type)
		}
	}
	return nil
}

// jobCluster returns kubernetes context c, decrypted, as a job carries it.
func (s *Service) jobCluster(c store.ConfigContext) (runnerv1.Cluster, error) {
	v, err := s.contextValues(c)
	if err != nil {
		return runnerv1.Cluster{}, err
	}
	return runnerv1.Cluster{Name: c.Name, Kubeconfig: v[clusterKubeconfig], Server: v[clusterServer], Token: v[clusterToken], CA: v[clusterCA]}, nil
}

// jobHelmRepo returns helm-repository context c, decrypted, as a job carries it.
func (s *Service) jobHelmRepo(c store.ConfigContext) (runnerv1.HelmRepo, error) {
	v, err := s.contextValues(c)
	if err != nil {
		return runnerv1.HelmRepo{}, err
	}
	return runnerv1.HelmRepo{Name: c.Name, URL: v[helmRepoURL], Username: v[helmRepoUsername], Password: v[helmRepoPassword], CA: v[helmRepoCA]}, nil
}

// clusterSecrets are the values of cl to mask in a build's log: the token, the kubeconfig, and
// the credentials inside the kubeconfig, which a step could print on their own.
func clusterSecrets(cl runnerv1.Cluster) []string {
	out := []string{cl.Token, cl.Kubeconfig}
	if cfg, err := clientcmd.Load([]byte(cl.Kubeconfig)); err == nil && cl.Kubeconfig != "" {
		for _, au := range cfg.AuthInfos {
			out = append(out, au.Token, au.Password, string(au.ClientKeyData))
		}
	}
	return out
}
