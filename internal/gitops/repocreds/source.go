package repocreds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/freshet-dev/freshet/internal/gitops/internal/yamlx"
)

// Source is where the runtime keeps its repository credentials. Load returns the Set and the
// problems of single Secrets (which are left out); err is for the source itself.
type Source interface {
	Load(ctx context.Context) (set *Set, problems []error, err error)
}

// Secrets reads repository Secrets and argocd-tls-certs-cm from a namespace of the runtime's
// own cluster: for a runtime in a Pod, its own namespace, as Argo CD reads its own.
type Secrets struct {
	Client    kubernetes.Interface
	Namespace string
}

// Load implements Source.
func (s Secrets) Load(ctx context.Context) (*Set, []error, error) {
	l, err := s.Client.CoreV1().Secrets(s.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: SecretTypeLabel + " in (" + TypeRepository + "," + TypeRepoCreds + ")"})
	if err != nil {
		return nil, nil, fmt.Errorf("repository secrets in namespace %s: %w", s.Namespace, err)
	}
	var entries []*Entry
	var problems []error
	for i := range l.Items {
		sec := &l.Items[i]
		e, err := FromSecret(sec.Name, sec.Labels[SecretTypeLabel], sec.Data)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		entries = append(entries, e)
	}
	var cas map[string]string
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, TLSCertsConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		// none (a runtime without the right to read it has none)
	case err != nil:
		return nil, nil, fmt.Errorf("configmap %s in namespace %s: %w", TLSCertsConfigMap, s.Namespace, err)
	default:
		var errs []error
		cas, errs = ParseCAs(cm.Data)
		problems = append(problems, errs...)
	}
	return NewSet(entries, cas), problems, nil
}

// Files reads the same Secrets and ConfigMap as YAML manifests from the files *.yaml and
// *.yml of a directory: for a runtime on a host (`freshet up`), in its data directory.
type Files struct{ Dir string }

// maxFileBytes bounds one manifest file.
const maxFileBytes = 4 << 20

// Load implements Source. A directory that does not exist holds nothing.
func (f Files) Load(context.Context) (*Set, []error, error) {
	des, err := os.ReadDir(f.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return NewSet(nil, nil), nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var entries []*Entry
	var problems []error
	cas := map[string]string{}
	for _, de := range des {
		n := de.Name()
		if de.IsDir() || strings.HasPrefix(n, ".") || (!strings.HasSuffix(n, ".yaml") && !strings.HasSuffix(n, ".yml")) {
			continue
		}
		p := filepath.Join(f.Dir, n)
		fi, err := os.Stat(p)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		if fi.Size() > maxFileBytes {
			problems = append(problems, fmt.Errorf("%s: larger than %d bytes", n, maxFileBytes))
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		es, c, errs := ParseManifests(data)
		entries = append(entries, es...)
		for h, v := range c {
			cas[h] = v
		}
		for _, e := range errs {
			problems = append(problems, fmt.Errorf("%s: %w", n, e))
		}
	}
	return NewSet(entries, cas), problems, nil
}

// ParseManifests reads YAML manifests (several documents): Secrets labelled
// argocd.argoproj.io/secret-type repository or repo-creds, and the ConfigMap
// argocd-tls-certs-cm; other documents are ignored. A Secret's stringData wins over its data,
// as the API server merges them.
func ParseManifests(data []byte) (entries []*Entry, cas map[string]string, problems []error) {
	docs, err := yamlx.SplitDocuments(data)
	if err != nil {
		return nil, nil, []error{err}
	}
	cas = map[string]string{}
	for _, d := range docs {
		v, err := yamlx.ToValue(d.Node)
		if err != nil {
			problems = append(problems, fmt.Errorf("document at line %d: %w", d.Line, err))
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			problems = append(problems, fmt.Errorf("document at line %d: %w", d.Line, err))
			continue
		}
		var meta metav1.TypeMeta
		if json.Unmarshal(raw, &meta) != nil {
			continue // not an object
		}
		switch {
		case meta.APIVersion == "v1" && meta.Kind == "Secret":
			var sec corev1.Secret
			if err := json.Unmarshal(raw, &sec); err != nil {
				problems = append(problems, fmt.Errorf("secret at line %d: %v", d.Line, err))
				continue
			}
			typ, ok := sec.Labels[SecretTypeLabel]
			if !ok {
				continue
			}
			merged := map[string][]byte{}
			for k, b := range sec.Data {
				merged[k] = b
			}
			for k, s := range sec.StringData {
				merged[k] = []byte(s)
			}
			e, err := FromSecret(sec.Name, typ, merged)
			if err != nil {
				problems = append(problems, err)
				continue
			}
			entries = append(entries, e)
		case meta.APIVersion == "v1" && meta.Kind == "ConfigMap":
			var cm corev1.ConfigMap
			if err := json.Unmarshal(raw, &cm); err != nil || cm.Name != TLSCertsConfigMap {
				continue
			}
			c, errs := ParseCAs(cm.Data)
			problems = append(problems, errs...)
			for _, h := range sortedKeys(c) {
				cas[h] = c[h]
			}
		}
	}
	return entries, cas, problems
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
