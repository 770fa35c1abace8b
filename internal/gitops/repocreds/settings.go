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

	"github.com/freshet-dev/freshet/internal/gitops/internal/yamlx"
)

// SettingsConfigMap is Argo CD's main ConfigMap (resource customizations, tracking method).
const SettingsConfigMap = "argocd-cm"

// SettingsSource is implemented by the sources that also keep argocd-cm, read from the same
// place as the repository Secrets (the runtime's namespace, or its data directory).
type SettingsSource interface {
	// LoadSettings returns argocd-cm's data; nil when there is none.
	LoadSettings(ctx context.Context) (map[string]string, error)
}

// LoadSettings implements SettingsSource: the ConfigMap argocd-cm in the namespace.
func (s Secrets) LoadSettings(ctx context.Context) (map[string]string, error) {
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, SettingsConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("configmap %s in namespace %s: %w", SettingsConfigMap, s.Namespace, err)
	}
	return cm.Data, nil
}

// LoadSettings implements SettingsSource: a ConfigMap named argocd-cm in the directory's
// *.yaml and *.yml files (the last one read, by file name, wins).
func (f Files) LoadSettings(context.Context) (map[string]string, error) {
	des, err := os.ReadDir(f.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(des))
	for _, de := range des {
		n := de.Name()
		if de.IsDir() || strings.HasPrefix(n, ".") || (!strings.HasSuffix(n, ".yaml") && !strings.HasSuffix(n, ".yml")) {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	var out map[string]string
	for _, n := range names {
		p := filepath.Join(f.Dir, n)
		fi, err := os.Stat(p)
		if err != nil || fi.Size() > maxFileBytes {
			continue // Load reports these
		}
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		cm, err := findSettings(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		if cm != nil {
			out = cm
		}
	}
	return out, nil
}

func findSettings(data []byte) (map[string]string, error) {
	if !strings.Contains(string(data), SettingsConfigMap) {
		return nil, nil
	}
	docs, err := yamlx.SplitDocuments(data)
	if err != nil {
		return nil, err
	}
	var out map[string]string
	for _, d := range docs {
		v, err := yamlx.ToValue(d.Node)
		if err != nil {
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			continue
		}
		var cm corev1.ConfigMap
		if json.Unmarshal(raw, &cm) != nil || cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || cm.Name != SettingsConfigMap {
			continue
		}
		out = cm.Data
		if out == nil {
			out = map[string]string{}
		}
	}
	return out, nil
}
