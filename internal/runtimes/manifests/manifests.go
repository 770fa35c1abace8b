// Package manifests renders the Kubernetes objects a hybrid runtime runs from — its
// Namespace, ServiceAccount and RBAC, the Secret with its token, the Deployment running
// `freshet runtime`, the app-proxy Service and, in ingress mode, an Ingress — from the
// embedded freshet-runtime Helm chart (charts/freshet-runtime), so that the CLI and `helm
// install` install the same thing. `freshet runtime manifests` prints them; the installer
// applies them with server-side apply. It also renders a runner's objects (RunnerObjects:
// `freshet runner install`) from charts/freshet-runner, with the Role its caller hands in
// (the kubernetes executor's).
package manifests

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/charts"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/helmchart"
)

// Defaults.
const (
	DefaultNamespace = "freshet-runtime"
	DefaultImage     = "freshet/freshet"
	TokenSecretName  = "freshet-runtime-token"
	AppProxyPort     = 8080
	// ServiceName is the runtime's Service; EventsPortName its port of the EventSources'
	// webhooks (EventsPort).
	ServiceName    = "freshet-app-proxy"
	EventsPortName = "events"
	managedBy      = "freshet"
	// RuntimeIDAnnotation on the token Secret names the registered runtime it belongs to, so
	// an installer run again knows the cluster already holds that runtime's token.
	RuntimeIDAnnotation = "freshet.dev/runtime-id"
	// InstanceLabel carries the runtime's name on every object.
	InstanceLabel = "app.kubernetes.io/instance"
	// ManagedByLabel is "freshet" on every object.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// DataDir is where the runtime keeps its data (--data-dir): an emptyDir, or the claim
	// DataClaimName with Persistence.
	DataDir = "/tmp/freshet-runtime"
	// DataClaimName is the PersistentVolumeClaim holding DataDir with Persistence.
	DataClaimName = "freshet-runtime-data"
	// DefaultStorageSize is the data claim's default size.
	DefaultStorageSize = "1Gi"
	// NoStorage is the storage size that asks for no data claim: DataDir is an emptyDir, lost
	// with the pod (ParsePersistence; --storage-size 0, --hosted-runtimes-storage-size 0).
	NoStorage = "0"
)

// Options describe one runtime installation.
type Options struct {
	Name         string // the runtime's name
	Namespace    string
	Image        string // the freshet image; the tag defaults to Version
	Version      string
	Server       string // the control plane URL the runtime dials
	Token        string // the runtime token; empty leaves the Secret out (create it yourself)
	AccessMode   string // tunnel or ingress
	IngressHost  string // ingress mode
	IngressClass string // ingress mode, optional
	RuntimeID    string // annotated on the token Secret
	Repo         string // the installation repository
	GitToken     string // the installation repository's token, kept in the token Secret
	// WatchClusterApps runs the runtime with --watch-cluster-apps.
	WatchClusterApps bool
	// ClusterAppsSourceNamespaces: --cluster-apps-source-namespaces, the other namespaces
	// whose Application resources the runtime runs (each only when the app's AppProject
	// lists it in spec.sourceNamespaces). Needs WatchClusterApps.
	ClusterAppsSourceNamespaces []string
	// Persistence, when set, keeps DataDir on a PersistentVolumeClaim (the chart's
	// persistence values) instead of the pod's emptyDir.
	Persistence *Persistence
	// EventsPort, when set, runs the runtime with --events-listen on it and adds the port,
	// named "events", to its Service: the EventSources' webhooks (the chart's events.port).
	EventsPort int
}

// Persistence is the runtime's data claim.
type Persistence struct {
	Size         string // a Kubernetes quantity (default DefaultStorageSize)
	StorageClass string // empty: the cluster's default storage class
}

// Validate fills the default size and names the first bad value as sizeField or classField
// (the caller's flag names, or the chart's value names).
func (p *Persistence) Validate(sizeField, classField string) error {
	if p.Size == "" {
		p.Size = DefaultStorageSize
	}
	q, err := resource.ParseQuantity(p.Size)
	if err != nil || q.Sign() <= 0 || !storageSize.MatchString(p.Size) {
		return errdefs.Invalid(sizeField, p.Size, "is not a storage size: a positive Kubernetes quantity such as 1Gi or 500Mi")
	}
	if p.StorageClass != "" {
		if errs := validation.IsDNS1123Subdomain(p.StorageClass); len(errs) > 0 {
			return errdefs.Invalid(classField, p.StorageClass, "is not a storage class name: "+strings.Join(errs, "; "))
		}
	}
	return nil
}

