package kubernetes

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// exitCodeKilled is reported for a step whose pod was deleted before its exit code was known.
const exitCodeKilled = 128 + 9

// fatalWaiting are the waiting reasons of a container that will not start without a change to
// the step: the step fails at once instead of waiting for Options.StartTimeout.
var fatalWaiting = []string{"ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName"}

// containerStatus returns the status of container name in p, or nil.
func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// stepStarted reports whether the step container has started (it runs or has run).
func stepStarted(p *corev1.Pod) bool {
	c := containerStatus(p, StepContainer)
	return c != nil && (c.State.Running != nil || c.State.Terminated != nil)
}

// stepTerminated returns the step container's terminated state, or nil.
func stepTerminated(p *corev1.Pod) *corev1.ContainerStateTerminated {
	if c := containerStatus(p, StepContainer); c != nil {
		return c.State.Terminated
	}
	return nil
}

// podDone reports whether the pod has finished: every container has exited.
func podDone(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// startFailure describes why the pod's containers will never start, or returns "".
func startFailure(p *corev1.Pod) string {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, c := range list {
			if w := c.State.Waiting; w != nil && slices.Contains(fatalWaiting, w.Reason) {
				return fmt.Sprintf("container %s cannot start: image %q: %s: %s", c.Name, c.Image, w.Reason, oneLine(w.Message))
			}
		}
	}
	return ""
}

// pending describes why the pod has not started its step container yet.
func pending(p *corev1.Pod) string {
	var why []string
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			why = append(why, fmt.Sprintf("not scheduled: %s: %s", c.Reason, oneLine(c.Message)))
		}
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, c := range list {
			if w := c.State.Waiting; w != nil && w.Reason != "PodInitializing" {
				why = append(why, fmt.Sprintf("container %s waiting: %s: %s", c.Name, w.Reason, oneLine(w.Message)))
			}
		}
	}
	if len(why) == 0 {
		why = append(why, "phase "+string(p.Status.Phase))
	}
	return strings.Join(why, "; ")
}

// exitStatus returns the step's exit code from the pod's last known state, with notices that
// explain it when the code alone does not (a container that could not start, OOMKilled, a pod
// that failed before its step ran). known is false when the step container has not terminated.
func exitStatus(p *corev1.Pod) (code int, notes []string, known bool) {
	if t := stepTerminated(p); t != nil {
		code = int(t.ExitCode)
		if code == 0 && t.Signal != 0 {
			code = 128 + int(t.Signal)
		}
		switch t.Reason {
		case "OOMKilled":
			notes = append(notes, "the step container was killed for exceeding its memory limit (OOMKilled)")
			if code == 0 {
				code = exitCodeKilled
			}
		case "StartError", "ContainerCannotRun":
			// The runtime could not start the command: most often the shell or entry point is
			// not in the image.
			notes = append(notes, fmt.Sprintf("the step's command could not be started: %s: %s", t.Reason, oneLine(t.Message)))
			code = executor.ExitCodeNotFound
		}
		return code, notes, true
	}
	for _, c := range p.Status.InitContainerStatuses {
		if t := c.State.Terminated; t != nil && t.ExitCode != 0 && c.Name == InitContainer {
			notes = append(notes, fmt.Sprintf("the pod's %s container failed with exit code %d: %s %s", c.Name, t.ExitCode, t.Reason, oneLine(t.Message)))
		}
	}
	if p.Status.Reason != "" || p.Status.Message != "" {
		notes = append(notes, fmt.Sprintf("the pod ended: %s: %s", p.Status.Reason, oneLine(p.Status.Message)))
	}
	return executor.ExitCodeNotFound, notes, false
}

// oneLine keeps a message from the cluster on one line of bounded length.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return s
}
