package kube

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
)

// volumesCleanupTimeout bounds the deletion of a test's volumes.
const volumesCleanupTimeout = 30 * time.Second

// ProvisionVolumes binds every claim made in namespace ns to a new PersistentVolume, as a
// storage provisioner would (the loopback cluster has none): the scheduler does not place a pod
// whose claim is unbound. The volumes are hostPath volumes: under hostDir, which the real node's
// kubelet creates and mounts, or (hostDir "") a path that nothing mounts on the kwok node. They
// are deleted when the test ends.
func (c *Cluster) ProvisionVolumes(t testing.TB, ns, hostDir string) {
	hostPath := &corev1.HostPathVolumeSource{Path: "/nonexistent/freshet-test"}
	if hostDir != "" {
		dirOrCreate := corev1.HostPathDirectoryOrCreate
		hostPath = &corev1.HostPathVolumeSource{Path: hostDir, Type: &dirOrCreate}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		ctx, cancel := context.WithTimeout(context.Background(), volumesCleanupTimeout)
		defer cancel()
		err := c.Client.CoreV1().PersistentVolumes().DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: "freshet-test-namespace=" + ns})
		if err != nil {
			t.Errorf("delete test volumes: %v", err)
		}
	})
	claims := c.Client.CoreV1().PersistentVolumeClaims(ns)
	w, err := claims.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch claims: %v", err)
	}
	go func() {
		defer close(done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			pvc, ok := ev.Object.(*corev1.PersistentVolumeClaim)
			if !ok || ev.Type != watch.Added || pvc.Spec.VolumeName != "" {
				continue
			}
			name := ns + "-" + pvc.Name
			if len(name) > 253 {
				name = name[:253]
			}
			pv := &corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"freshet-test-namespace": ns}},
				Spec: corev1.PersistentVolumeSpec{
					AccessModes:                   pvc.Spec.AccessModes,
					Capacity:                      maps.Clone(pvc.Spec.Resources.Requests),
					ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: pvc.Name, UID: pvc.UID},
					PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
					PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostPath.Path + "/" + pvc.Name, Type: hostPath.Type}},
				},
			}
			if pvc.Spec.StorageClassName != nil {
				pv.Spec.StorageClassName = *pvc.Spec.StorageClassName
			}
			if _, err := c.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				if ctx.Err() == nil {
					t.Errorf("provision volume for claim %s: %v", pvc.Name, err)
				}
				continue
			}
			// Naming the volume in the claim lets the volume controller bind the pair at once
			// instead of at its next periodic sync.
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				pvc, err := claims.Get(ctx, pvc.Name, metav1.GetOptions{})
				if err != nil || pvc.Spec.VolumeName != "" {
					return err
				}
				pvc.Spec.VolumeName = name
				_, err = claims.Update(ctx, pvc, metav1.UpdateOptions{})
				return err
			})
			if err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) {
				t.Errorf("bind claim %s: %v", pvc.Name, err)
			}
			// The volume controller may have handled the claim before its cache held the new
			// volume, and would then bind them only at its periodic resync (15 s): nudge the
			// claim until it is bound.
			for i := 0; i < 50 && ctx.Err() == nil; i++ {
				c, err := claims.Get(ctx, pvc.Name, metav1.GetOptions{})
				if err != nil || c.Status.Phase == corev1.ClaimBound || c.DeletionTimestamp != nil {
					break
				}
				if i%5 == 4 {
					patch := fmt.Sprintf(`{"metadata":{"annotations":{"freshet-test/nudge":"%d"}}}`, i)
					_, _ = claims.Patch(ctx, pvc.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
}
