package install

import (
	"context"
	"fmt"
	"os"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/freshet-dev/freshet/internal/runtimes/manifests"
)

// ManagedCluster is the credential `freshet cluster add` hands to a runtime (and nobody else):
// the JSON body of the app-proxy's POST /app-proxy/api/v1/clusters.
type ManagedCluster struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	CAData []byte `json:"caData,omitempty"`
	Token  string `json:"token"`
}

// ClusterOptions shape the access a runtime gets to a managed cluster.
type ClusterOptions struct {
	// Namespace of the service account (default kube-system, as Argo CD's argocd-manager).
	Namespace string
	// ClusterRole bound to it; empty creates freshet-manager-<runtime> with every right (the
	// GitOps engine applies whatever applications declare).
	ClusterRole string
	// Server is the API server URL the runtime uses (default: the kubeconfig's).
	Server string
	// TokenWait bounds the wait for the token controller to fill the token Secret.
	TokenWait time.Duration
}

func managerName(runtime string) string { return "freshet-manager-" + runtime }

// PrepareCluster creates, in the cluster cfg reaches, a service account for runtime with the
// chosen rights and a long-lived token, and returns the credential. It is idempotent.
func PrepareCluster(ctx context.Context, cfg *rest.Config, name, runtime string, o ClusterOptions) (ManagedCluster, error) {
	if o.Namespace == "" {
		o.Namespace = "kube-system"
	}
	if o.TokenWait == 0 {
		o.TokenWait = 30 * time.Second
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return ManagedCluster{}, err
	}
	sa := managerName(runtime)
	labels := map[string]string{manifests.ManagedByLabel: "freshet", "freshet.dev/runtime": runtime}
	if _, err := kc.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Labels: labels}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return ManagedCluster{}, fmt.Errorf("service account %s/%s: %w", o.Namespace, sa, err)
	}
	role := o.ClusterRole
	if role == "" {
		role = sa
		cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role, Labels: labels}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
			{NonResourceURLs: []string{"*"}, Verbs: []string{"*"}},
		}}
		if _, err := kc.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return ManagedCluster{}, fmt.Errorf("ClusterRole %s: %w", role, err)
		}
	} else if _, err := kc.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{}); err != nil {
		return ManagedCluster{}, fmt.Errorf("--cluster-role %s: %w", role, err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa, Labels: labels},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: o.Namespace}}}
	if _, err := kc.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = kc.RbacV1().ClusterRoleBindings().Update(ctx, crb, metav1.UpdateOptions{})
		if err != nil {
			return ManagedCluster{}, fmt.Errorf("ClusterRoleBinding %s: %w", sa, err)
		}
	} else if err != nil {
		return ManagedCluster{}, fmt.Errorf("ClusterRoleBinding %s: %w", sa, err)
	}
	token, err := saToken(ctx, kc, o.Namespace, sa, labels, o.TokenWait)
	if err != nil {
		return ManagedCluster{}, err
	}
	server := o.Server
	if server == "" {
		server = cfg.Host
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return ManagedCluster{}, fmt.Errorf("the kubeconfig's CA file: %w", err)
		}
	}
	return ManagedCluster{Name: name, Server: server, CAData: ca, Token: token}, nil
}

// saToken returns a long-lived token of the service account: the token controller's, in a
// kubernetes.io/service-account-token Secret (as Argo CD's cluster add), or — where no token
// controller runs — a TokenRequest for a year.
func saToken(ctx context.Context, kc kubernetes.Interface, ns, sa string, labels map[string]string, wait time.Duration) (string, error) {
	name := sa + "-token"
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{corev1.ServiceAccountNameKey: sa}},
		Type: corev1.SecretTypeServiceAccountToken}
	if _, err := kc.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("token Secret %s/%s: %w", ns, name, err)
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		s, err := kc.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && len(s.Data[corev1.ServiceAccountTokenKey]) > 0 {
			return string(s.Data[corev1.ServiceAccountTokenKey]), nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	year := int64(365 * 24 * 3600)
	tr, err := kc.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &year}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("no token for service account %s/%s (no token controller filled %s, and a TokenRequest failed): %w", ns, sa, name, err)
	}
	return tr.Status.Token, nil
}

// RemoveClusterAccess deletes what PrepareCluster created for runtime. Gone already is fine.
func RemoveClusterAccess(ctx context.Context, cfg *rest.Config, runtime, namespace string) error {
	if namespace == "" {
		namespace = "kube-system"
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	sa := managerName(runtime)
	errs := []error{
		ignoreNotFound(kc.RbacV1().ClusterRoleBindings().Delete(ctx, sa, metav1.DeleteOptions{})),
		ignoreNotFound(kc.CoreV1().Secrets(namespace).Delete(ctx, sa+"-token", metav1.DeleteOptions{})),
		ignoreNotFound(kc.CoreV1().ServiceAccounts(namespace).Delete(ctx, sa, metav1.DeleteOptions{})),
	}
	// Only the role PrepareCluster made (it carries the label), never a role the user chose.
	if cr, err := kc.RbacV1().ClusterRoles().Get(ctx, sa, metav1.GetOptions{}); err == nil && cr.Labels["freshet.dev/runtime"] == runtime {
		errs = append(errs, ignoreNotFound(kc.RbacV1().ClusterRoles().Delete(ctx, sa, metav1.DeleteOptions{})))
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
