package runner

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/gitops/engine/health"
	"github.com/freshet-dev/freshet/internal/pipeline/spec"
)

// Deploy and helm steps run in the runner itself, not in a step container: the runner applies
// manifests with server-side apply (as the GitOps engine does) and runs Helm through its SDK,
// with the credentials of the cluster context the step names, which the job carries for this
// build only. Files (manifests, charts, values files) are read from the build's workspace.

// Field managers of deploy steps: one owns what file_path applies; the other only the image
// (and pull secret) the service form sets, so that applying that small object does not drop
// the fields the first one owns (server-side apply removes a manager's fields it no longer
// sends).
const (
	deployFieldManager    = "freshet-deploy"
	candidateFieldManager = "freshet-deploy-candidate"
)

// Bounds on what a deploy step reads.
const (
	maxManifestBytes   = 8 << 20
	maxManifestObjects = 500
	rolloutPoll        = time.Second
)

// clusterConfig returns the client configuration of the cluster context name and, for Helm,
// its kubeconfig form with ns as the namespace of objects that name none.
func (e *engine) clusterConfig(name, ns string) (*rest.Config, clientcmd.ClientConfig, error) {
	i := slices.IndexFunc(e.job.Clusters, func(c runnerv1.Cluster) bool { return c.Name == name })
	if i < 0 {
		return nil, nil, fmt.Errorf("cluster context %q did not come with the build: list it in the pipeline's contexts", name)
	}
	c := e.job.Clusters[i]
	var api *clientcmdapi.Config
	if c.Kubeconfig != "" {
		var err error
		if api, err = clientcmd.Load([]byte(c.Kubeconfig)); err != nil {
			return nil, nil, fmt.Errorf("cluster context %q: kubeconfig: %w", name, err)
		}
	} else {
		api = clientcmdapi.NewConfig()
		api.Clusters[name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: []byte(c.CA)}
		api.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: c.Token}
		api.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
		api.CurrentContext = name
	}
	cc := clientcmd.NewDefaultClientConfig(*api, &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: ns}})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("cluster context %q: %w", name, err)
	}
	cfg.UserAgent = "freshet-runner"
	return cfg, cc, nil
}

// workspaceFile resolves a path a step names (relative to its working directory, itself
// relative to the workspace) to a file on the runner's host inside the workspace.
func (e *engine) workspaceFile(workDir, p string) (string, error) {
	root := e.ws.Path
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("the workspace %s is not on the runner's host (the %s executor keeps it elsewhere): deploy and helm steps read files only with the local and container executors", root, e.exec.Name())
	}
	base := root
	if wd := e.interp(workDir); wd != "" {
		if filepath.IsAbs(wd) {
			base = filepath.Clean(wd)
		} else {
			base = filepath.Join(root, wd)
		}
	}
	full := filepath.Clean(e.interp(p))
	if !filepath.IsAbs(full) {
		full = filepath.Join(base, full)
	}
	if rel, err := filepath.Rel(root, full); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside the workspace %s", p, root)
	}
	return full, nil
}

// kubeClient is a dynamic client and REST mapper for one cluster.
type kubeClient struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newKube(cfg *rest.Config) (*kubeClient, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &kubeClient{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}, nil
}

func (k *kubeClient) resource(obj *unstructured.Unstructured, ns string) (dynamic.ResourceInterface, schema.GroupVersionResource, string, error) {
	gvk := obj.GroupVersionKind()
	m, err := k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		k.mapper.Reset()
		m, err = k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, schema.GroupVersionResource{}, "", fmt.Errorf("%s %s: the cluster does not serve this kind: %w", gvk.Kind, obj.GetName(), err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		obj.SetNamespace("")
		return k.dyn.Resource(m.Resource), m.Resource, "", nil
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(ns)
	}
	return k.dyn.Resource(m.Resource).Namespace(obj.GetNamespace()), m.Resource, obj.GetNamespace(), nil
}

