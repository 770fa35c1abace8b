// Package crd installs the CustomResourceDefinitions of the Argo kinds the runtime serves
// itself (Rollouts, Workflows, Argo CD's Application): server-side applied under a field
// manager, then waited for until the API server serves them. A CRD that another manager
// installed — Argo's own — is left as it is: both serve the same kinds.
package crd

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// Resource is the API of CustomResourceDefinitions.
var Resource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ManagedByLabel marks the CRDs Freshet applies (value "freshet"); Ensure leaves a CRD
// without it alone.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// establishTimeout bounds the wait for the API server to serve the applied CRDs.
const establishTimeout = 30 * time.Second

// Ensure server-side applies crds as fieldManager and waits (at most 30 s) until the API
// server serves each of them.
func Ensure(ctx context.Context, dyn dynamic.Interface, fieldManager string, crds []map[string]any) error {
	api := dyn.Resource(Resource)
	for _, c := range crds {
		name := name(c)
		if cur, err := api.Get(ctx, name, metav1.GetOptions{}); err == nil {
			if cur.GetLabels()[ManagedByLabel] != "freshet" {
				continue // another manager's (Argo's own install): keep it
			}
		} else if !apierrors.IsNotFound(err) {
			return fmt.Errorf("read CRD %s: %w", name, err)
		}
		body, err := json.Marshal(c)
		if err != nil {
			return err
		}
		force := true
		if _, err := api.Patch(ctx, name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: fieldManager, Force: &force}); err != nil {
			return fmt.Errorf("apply CRD %s: %w", name, err)
		}
	}
	deadline := time.Now().Add(establishTimeout)
	for _, c := range crds {
		name := name(c)
		for {
			cur, err := api.Get(ctx, name, metav1.GetOptions{})
			if err == nil && established(cur) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s is not established after %v (%v)", name, establishTimeout, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// Names lists the CRDs' names, comma-separated: what an install step reports.
func Names(crds []map[string]any) string {
	names := make([]string, 0, len(crds))
	for _, c := range crds {
		names = append(names, name(c))
	}
	return strings.Join(names, ", ")
}

func name(c map[string]any) string {
	m, _ := c["metadata"].(map[string]any)
	n, _ := m["name"].(string)
	return n
}

func established(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
