package workflows

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Log streaming.
const (
	// logPoll is how often a followed workflow's log looks for new pods and for its end.
	logPoll = time.Second
	// maxLogLine bounds one log line; a longer one ends that pod's log.
	maxLogLine = 64 << 10
)

// LogOptions choose what Logs writes.
type LogOptions struct {
	// Node is a node's ID or name (its pod's log only); empty: every pod node's.
	Node string
	// Follow streams new lines, and the pods that start later, until the workflow finishes.
	Follow bool
}

// Logs writes the main container's log of the Workflow's pod nodes (those with a pod: not a
// resource step's) to w, each line prefixed
// with its node's display name ("NODE: line", as `argo logs` does), read from the pods through
// the API server (the kubelet). With Follow it goes on until the workflow has finished and
// every pod's log has ended, or ctx ends.
func (c *Controller) Logs(ctx context.Context, ns, name string, o LogOptions, w io.Writer) error {
	_, wf, err := c.getWorkflow(ctx, ns, name)
	if err != nil {
		return err
	}
	if o.Node != "" {
		found := false
		for _, n := range wf.Status.Nodes {
			if n.ID == o.Node || n.Name == o.Node || n.DisplayName == o.Node {
				if n.Type != NodeTypePod {
					return errdefs.Invalid("node", o.Node, fmt.Sprintf("is a %s node: only Pod nodes have logs", n.Type))
				}
				found = true
			}
		}
		if !found && !o.Follow {
			return fmt.Errorf("node %q of workflow %s/%s: %w", o.Node, ns, name, errdefs.ErrNotFound)
		}
	}
	var mu sync.Mutex // one line at a time on w
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Waited for before ctx is cancelled: the logs of pods that have ended end by themselves.
	var wg sync.WaitGroup
	defer wg.Wait()
	started := map[string]bool{}
	for {
		// Pod nodes with a pod: a resource step's node has none.
		pods, err := c.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelWorkflow + "=" + name})
		if err != nil {
			cancel()
			return kubeErr(err, "pods of workflow "+ns+"/"+name)
		}
		have := map[string]bool{}
		for _, p := range pods.Items {
			have[p.Name] = true
		}
		for _, n := range sortedNodes(wf.Status.Nodes) {
			if n.Type != NodeTypePod || started[n.ID] || !have[podName(n.ID)] || (o.Node != "" && n.ID != o.Node && n.Name != o.Node && n.DisplayName != o.Node) {
				continue
			}
			if n.Phase == NodePending && o.Follow {
				continue // no container yet: taken up at a later poll
			}
			started[n.ID] = true
			pod, prefix := podName(n.ID), n.DisplayName
			if !o.Follow {
				c.copyLog(ctx, ns, pod, prefix, false, w, &mu)
				continue
			}
			wg.Go(func() { c.copyLog(ctx, ns, pod, prefix, true, w, &mu) })
		}
		if !o.Follow || wf.Status.Phase.Completed() {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(logPoll):
		}
		if _, wf, err = c.getWorkflow(ctx, ns, name); err != nil {
			cancel()
			return err
		}
	}
}

// copyLog copies one pod's main container log to w, line by line; a pod whose log cannot be
// read gets one line saying why.
func (c *Controller) copyLog(ctx context.Context, ns, pod, prefix string, follow bool, w io.Writer, mu *sync.Mutex) {
	rc, err := c.kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: mainContainer, Follow: follow}).Stream(ctx)
	if err != nil {
		if ctx.Err() == nil {
			mu.Lock()
			fmt.Fprintf(w, "%s: (no log: %v)\n", prefix, err)
			flush(w)
			mu.Unlock()
		}
		return
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 0, 4096), maxLogLine)
	for sc.Scan() {
		mu.Lock()
		fmt.Fprintf(w, "%s: %s\n", prefix, sc.Bytes())
		flush(w)
		mu.Unlock()
	}
}

func flush(w io.Writer) {
	if f, ok := w.(interface{ Flush() }); ok {
		f.Flush()
	}
}