// readManifests reads the objects of a manifest file, or of the .yaml, .yml and .json files of
// a directory (not recursive), in name order.
func readManifests(path string, vars func(string) (string, bool)) (_ []*unstructured.Unstructured, missing []string, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	files := []string{path}
	if fi.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, nil, err
		}
		files = files[:0]
		for _, en := range ents {
			if ext := filepath.Ext(en.Name()); !en.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				files = append(files, filepath.Join(path, en.Name()))
			}
		}
		if len(files) == 0 {
			return nil, nil, fmt.Errorf("%s has no .yaml, .yml or .json files", path)
		}
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		if len(data) > maxManifestBytes {
			return nil, nil, fmt.Errorf("%s is larger than %d MiB", f, maxManifestBytes>>20)
		}
		tpl := templateManifest(data)
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(tpl.text), 4096)
		for n := 1; ; n++ {
			var m map[string]any
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, nil, fmt.Errorf("%s: document %d: %w", filepath.Base(f), n, err)
			}
			if len(m) == 0 {
				continue
			}
			m, _ = tpl.fill(m, vars, &missing).(map[string]any)
			u := &unstructured.Unstructured{Object: m}
			if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
				return nil, nil, fmt.Errorf("%s: document %d is not a Kubernetes object: it needs apiVersion, kind and metadata.name", filepath.Base(f), n)
			}
			if len(out) >= maxManifestObjects {
				return nil, nil, fmt.Errorf("more than %d objects", maxManifestObjects)
			}
			out = append(out, u)
		}
	}
	slices.Sort(missing)
	return out, slices.Compact(missing), nil
}

// setFirstImage sets the image of a Deployment's first container.
func setFirstImage(obj *unstructured.Unstructured, image string) error {
	cs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return fmt.Errorf("deployment %s has no containers", obj.GetName())
	}
	c0, ok := cs[0].(map[string]any)
	if !ok {
		return fmt.Errorf("deployment %s: its first container is not an object", obj.GetName())
	}
	c0["image"] = image
	return unstructured.SetNestedSlice(obj.Object, cs, "spec", "template", "spec", "containers")
}

var deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

