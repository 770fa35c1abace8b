package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// podEvent is what watchPod reports: the pod's new state, its disappearance (pod == nil), or a
// watch that failed for good (err).
type podEvent struct {
	pod *corev1.Pod
	err error
}

// Retrying the watch.
const (
	watchRetryMin = 100 * time.Millisecond
	watchRetryMax = 5 * time.Second
	// watchMaxFailures is how many failed attempts in a row end the watch with an error.
	watchMaxFailures = 10
)

// watchPod sends every change of pod name (from resourceVersion rv on) to events until the pod
// is gone, the watch fails for good, or ctx is done. A watch that ends is resumed from the last
// version seen; one whose version expired is resumed after a fresh read. events is closed when
// watchPod returns.
func (k *Kubernetes) watchPod(ctx context.Context, name, rv string, events chan<- podEvent) {
	defer close(events)
	send := func(ev podEvent) bool {
		select {
		case events <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	pods := k.client.CoreV1().Pods(k.namespace)
	failures, delay := 0, watchRetryMin
	fail := func(err error) bool {
		failures++
		if failures >= watchMaxFailures || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			send(podEvent{err: fmt.Errorf("watch pod %s: %w", name, err)})
			return false
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return false
		}
		delay = min(2*delay, watchRetryMax)
		return true
	}
	resync := func() bool {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			send(podEvent{})
			return false
		case err != nil:
			rv = ""
			return fail(err)
		}
		rv = p.ResourceVersion
		return send(podEvent{pod: p})
	}
	for ctx.Err() == nil {
		if rv == "" && !resync() {
			return
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{
			FieldSelector:       fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion:     rv,
			AllowWatchBookmarks: true,
		})
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				rv = ""
			}
			if !fail(err) {
				return
			}
			continue
		}
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Added, watch.Modified:
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				failures, delay = 0, watchRetryMin
				rv = p.ResourceVersion
				if !send(podEvent{pod: p}) {
					w.Stop()
					return
				}
			case watch.Deleted:
				w.Stop()
				send(podEvent{})
				return
			case watch.Bookmark:
				if p, ok := ev.Object.(*corev1.Pod); ok {
					rv = p.ResourceVersion
				}
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				var status apierrors.APIStatus
				if errors.As(err, &status) && status.Status().Code == http.StatusGone {
					rv = ""
				}
				w.Stop()
				if !fail(err) {
					return
				}
			}
		}
		w.Stop()
	}
}
