package install

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/errdefs"
	kubeexec "github.com/freshet-dev/freshet/internal/runner/executor/kubernetes"
	"github.com/freshet-dev/freshet/internal/runtimes/manifests"
)

// RunnerControlPlane is what the runner installer needs of the control plane's API
// (client.Client).
type RunnerControlPlane interface {
	BaseURL() string
	RegisterRunner(ctx context.Context, r client.RegisterRunnerRequest) (client.RegisteredRunner, error)
	ListRunners(ctx context.Context) (client.List[client.Runner], error)
	DeleteRunner(ctx context.Context, ref string) error
}

// RunnerOptions describe one runner installation: the manifests' options (the token and the
// runner's ID are filled by the installer) and how long to wait for the runner to connect.
type RunnerOptions struct {
	manifests.RunnerOptions
	// Wait is how long to wait until the runner is connected; 0 does not wait.
	Wait time.Duration
}

// RunnerInstaller installs and uninstalls runners (`freshet runner install`) the way Installer
// does runtimes: pre-checks, registration, server-side apply, a wait; every step idempotent.
type RunnerInstaller struct {
	*Installer
	rcp RunnerControlPlane
}

// NewRunner returns a runner installer for the cluster cfg reaches; progress goes to out.
func NewRunner(cp RunnerControlPlane, cfg *rest.Config, out io.Writer) (*RunnerInstaller, error) {
	in, err := New(nil, cfg, out)
	if err != nil {
		return nil, err
	}
	return &RunnerInstaller{Installer: in, rcp: cp}, nil
}

func (o *RunnerOptions) defaults(cp RunnerControlPlane) error {
	if o.Server == "" {
		o.Server = cp.BaseURL()
	}
	o.RoleYAML = kubeexec.RoleYAML
	return o.Validate()
}

// RunnerDryRun prints the manifests a runner install would apply (the token left out) and
// changes nothing.
func RunnerDryRun(cp RunnerControlPlane, o RunnerOptions, out io.Writer) error {
	if err := o.defaults(cp); err != nil {
		return err
	}
	objs, err := manifests.RunnerObjects(o.RunnerOptions)
	if err != nil {
		return err
	}
	y, err := manifests.YAML(objs)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "# freshet runner install %s --dry-run: nothing was registered or applied.\n# The Secret %s/%s with the runner's token is created at install time.\n",
		o.Name, o.Namespace, manifests.RunnerTokenSecretName)
	_, err = out.Write(y)
	return err
}

// Install checks the cluster and the permissions, registers the runner (or resumes an
// interrupted install with the token the cluster holds), applies its objects and waits until
// it is connected.
func (ri *RunnerInstaller) Install(ctx context.Context, o RunnerOptions) error {
	if err := o.defaults(ri.rcp); err != nil {
		return err
	}
	var id, token string
	steps := []struct {
		name string
		fn   func() (string, error)
	}{
		{"cluster reachable", func() (string, error) { return ri.checkCluster() }},
		{"permissions", func() (string, error) { return ri.checkRunnerPermissions(ctx, o) }},
		{"runner name", func() (s string, err error) {
			id, token, s, err = ri.checkRunnerName(ctx, o)
			return s, err
		}},
		{"registration", func() (string, error) {
			if token != "" {
				return "", nil
			}
			reg, err := ri.rcp.RegisterRunner(ctx, client.RegisterRunnerRequest{Name: o.Name, Labels: o.Labels})
			if err != nil {
				return "", err
			}
			id, token = reg.ID, reg.Token
			return "registered " + reg.ID, nil
		}},
		{"manifests", func() (string, error) {
			mo := o.RunnerOptions
			mo.Token, mo.RunnerID = token, id
			objs, err := manifests.RunnerObjects(mo)
			if err != nil {
				return "", err
			}
			return ri.applyObjects(ctx, objs, o.Name)
		}},
	}
	for _, s := range steps {
		if err := ri.step(s.name, s.fn); err != nil {
			return err
		}
	}
	if o.Wait <= 0 {
		fmt.Fprintf(ri.out, "Runner %s is installed; 'freshet runner list' shows when it is connected.\n", o.Name)
		return nil
	}
	return ri.step("waiting for the runner to connect", func() (string, error) { return ri.waitConnected(ctx, o) })
}