// deploy runs a deploy step: apply, then wait for the Deployments to roll out.
func (e *engine) deploy(ctx context.Context, st *spec.Step) (spec.Result, int, int, string) {
	d := st.Deploy
	fail := func(format string, args ...any) (spec.Result, int, int, string) {
		return e.imageStepFailed(ctx, st, fmt.Sprintf(format, args...))
	}
	if d == nil {
		return fail("the step has no deploy settings")
	}
	cfg, _, err := e.clusterConfig(d.Cluster, "")
	if err != nil {
		return fail("%v", err)
	}
	k, err := newKube(cfg)
	if err != nil {
		return fail("cluster context %q: %v", d.Cluster, err)
	}
	ns, service := e.interp(d.Namespace), e.interp(d.Service)
	image := ""
	if d.Candidate != nil {
		if image = e.interp(d.Candidate.Image); image == "" {
			return fail("candidate.image %q is empty once its variables are set", d.Candidate.Image)
		}
	}
	var objs []*unstructured.Unstructured
	manager := deployFieldManager
	if d.FilePath != "" {
		path, err := e.workspaceFile(d.WorkingDir, d.FilePath)
		if err != nil {
			return fail("file_path: %v", err)
		}
		var missing []string
		if objs, missing, err = readManifests(path, e.lookup); err != nil {
			return fail("file_path %s: %v", d.FilePath, err)
		}
		if len(missing) > 0 {
			e.logf("step %s: %s: left as written, no such variable: {{%s}}", st.Name, d.FilePath, strings.Join(missing, "}}, {{"))
		}
		if image != "" {
			i := slices.IndexFunc(objs, func(o *unstructured.Unstructured) bool {
				return o.GroupVersionKind() == deploymentGVK && o.GetName() == service
			})
			if i < 0 {
				return fail("file_path %s has no Deployment named %s (service) to set candidate.image on", d.FilePath, service)
			}
			if err := setFirstImage(objs[i], image); err != nil {
				return fail("%v", err)
			}
		}
	} else {
		// The service form: the existing Deployment's first container gets the candidate.
		live, err := k.dyn.Resource(deploymentGVK.GroupVersion().WithResource("deployments")).Namespace(ns).Get(ctx, service, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fail("deployment %s does not exist in namespace %s of cluster context %q: create it first, or give file_path", service, ns, d.Cluster)
		}
		if err != nil {
			return fail("read deployment %s/%s: %v", ns, service, err)
		}
		cs, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
		c0, _ := firstOf(cs)
		name, _ := c0["name"].(string)
		if name == "" {
			return fail("deployment %s/%s has no containers", ns, service)
		}
		patch := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": service, "namespace": ns},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": name, "image": image}}}}}}}
		objs = []*unstructured.Unstructured{patch}
		manager = candidateFieldManager
	}
	// candidate.registry: the Deployment pulls with that registry context's credentials, kept
	// in the namespace as a pull secret (as Codefresh's deploy step does).
	if d.Candidate != nil && d.Candidate.Registry != "" && image != "" {
		reg, msg := e.registry(e.interp(d.Candidate.Registry))
		if msg != "" {
			return fail("candidate.registry: %s", msg)
		}
		secret, err := pullSecret(reg, ns)
		if err != nil {
			return fail("candidate.registry %s: %v", reg.Name, err)
		}
		for _, o := range objs {
			if o.GroupVersionKind() == deploymentGVK && o.GetName() == service {
				_ = unstructured.SetNestedSlice(o.Object, []any{map[string]any{"name": secret.GetName()}}, "spec", "template", "spec", "imagePullSecrets")
			}
		}
		objs = append([]*unstructured.Unstructured{secret}, objs...)
	}
	e.logf("step %s: deploying %d object(s) to cluster context %s, namespace %s", st.Name, len(objs), d.Cluster, ns)
	type rolled struct{ ns, name string }
	var deployments []rolled
	for _, o := range objs {
		ri, _, ons, err := k.resource(o, ns)
		if err != nil {
			return fail("%v", err)
		}
		before := ""
		if live, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{}); err == nil {
			before = live.GetResourceVersion()
		}
		out, err := ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: manager, Force: true})
		if err != nil {
			return fail("apply %s %s: %v", o.GetKind(), qualified(ons, o.GetName()), err)
		}
		what := "configured"
		switch {
		case before == "":
			what = "created"
		case out.GetResourceVersion() == before:
			what = "unchanged"
		}
		e.logf("step %s: %s %s %s", st.Name, strings.ToLower(o.GetKind()), qualified(ons, o.GetName()), what)
		if o.GroupVersionKind() == deploymentGVK {
			deployments = append(deployments, rolled{ons, o.GetName()})
		}
	}
	timeout := d.Timeout.Duration
	if timeout <= 0 {
		timeout = spec.DefaultDeployTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dep := k.dyn.Resource(deploymentGVK.GroupVersion().WithResource("deployments"))
	for _, r := range deployments {
		msg := ""
		for {
			live, err := dep.Namespace(r.ns).Get(wctx, r.name, metav1.GetOptions{})
			if err == nil {
				h := health.Assess(live)
				if h.Status == health.Healthy {
					e.logf("step %s: deployment %s rolled out", st.Name, qualified(r.ns, r.name))
					break
				}
				msg = h.Message
			} else if wctx.Err() == nil {
				msg = err.Error()
			}
			select {
			case <-wctx.Done():
				if ctx.Err() != nil {
					return spec.ResultTerminated, 0, 1, "terminated"
				}
				return fail("deployment %s did not roll out within %s: %s", qualified(r.ns, r.name), timeout, orNone(msg))
			case <-time.After(rolloutPoll):
			}
		}
	}
	return spec.ResultSuccess, 0, 1, ""
}