// ParsePersistence reads a storage size and class given as flags (sizeField and classField,
// named in errors): a zero size (NoStorage, "0Gi") is no data claim (nil), and then a class is
// refused; an empty size is DefaultStorageSize; any other must be a positive Kubernetes
// quantity.
func ParsePersistence(size, class, sizeField, classField string) (*Persistence, error) {
	if IsNoStorage(size) {
		if class != "" {
			return nil, errdefs.Invalid(classField, class, "needs a data claim: give --"+sizeField+" other than "+NoStorage)
		}
		return nil, nil
	}
	p := &Persistence{Size: size, StorageClass: class}
	if err := p.Validate(sizeField, classField); err != nil {
		if errdefs.Field(err) == sizeField {
			return nil, errdefs.Invalid(sizeField, size, "is not a storage size: a positive Kubernetes quantity such as 1Gi or 500Mi, or "+NoStorage+" for no data claim (an emptyDir, lost with the pod)")
		}
		return nil, err
	}
	return p, nil
}

// IsNoStorage reports whether size is a zero storage size, which asks for no data claim.
func IsNoStorage(size string) bool {
	q, err := resource.ParseQuantity(size)
	return err == nil && q.IsZero() && storageSize.MatchString(size)
}

// storageSize is the chart schema's pattern for persistence.size.
var storageSize = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$`)

var dns1123 = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Validate names the first bad option.
func (o *Options) Validate() error {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	o.Image = defaultImage(o.Image, o.Version)
	switch {
	case !dns1123.MatchString(o.Name):
		return errdefs.Invalid("name", o.Name, "is not a runtime name (lowercase letters, digits and '-')")
	case !dns1123.MatchString(o.Namespace):
		return errdefs.Invalid("namespace", o.Namespace, "is not a Kubernetes namespace name")
	case !strings.HasPrefix(o.Server, "http://") && !strings.HasPrefix(o.Server, "https://"):
		return errdefs.Invalid("server", o.Server, "is not the control plane's http(s) URL")
	case len(o.ClusterAppsSourceNamespaces) > 0 && !o.WatchClusterApps:
		return errdefs.Invalid("cluster-apps-source-namespaces", strings.Join(o.ClusterAppsSourceNamespaces, ","), "needs --watch-cluster-apps")
	case o.EventsPort < 0 || o.EventsPort > 65535 || o.EventsPort == AppProxyPort:
		return errdefs.Invalid("events-port", fmt.Sprint(o.EventsPort), fmt.Sprintf("is not a port for the event sources' webhooks: 1 to 65535 other than the app-proxy's %d (0: none)", AppProxyPort))
	}
	for i, ns := range o.ClusterAppsSourceNamespaces {
		if !dns1123.MatchString(ns) {
			return errdefs.Invalid(fmt.Sprintf("cluster-apps-source-namespaces[%d]", i), ns, "is not a Kubernetes namespace name")
		}
	}
	if o.Persistence != nil {
		if err := o.Persistence.Validate("persistence.size", "persistence.storageClass"); err != nil {
			return err
		}
	}
	switch o.AccessMode {
	case "", "tunnel":
		o.AccessMode = "tunnel"
	case "ingress":
		if o.IngressHost == "" {
			return errdefs.Invalid("ingress-host", "", "is required in ingress mode")
		}
	default:
		return errdefs.Invalid("access-mode", o.AccessMode, "is not tunnel or ingress")
	}
	return nil
}

// Object is one Kubernetes object as a generic map.
type Object = map[string]any

// Objects returns the runtime's objects in apply order: the freshet-runtime chart (package
// charts) rendered for the options, its Namespace included.
func Objects(o Options) ([]Object, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	ch, err := helmchart.Load(charts.Runtime)
	if err != nil {
		return nil, err
	}
	return helmchart.Render(ch, helmchart.Release{Name: o.Name, Namespace: o.Namespace}, o.Values())
}

// Values are the freshet-runtime chart's values for the options (Validate them first): what
// `helm install` would be given to install the same runtime.
func (o Options) Values() map[string]any {
	v := map[string]any{
		"name":             o.Name,
		"server":           o.Server,
		"accessMode":       o.AccessMode,
		"ingress":          map[string]any{"host": o.IngressHost, "className": o.IngressClass},
		"image":            map[string]any{"repository": o.Image},
		"token":            map[string]any{"value": o.Token, "runtimeID": o.RuntimeID},
		"repo":             o.Repo,
		"gitToken":         o.GitToken,
		"watchClusterApps": o.WatchClusterApps,
		"createNamespace":  true,
	}
	if len(o.ClusterAppsSourceNamespaces) > 0 {
		nss := make([]any, len(o.ClusterAppsSourceNamespaces)) // the schema check wants JSON-shaped values
		for i, ns := range o.ClusterAppsSourceNamespaces {
			nss[i] = ns
		}
		v["clusterAppsSourceNamespaces"] = nss
	}
	if p := o.Persistence; p != nil {
		v["persistence"] = map[string]any{"enabled": true, "size": p.Size, "storageClass": p.StorageClass}
	}
	if o.EventsPort > 0 {
		v["events"] = map[string]any{"port": o.EventsPort}
	}
	return v
}

// YAML renders objects as one multi-document YAML stream.
func YAML(objs []Object) ([]byte, error) {
	var buf bytes.Buffer
	for i, o := range objs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		b, err := yaml.Marshal(o)
		if err != nil {
			return nil, err
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}