// runnerNeeded is what installing a runner needs: its objects, and the rights its Role grants
// (Kubernetes lets nobody grant rights they do not hold).
func runnerNeeded() []permission {
	return []permission{
		{"", "namespaces", "create", "the runner's namespace"},
		{"", "serviceaccounts", "create", "the runner's service account"},
		{"", "secrets", "create", "the Secret with the runner's token"},
		{"apps", "deployments", "create", "the runner's Deployment"},
		{"rbac.authorization.k8s.io", "roles", "create", "the runner's Role"},
		{"rbac.authorization.k8s.io", "rolebindings", "create", "the runner's RoleBinding"},
		{"", "pods", "create", "granting the runner its Role (build pods)"},
		{"", "pods", "delete", "granting the runner its Role (build pods)"},
		{"", "pods/log", "get", "granting the runner its Role (step logs)"},
		{"", "persistentvolumeclaims", "create", "granting the runner its Role (workspaces)"},
	}
}

func (ri *RunnerInstaller) checkRunnerPermissions(ctx context.Context, o RunnerOptions) (string, error) {
	var missing []string
	for _, p := range runnerNeeded() {
		ns := o.Namespace
		if p.resource == "namespaces" {
			ns = ""
		}
		res, sub, _ := strings.Cut(p.resource, "/")
		r, err := ri.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: p.verb, Group: p.group, Resource: res, Subresource: sub}},
		}, metav1.CreateOptions{})
		if err != nil {
			return "", fmt.Errorf("SelfSubjectAccessReview: %w", err)
		}
		if !r.Status.Allowed {
			g := p.group
			if g == "" {
				g = "core"
			}
			missing = append(missing, fmt.Sprintf("%s %s.%s in namespace %q (%s)", p.verb, p.resource, g, ns, p.why))
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("the current user may not: %s: %w", strings.Join(missing, "; "), errdefs.ErrForbidden)
	}
	return fmt.Sprintf("%d checks passed", len(runnerNeeded())), nil
}

// findRunner returns the registered runner called name, or nil.
func (ri *RunnerInstaller) findRunner(ctx context.Context, name string) (*client.Runner, error) {
	l, err := ri.rcp.ListRunners(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range l.Items {
		if r.Name == name {
			return &r, nil
		}
	}
	return nil, nil
}

// checkRunnerName finds whether the runner is registered already: one whose token Secret is
// in the cluster (annotated with its ID) is this installation, interrupted or run again, and
// is resumed with that token; any other is a name collision.
func (ri *RunnerInstaller) checkRunnerName(ctx context.Context, o RunnerOptions) (id, token, detail string, err error) {
	existing, err := ri.findRunner(ctx, o.Name)
	if err != nil {
		return "", "", "", err
	}
	if existing == nil {
		return "", "", "free", nil
	}
	sec, serr := ri.kube.CoreV1().Secrets(o.Namespace).Get(ctx, manifests.RunnerTokenSecretName, metav1.GetOptions{})
	if serr == nil && sec.Annotations[manifests.RunnerIDAnnotation] == existing.ID && len(sec.Data["token"]) > 0 {
		return existing.ID, string(sec.Data["token"]), "already registered (" + existing.ID + "); resuming", nil
	}
	return "", "", "", fmt.Errorf("a runner named %q is already registered and this cluster does not hold its token in %s/%s: choose another name, or delete it first ('freshet runner delete %s'): %w",
		o.Name, o.Namespace, manifests.RunnerTokenSecretName, o.Name, errdefs.ErrConflict)
}

func (ri *RunnerInstaller) waitConnected(ctx context.Context, o RunnerOptions) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Wait)
	defer cancel()
	for {
		r, err := ri.findRunner(ctx, o.Name)
		if err == nil && r != nil && r.Connected {
			return "connected", nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("not connected after %s (%s): see 'kubectl -n %s logs deploy/%s'", o.Wait, ri.podState(context.Background(), o.Namespace, o.Name, "runner"), o.Namespace, manifests.RunnerName)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Uninstall deletes the runner's objects (only those labelled as its own) and the runner's
// registration. Objects already gone are fine, so it can be run again.
func (ri *RunnerInstaller) Uninstall(ctx context.Context, name, namespace string) error {
	if namespace == "" {
		namespace = manifests.DefaultRunnerNamespace
	}
	err := ri.step("removing the runner's objects", func() (string, error) {
		objs, err := manifests.RunnerObjects(manifests.RunnerOptions{Name: name, Namespace: namespace, Server: "https://x", Token: "frn_x", RoleYAML: kubeexec.RoleYAML})
		if err != nil {
			return "", err
		}
		return ri.deleteInstance(ctx, objs, name)
	})
	if err != nil {
		return err
	}
	return ri.step("deregistering", func() (string, error) {
		r, err := ri.findRunner(ctx, name)
		if err != nil {
			return "", err
		}
		if r == nil {
			return "was not registered", nil
		}
		return "", ri.rcp.DeleteRunner(ctx, r.ID)
	})
}