func firstOf(cs []any) (map[string]any, bool) {
	if len(cs) == 0 {
		return nil, false
	}
	m, ok := cs[0].(map[string]any)
	return m, ok
}

func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func orNone(s string) string {
	if s == "" {
		return "no status yet"
	}
	return s
}

// pullSecret is a kubernetes.io/dockerconfigjson Secret holding reg's credentials, named for
// the registry context.
func pullSecret(reg runnerv1.Registry, ns string) (*unstructured.Unstructured, error) {
	host, _, _ := strings.Cut(reg.URL, "/")
	auth := map[string]any{}
	if reg.Username != "" || reg.Password != "" {
		auth = map[string]any{"username": reg.Username, "password": reg.Password,
			"auth": base64.StdEncoding.EncodeToString([]byte(reg.Username + ":" + reg.Password))}
	}
	cfg, err := json.Marshal(map[string]any{"auths": map[string]any{host: auth}})
	if err != nil {
		return nil, err
	}
	name := strings.TrimRight("freshet-registry-"+strings.ToLower(strings.NewReplacer("_", "-", ".", "-").Replace(reg.Name)), "-")
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"app.kubernetes.io/managed-by": "freshet"}},
		"type":     "kubernetes.io/dockerconfigjson",
		"data":     map[string]any{".dockerconfigjson": base64.StdEncoding.EncodeToString(cfg)}}}, nil
}

// placeholder is Codefresh's deploy-step template: {{NAME}} or {{ NAME }}, replaced by the
// build variable NAME.
var placeholder = regexp.MustCompile(`\{\{ *([A-Za-z_][A-Za-z0-9_]*) *\}\}`)

// manifestTemplate is a manifest file whose {{NAME}} placeholders were replaced by tokens that
// are plain YAML scalars, so that a variable's value is put into the parsed objects as data:
// whatever it holds (a newline, a colon, a quote), it cannot change the manifest's structure.
type manifestTemplate struct {
	text  []byte
	names map[string]string // token → variable name
	token *regexp.Regexp
}

func templateManifest(data []byte) manifestTemplate {
	t := manifestTemplate{text: data, names: map[string]string{}}
	if !placeholder.Match(data) {
		return t
	}
	var salt [6]byte
	_, _ = rand.Read(salt[:])
	prefix := "freshettpl" + hex.EncodeToString(salt[:]) + "x"
	t.token = regexp.MustCompile(prefix + `[0-9]+x`)
	byName := map[string]string{}
	t.text = placeholder.ReplaceAllFunc(data, func(m []byte) []byte {
		name := string(placeholder.FindSubmatch(m)[1])
		tok, ok := byName[name]
		if !ok {
			tok = prefix + strconv.Itoa(len(byName)) + "x"
			byName[name], t.names[tok] = tok, name
		}
		return []byte(tok)
	})
	return t
}

// fill returns v with the tokens replaced by the variables' values (vars), or by the
// placeholder as written for a name that is no variable (added to missing). A value that is a
// whole scalar becomes a number or a boolean when it reads as one (replicas: {{REPLICAS}}).
func (t manifestTemplate) fill(v any, vars func(string) (string, bool), missing *[]string) any {
	if t.token == nil {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(t.fill(k, vars, missing))] = t.fill(e, vars, missing)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = t.fill(e, vars, missing)
		}
		return x
	case string:
		whole := t.names[x] != ""
		s := t.token.ReplaceAllStringFunc(x, func(tok string) string {
			name := t.names[tok]
			if val, ok := vars(name); ok {
				return val
			}
			*missing = append(*missing, name)
			return "{{" + name + "}}"
		})
		if whole && s != "{{"+t.names[x]+"}}" {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return n
			}
			if b, err := strconv.ParseBool(s); err == nil && (s == "true" || s == "false") {
				return b
			}
		}
		return s
	}
	return v
}
