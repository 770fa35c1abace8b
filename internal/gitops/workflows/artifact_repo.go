package workflows

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Where artifact repositories are configured, with Argo's names.
const (
	// ArtifactRepositoriesConfigMap is the ConfigMap of a namespace's artifact repositories:
	// each key one repository, AnnotationDefaultArtifactRepository naming the default.
	ArtifactRepositoriesConfigMap       = "artifact-repositories"
	AnnotationDefaultArtifactRepository = "workflows.argoproj.io/default-artifact-repository"
	// ControllerConfigMap in the runtime's namespace (Options.ConfigNamespace) holds the
	// runtime's default repository under ControllerConfigMapRepositoryKey.
	ControllerConfigMap              = "workflow-controller-configmap"
	ControllerConfigMapRepositoryKey = "artifactRepository"
)

// maxRepositoryBytes bounds one repository's YAML.
const maxRepositoryBytes = 64 << 10

// DecodeArtifactRepository reads an artifact repository (YAML or JSON, as a ConfigMap key of
// artifact-repositories or workflow-controller-configmap's artifactRepository holds it) and
// checks it; field names where it came from in errors.
func DecodeArtifactRepository(data, field string) (*ArtifactRepository, error) {
	if len(data) > maxRepositoryBytes {
		return nil, errdefs.Invalid(field, fmt.Sprintf("%d bytes", len(data)), fmt.Sprintf("must be at most %d bytes", maxRepositoryBytes))
	}
	var r ArtifactRepository
	if err := yaml.Unmarshal([]byte(data), &r); err != nil {
		return nil, errdefs.Invalid(field, "", "is not an artifact repository: "+err.Error())
	}
	for _, u := range []struct {
		name string
		set  bool
	}{{"artifactory", isSet(r.Artifactory)}, {"hdfs", isSet(r.HDFS)}, {"oss", isSet(r.OSS)}, {"gcs", isSet(r.GCS)}, {"azure", isSet(r.Azure)}} {
		if u.set {
			return nil, notYet(field+"."+u.name, u.name+" artifact repositories (s3 is)")
		}
	}
	if r.ArchiveLogs != nil && *r.ArchiveLogs {
		return nil, notYet(field+".archiveLogs", "archived logs")
	}
	s := r.S3
	if s == nil {
		return nil, errdefs.Invalid(field+".s3", "", "is required: the bucket output artifacts are stored in")
	}
	if err := checkBucket(&s.S3Bucket, field+".s3"); err != nil {
		return nil, err
	}
	switch {
	case s.Bucket == "":
		return nil, errdefs.Invalid(field+".s3.bucket", "", "is required")
	case s.Endpoint == "":
		return nil, errdefs.Invalid(field+".s3.endpoint", "", "is required: host or host:port of the S3-compatible server")
	}
	for _, k := range []struct{ name, v string }{{"keyFormat", s.KeyFormat}, {"keyPrefix", s.KeyPrefix}} {
		if k.v == "" {
			continue
		}
		if strings.HasPrefix(k.v, "/") || len(k.v) > 1024 {
			return nil, errdefs.Invalid(field+".s3."+k.name, k.v, "must be a relative key of at most 1024 bytes")
		}
		var bad string
		_ = refs(k.v, "", func(_, name string) error {
			if bad == "" && !keyFormatVar(name) {
				bad = name
			}
			return nil
		})
		if bad != "" {
			return nil, errdefs.Invalid(field+".s3."+k.name, k.v, "{{"+bad+"}} is not a variable a key may use (workflow.name, workflow.namespace, workflow.uid, workflow.creationTimestamp.Y/m/d/H/M/S/s, workflow.parameters.NAME, workflow.labels.NAME, workflow.annotations.NAME, pod.name, node.name, node.id)")
		}
	}
	return &r, nil
}

