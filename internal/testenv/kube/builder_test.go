package kube_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/testenv/containers"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// TestRealNodeBuilderPod is the builder pod a `build` step on Kubernetes would run, by hand: a
// pod of the buildah image (`ctrenv builder-image`: Debian's buildah on the busybox base) on the
// real node builds a Dockerfile with a RUN instruction from a base image in the loopback
// registry and pushes the result there; a second pod runs the built image. The pod is privileged
// (buildah's chroot isolation mounts) and on the node's network (the registry listens on the
// host's 127.0.0.1).
func TestRealNodeBuilderPod(t *testing.T) {
	c, reg := realNodeCluster(t)
	ns := c.Namespace(t)
	builder := reg.BuilderImage(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	core := c.Client.CoreV1()
	dockerfile := "FROM " + reg.Ref(containers.ImageBusybox) + "\nRUN echo built-in-a-pod > /built.txt\nCMD [\"cat\", \"/built.txt\"]\n"
	if _, err := core.ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "context"},
		Data: map[string]string{"Dockerfile": dockerfile}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry"},
		Data: map[string][]byte{"ca.crt": reg.CACert, "creds": []byte(reg.Username + ":" + reg.Password)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	built := reg.Ref("freshet-test/built-by-pod:" + ns)
	certs := "/certs/" + reg.Addr
	script := `mkdir -p ` + certs + ` && cp /registry/ca.crt ` + certs + `/ca.crt && ` +
		`buildah bud --isolation chroot --cert-dir ` + certs + ` --creds "$(cat /registry/creds)" -t ` + built + ` -f /context/Dockerfile /context && ` +
		`buildah push --cert-dir ` + certs + ` --creds "$(cat /registry/creds)" ` + built
	sel, tol := kube.RealNodePlacement()
	privileged := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "builder"}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, NodeSelector: sel, Tolerations: tol, HostNetwork: true,
		Containers: []corev1.Container{{Name: "buildah", Image: builder, Command: []string{"sh", "-c", script},
			SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
			VolumeMounts:    []corev1.VolumeMount{{Name: "context", MountPath: "/context"}, {Name: "registry", MountPath: "/registry"}}}},
		Volumes: []corev1.Volume{
			{Name: "context", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "context"}}}},
			{Name: "registry", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "registry"}}},
		}}}
	if phase, log := runPod(t, c, ns, pod); phase != corev1.PodSucceeded || !strings.Contains(log, "Writing manifest to image destination") {
		t.Fatalf("builder pod ended %s:\n%s", phase, log)
	}
	run := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "built"}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, NodeSelector: sel, Tolerations: tol,
		Containers: []corev1.Container{{Name: "main", Image: built}}}}
	if phase, log := runPod(t, c, ns, run); phase != corev1.PodSucceeded || log != "built-in-a-pod\n" {
		t.Errorf("the built image's pod ended %s with log %q, want Succeeded and %q", phase, log, "built-in-a-pod\n")
	}
}

// runPod creates pod in ns, waits until it ends and returns its phase and log.
func runPod(t *testing.T, c *kube.Cluster, ns string, pod *corev1.Pod) (corev1.PodPhase, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var phase corev1.PodPhase
	waitFor(t, 5*time.Minute, "pod "+pod.Name+" to end", func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	log, err := c.Client.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("log of %s: %v", pod.Name, err)
	}
	return phase, string(log)
}
