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

// Argo CD Notifications' ConfigMap and Secret.
const (
	NotificationsConfigMap = "argocd-notifications-cm"
	NotificationsSecret    = "argocd-notifications-secret"
)

// NotificationsSource is implemented by the sources that also keep Argo CD Notifications'
// ConfigMap and Secret, read from the same place as the repository Secrets.
type NotificationsSource interface {
	// LoadNotifications returns argocd-notifications-cm's data (nil when there is none) and
	// argocd-notifications-secret's.
	LoadNotifications(ctx context.Context) (cm map[string]string, secret map[string][]byte, err error)
}

// LoadNotifications implements NotificationsSource: the ConfigMap and Secret in the namespace.
func (s Secrets) LoadNotifications(ctx context.Context) (map[string]string, map[string][]byte, error) {
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, NotificationsConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		return nil, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("configmap %s in namespace %s: %w", NotificationsConfigMap, s.Namespace, err)
	}
	data := cm.Data
	if data == nil {
		data = map[string]string{}
	}
	sec, err := s.Client.CoreV1().Secrets(s.Namespace).Get(ctx, NotificationsSecret, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		return data, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("secret %s in namespace %s: %w", NotificationsSecret, s.Namespace, err)
	}
	return data, sec.Data, nil
}

// LoadNotifications implements NotificationsSource: a ConfigMap argocd-notifications-cm and
// a Secret argocd-notifications-secret in the directory's *.yaml and *.yml files (the last one
// read, by file name, wins).
func (f Files) LoadNotifications(context.Context) (map[string]string, map[string][]byte, error) {
	des, err := os.ReadDir(f.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
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
	var cm map[string]string
	var sec map[string][]byte
	for _, n := range names {
		p := filepath.Join(f.Dir, n)
		fi, err := os.Stat(p)
		if err != nil || fi.Size() > maxFileBytes {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(data), "argocd-notifications-") {
			continue
		}
		c, s, err := findNotifications(data)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", n, err)
		}
		if c != nil {
			cm = c
		}
		if s != nil {
			sec = s
		}
	}
	return cm, sec, nil
}

// findNotifications finds the notifications ConfigMap and Secret among a file's documents.
func findNotifications(data []byte) (cm map[string]string, sec map[string][]byte, err error) {
	docs, err := yamlx.SplitDocuments(data)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range docs {
		v, err := yamlx.ToValue(d.Node)
		if err != nil {
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			continue
		}
		var head struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Metadata   metav1.ObjectMeta `json:"metadata"`
		}
		if json.Unmarshal(raw, &head) != nil || head.APIVersion != "v1" {
			continue
		}
		switch {
		case head.Kind == "ConfigMap" && head.Metadata.Name == NotificationsConfigMap:
			var c corev1.ConfigMap
			if err := json.Unmarshal(raw, &c); err != nil {
				return nil, nil, fmt.Errorf("configmap %s: %w", NotificationsConfigMap, err)
			}
			cm = c.Data
			if cm == nil {
				cm = map[string]string{}
			}
		case head.Kind == "Secret" && head.Metadata.Name == NotificationsSecret:
			var s corev1.Secret
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, nil, fmt.Errorf("secret %s: data must be base64: %w", NotificationsSecret, err)
			}
			sec = map[string][]byte{}
			for k, v := range s.Data {
				sec[k] = v
			}
			for k, v := range s.StringData {
				sec[k] = []byte(v)
			}
		}
	}
	return cm, sec, nil
}