func keyFormatVar(name string) bool {
	switch name {
	case "workflow.name", "workflow.namespace", "workflow.uid", "workflow.serviceAccountName", "workflow.mainEntrypoint",
		"pod.name", "node.name", "node.id":
		return true
	}
	for _, p := range []string{"workflow.parameters.", "workflow.labels.", "workflow.annotations."} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	switch strings.TrimPrefix(name, "workflow.creationTimestamp.") {
	case "Y", "m", "d", "H", "M", "S", "s":
		return strings.HasPrefix(name, "workflow.creationTimestamp.")
	}
	return false
}

// artifactRepository implements cluster, as Argo resolves it: spec.artifactRepositoryRef (a
// key of a ConfigMap in the Workflow's namespace: artifact-repositories and its default key
// when left out), else the namespace's artifact-repositories default when there is one, else
// the runtime's workflow-controller-configmap.
func (c *Controller) artifactRepository(ctx context.Context, ns string, ref *ArtifactRepositoryRef) (*ArtifactRepositoryRefStatus, error) {
	get := func(ns, name string) (*corev1.ConfigMap, error) {
		return c.kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	}
	fromMap := func(cm *corev1.ConfigMap, key, field string) (*ArtifactRepositoryRefStatus, error) {
		if key == "" {
			key = cm.Annotations[AnnotationDefaultArtifactRepository]
			if key == "" {
				return nil, fmt.Errorf("%w: %s: ConfigMap %s/%s has no %s annotation naming its default key", errNoRepository, field, cm.Namespace, cm.Name, AnnotationDefaultArtifactRepository)
			}
		}
		data, ok := cm.Data[key]
		if !ok {
			return nil, fmt.Errorf("%w: %s: ConfigMap %s/%s has no key %q", errNoRepository, field, cm.Namespace, cm.Name, key)
		}
		r, err := DecodeArtifactRepository(data, fmt.Sprintf("ConfigMap %s/%s key %s", cm.Namespace, cm.Name, key))
		if err != nil {
			return nil, err
		}
		return &ArtifactRepositoryRefStatus{ArtifactRepositoryRef: ArtifactRepositoryRef{ConfigMap: cm.Name, Key: key}, Namespace: cm.Namespace, ArtifactRepository: r}, nil
	}
	if ref != nil {
		name := ref.ConfigMap
		if name == "" {
			name = ArtifactRepositoriesConfigMap
		}
		cm, err := get(ns, name)
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: spec.artifactRepositoryRef: ConfigMap %s/%s not found", errNoRepository, ns, name)
		}
		if err != nil {
			return nil, err
		}
		return fromMap(cm, ref.Key, "spec.artifactRepositoryRef")
	}
	cm, err := get(ns, ArtifactRepositoriesConfigMap)
	switch {
	case err == nil && cm.Annotations[AnnotationDefaultArtifactRepository] != "":
		return fromMap(cm, "", "the namespace's default artifact repository")
	case err != nil && !apierrors.IsNotFound(err):
		return nil, err
	}
	if c.opts.ConfigNamespace != "" {
		cm, err := get(c.opts.ConfigNamespace, ControllerConfigMap)
		switch {
		case err == nil && cm.Data[ControllerConfigMapRepositoryKey] != "":
			st, err := fromMap(cm, ControllerConfigMapRepositoryKey, "the runtime's artifact repository")
			if st != nil {
				st.Default = true
			}
			return st, err
		case err != nil && !apierrors.IsNotFound(err):
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w is configured: give the output artifact an s3 location with endpoint, bucket and key, or configure one (ConfigMap %s in namespace %s with the %s annotation, spec.artifactRepositoryRef, or key %s of ConfigMap %s in the runtime's namespace %s; see docs/runtimes.md)",
		errNoRepository, ArtifactRepositoriesConfigMap, ns, AnnotationDefaultArtifactRepository, ControllerConfigMapRepositoryKey, ControllerConfigMap, orDash(c.opts.ConfigNamespace))
}

func orDash(s string) string {
	if s == "" {
		return "(none configured)"
	}
	return s
}
