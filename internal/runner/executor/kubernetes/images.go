package kubernetes

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// Interface guard: build and push steps run in builder pods.
var _ executor.ImageBuilder = (*Kubernetes)(nil)

// Where a builder pod finds what the executor gives it.
const (
	// registryDir holds auth.json, the credentials of the registries a builder pod uses
	// (containers-auth.json(5), from a Secret of the step's own).
	registryDir   = "/freshet-registry"
	authFile      = registryDir + "/auth.json"
	certsDir      = "/etc/containers/certs.d" // <host>/ca.crt: the registries' CAs, same Secret
	storageDir    = "/var/lib/containers"     // buildah's storage: an emptyDir (no overlay on overlay)
	iidFile       = "/tmp/freshet-iid"
	inlineFile    = "/tmp/freshet-inline.Dockerfile" // an inline Dockerfile, written from dockerfileEnv
	dockerfileEnv = "FRESHET_DOCKERFILE"
	digestFile    = "/tmp/freshet-digest"
	termLog       = "/dev/termination-log"
	archiveEnv    = "FRESHET_ARCHIVE"
	imagesSubdir  = ".freshet/images" // in the workspace: the built images, as OCI archives
)

// Termination messages of the builder scripts (the kubelet keeps the first 4 KiB).
const (
	msgMissing = "dockerfile-missing"
	msgFailed  = "failed\n" // then the head of the Dockerfile
	msgBuilt   = "built "   // then the image ID
	msgPushed  = "pushed "  // then the manifest digest
)

// buildScript runs in a builder pod: $1 is the Dockerfile, the rest are buildah bud's arguments
// (options, then the context directory). Every value of the user's reaches it as an argument,
// never as shell text. The built image is saved to $FRESHET_ARCHIVE in the workspace, where the
// push steps of the build find it.
const buildScript = `set -e
df=$1; shift
if [ -n "${` + dockerfileEnv + `:-}" ]; then printf '%s\n' "$` + dockerfileEnv + `" > "$df"; fi
if [ ! -f "$df" ]; then printf '` + msgMissing + `' > ` + termLog + `; exit 66; fi
if ! buildah bud --isolation chroot --iidfile ` + iidFile + ` -f "$df" "$@"; then
  { printf 'failed\n'; head -c 3800 "$df"; } > ` + termLog + `
  exit 1
fi
mkdir -p "$(dirname "$` + archiveEnv + `")"
rm -f "$` + archiveEnv + `"
buildah push --quiet "$(cat ` + iidFile + `)" "oci-archive:$` + archiveEnv + `"
printf '` + msgBuilt + `%s' "$(cat ` + iidFile + `)" > ` + termLog + `
`

// pushScript runs in a builder pod: $1 is the target reference, the rest are buildah push's
// options. It loads the archive a build step saved and pushes it.
const pushScript = `set -e
target=$1; shift
id=$(buildah pull --quiet "oci-archive:$` + archiveEnv + `")
buildah push "$@" --digestfile ` + digestFile + ` "$id" "docker://$target"
printf '` + msgPushed + `%s' "$(cat ` + digestFile + `)" > ` + termLog + `
`

// builtImage is an image a build step made: an OCI archive in its build's workspace.
type builtImage struct {
	ws      executor.Workspace
	archive string // its path as builder pods see it
	id      string
}

// images remembers the images built on this executor by reference and ID, for push steps
// (Push names its source by reference). Cleanup forgets a workspace's.
type images struct {
	mu sync.Mutex
	m  map[string]builtImage
}

func (im *images) put(img builtImage, refs ...string) {
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.m == nil {
		im.m = map[string]builtImage{}
	}
	for _, r := range refs {
		im.m[r] = img
	}
}

func (im *images) get(ref string) (builtImage, bool) {
	im.mu.Lock()
	defer im.mu.Unlock()
	img, ok := im.m[ref]
	return img, ok
}

func (im *images) forget(handle string) {
	im.mu.Lock()
	defer im.mu.Unlock()
	maps.DeleteFunc(im.m, func(_ string, img builtImage) bool { return img.ws.Handle == handle })
}

// Build builds b's Dockerfile in a builder pod (Options.BuilderImage, buildah) that mounts the
// build's workspace, and saves the image to the workspace for the build's push steps. See
// executor.ImageBuilder and docs/executors.md.
func (k *Kubernetes) Build(ctx context.Context, ws executor.Workspace, b executor.BuildSpec, out io.Writer) (res executor.BuildResult, err error) {
	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	if out == nil {
		out = io.Discard
	}
	o := executor.NewOutput(out)
	fail := func(format string, args ...any) (executor.BuildResult, error) {
		res.Message = fmt.Sprintf(format, args...)
		o.Notice("%s", res.Message)
		return res, nil
	}
	if len(b.Tags) == 0 {
		return res, fmt.Errorf("build %s: %w: no tag for the image", b.Name, executor.ErrInvalidStep)
	}
	image := b.Tags[0]
	args, dir, msg := buildArgs(ws, b)
	if msg != "" {
		return fail("build of %s: %s", image, msg)
	}
	dfPath := args[0] // for messages
	if b.DockerfileContent != "" {
		dfPath = "the inline dockerfile"
	}
	archive := path.Join(ws.Path, imagesSubdir, randomName()+".tar")
	step := executor.Step{Name: b.Name, Image: k.opts.BuilderImage, Timeout: b.Timeout,
		EntryPoint: []string{"sh", "-c", buildScript, "freshet-build"},
		Env:        []executor.EnvVar{{Name: archiveEnv, Value: archive}}}
	if b.DockerfileContent != "" {
		step.Env = append(step.Env, executor.EnvVar{Name: dockerfileEnv, Value: b.DockerfileContent})
	}
	secret, authArgs, err := k.registrySecret(ws, b.Name, b.Registries)
	if err != nil {
		return res, fmt.Errorf("build %s: %w", b.Name, err)
	}
	step.Cmd = append(append(args, authArgs...), dir)
	o.Notice("building %s from %s in a builder pod (%s)", image, dfPath, k.opts.BuilderImage)
	tr := &buildLog{w: out}
	r, last, err := k.runBuilder(ctx, ws, step, secret, tr)
	switch {
	case ctx.Err() != nil || r.Canceled:
		res.Canceled = true
		return fail("build of %s canceled", image)
	case r.TimedOut:
		res.TimedOut = true
		return fail("build of %s timed out after %s", image, b.Timeout)
	case err != nil:
		return res, fmt.Errorf("build %s: %w", b.Name, err)
	}
	msg = terminationMessage(last)
	switch {
	case r.ExitCode == 0 && strings.HasPrefix(msg, msgBuilt):
		res.ImageID = strings.TrimSpace(strings.TrimPrefix(msg, msgBuilt))
		if !strings.HasPrefix(res.ImageID, "sha256:") {
			res.ImageID = "sha256:" + res.ImageID
		}
		k.images.put(builtImage{ws: ws, archive: archive, id: res.ImageID}, append(slices.Clone(b.Tags), res.ImageID)...)
		o.Notice("built %s (%s)", image, res.ImageID)
		return res, nil
	case msg == msgMissing:
		return fail("build of %s failed: %s not found in the build context", image, dfPath)
	case strings.HasPrefix(msg, msgFailed):
		where := ""
		if line, instr := executor.DockerfileInstruction([]byte(strings.TrimPrefix(msg, msgFailed)), tr.lastStep()); line > 0 {
			where = fmt.Sprintf(" at %s line %d (%s)", dfPath, line, instr)
		}
		why := tr.lastError()
		if why == "" {
			why = "buildah exited with an error"
		}
		return fail("build of %s failed%s: %s", image, where, why)
	case r.ExitCode == executor.ExitCodeNotFound && last != nil && !stepStarted(last):
		return fail("build of %s: the builder pod did not run (builder image %s): %s", image, k.opts.BuilderImage, pending(last))
	}
	return fail("build of %s failed: the builder pod's buildah exited with code %d", image, r.ExitCode)
}

// buildArgs checks b and returns the build script's arguments: the Dockerfile's path, then
// buildah bud's options (without the credentials and the context directory, which is dir). msg
// says what is wrong with b.
func buildArgs(ws executor.Workspace, b executor.BuildSpec) (args []string, dir, msg string) {
	dir, dockerfile, msg := b.Context(ws.Path)
	switch {
	case msg != "":
		return nil, "", msg
	case dockerfile == "":
		args = []string{inlineFile}
	default:
		args = []string{path.Join(dir, dockerfile)}
	}
	for _, t := range b.Tags {
		args = append(args, "--tag", t)
	}
	for _, a := range b.BuildArgs {
		args = append(args, "--build-arg", a.Name+"="+a.Value)
	}
	if b.Target != "" {
		args = append(args, "--target", b.Target)
	}
	if b.Platform != "" {
		if why := checkPlatform(b.Platform); why != "" {
			return nil, "", fmt.Sprintf("platform %q: %s", b.Platform, why)
		}
		args = append(args, "--platform", b.Platform)
	}
	if b.NoCache {
		args = append(args, "--no-cache")
	}
	if len(b.CacheFrom) > 0 || b.CacheTo != "" {
		args = append(args, "--layers")
		for _, c := range b.CacheFrom {
			args = append(args, "--cache-from", c)
		}
		if b.CacheTo != "" {
			args = append(args, "--cache-to", b.CacheTo)
		}
	}
	if insecure(b.Registries) {
		args = append(args, "--tls-verify=false")
	}
	return args, dir, ""
}

// Push pushes an image a build step of this executor made (p.Source: one of its tags or its ID)
// to p.Target from a builder pod, with p.Registry's credentials, and reads the digest and size
// back from the registry. See executor.ImageBuilder.
func (k *Kubernetes) Push(ctx context.Context, p executor.PushSpec, out io.Writer) (executor.PushResult, error) {
	var res executor.PushResult
	if out == nil {
		out = io.Discard
	}
	o := executor.NewOutput(out)
	fail := func(format string, args ...any) (executor.PushResult, error) {
		res.Message = fmt.Sprintf(format, args...)
		o.Notice("%s", res.Message)
		return res, nil
	}
	img, ok := k.images.get(p.Source)
	if !ok {
		return fail("push of %s: image %s was not built by a build step of this build (the kubernetes executor pushes only images its build steps made)", p.Target, p.Source)
	}
	step := executor.Step{Name: p.Name, Image: k.opts.BuilderImage,
		EntryPoint: []string{"sh", "-c", pushScript, "freshet-push"},
		Env:        []executor.EnvVar{{Name: archiveEnv, Value: img.archive}}}
	secret, authArgs, err := k.registrySecret(img.ws, p.Name, []executor.Registry{p.Registry})
	if err != nil {
		return res, fmt.Errorf("push %s: %w", p.Name, err)
	}
	step.Cmd = append([]string{p.Target}, authArgs...)
	if insecure([]executor.Registry{p.Registry}) {
		step.Cmd = append(step.Cmd, "--tls-verify=false")
	}
	o.Notice("pushing %s to registry %s from a builder pod", p.Target, p.Registry.Name)
	tr := &buildLog{w: out}
	r, last, err := k.runBuilder(ctx, img.ws, step, secret, tr)
	switch {
	case ctx.Err() != nil || r.Canceled:
		return fail("push of %s canceled", p.Target)
	case err != nil:
		return res, fmt.Errorf("push %s: %w", p.Name, err)
	}
	msg := terminationMessage(last)
	if r.ExitCode != 0 || !strings.HasPrefix(msg, msgPushed) {
		why := tr.lastError()
		if why == "" {
			why = fmt.Sprintf("buildah exited with code %d", r.ExitCode)
		}
		if r.ExitCode == executor.ExitCodeNotFound && last != nil && !stepStarted(last) {
			why = fmt.Sprintf("the builder pod did not run (builder image %s): %s", k.opts.BuilderImage, pending(last))
		}
		return fail("push of %s to registry %s failed: %s", p.Target, p.Registry.Name, why)
	}
	digest := strings.TrimSpace(strings.TrimPrefix(msg, msgPushed))
	d, size, err := executor.RemoteManifest(ctx, p.Target, p.Registry)
	if err != nil {
		o.Notice("pushed %s (%s); its size could not be read back: %s", p.Target, digest, oneLine(err.Error()))
		res.Digest = digest
		return res, nil
	}
	res.Digest, res.Size = d, size
	o.Notice("pushed %s@%s (%d bytes)", p.Target, d, size)
	return res, nil
}

// runBuilder runs step in a builder pod: a step pod whose container runs privileged (buildah's
// chroot isolation mounts), with buildah's storage on an emptyDir, the registry Secret mounted,
// and on the node's network when Options.BuilderHostNetwork. The Secret is created once the pod
// exists, owned by it: the garbage collector deletes it with the pod, so the runner needs no
// right to list, read or delete Secrets (the kubelet waits for the Secret before it starts the
// container).
func (k *Kubernetes) runBuilder(ctx context.Context, ws executor.Workspace, step executor.Step, secret *corev1.Secret, out io.Writer) (executor.Result, *corev1.Pod, error) {
	pvc, err := k.claim(ctx, ws)
	if err != nil {
		if ctx.Err() != nil {
			return executor.Result{Canceled: true}, nil, nil
		}
		return executor.Result{}, nil, err
	}
	pod, err := k.podFor(ws, pvc, step, ws.Path, true)
	if err != nil {
		return executor.Result{}, nil, err
	}
	k.builderPod(pod, secret)
	var created func(context.Context, *corev1.Pod) error
	if secret != nil {
		created = func(ctx context.Context, pod *corev1.Pod) error { return k.createSecret(ctx, secret, pod) }
	}
	return k.runPod(ctx, ws, step, pod, out, created)
}

// builderPod turns a step pod into a builder pod.
func (k *Kubernetes) builderPod(pod *corev1.Pod, secret *corev1.Secret) {
	privileged := true
	spec := &pod.Spec
	spec.HostNetwork = k.opts.BuilderHostNetwork
	if spec.HostNetwork {
		spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	c := &spec.Containers[0]
	c.SecurityContext = &corev1.SecurityContext{Privileged: &privileged}
	c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "buildah-storage", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "buildah-storage", MountPath: storageDir})
	if secret == nil {
		return
	}
	mode := int32(0o400)
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "registry-auth", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret.Name, DefaultMode: &mode, Items: []corev1.KeyToPath{{Key: "auth.json", Path: "auth.json"}},
	}}})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "registry-auth", MountPath: registryDir, ReadOnly: true})
	var certs []corev1.KeyToPath
	for _, key := range slices.Sorted(maps.Keys(secret.Data)) {
		if strings.HasPrefix(key, "ca-") {
			// Secret keys cannot hold ':'; the annotation maps the key back to host[:port].
			certs = append(certs, corev1.KeyToPath{Key: key, Path: secret.Annotations["freshet.dev/"+key] + "/ca.crt"})
		}
	}
	if len(certs) > 0 {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "registry-certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret.Name, Items: certs,
		}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "registry-certs", MountPath: certsDir, ReadOnly: true})
	}
}

// registrySecret returns the Secret of one builder pod (not created yet: see runBuilder): the
// credentials of regs as containers-auth.json, and their CAs. It returns nil when regs have
// neither, and the arguments that point buildah at the credentials.
func (k *Kubernetes) registrySecret(ws executor.Workspace, step string, regs []executor.Registry) (*corev1.Secret, []string, error) {
	type auth struct {
		Auth string `json:"auth"`
	}
	auths := map[string]auth{}
	data := map[string][]byte{}
	annotations := map[string]string{AnnotationBuildID: ws.BuildID, AnnotationStepName: step}
	for _, r := range regs {
		host := executor.RegistryHost(r.URL)
		if host == "" {
			continue
		}
		if r.Username != "" || r.Password != "" {
			key := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(r.URL, "https://"), "http://"), "/")
			auths[key] = auth{Auth: base64.StdEncoding.EncodeToString([]byte(r.Username + ":" + r.Password))}
		}
		if r.CA != "" {
			key := "ca-" + dnsLabel(host, 60)
			data[key] = []byte(r.CA)
			annotations["freshet.dev/"+key] = host
		}
	}
	if len(auths) == 0 && len(data) == 0 {
		return nil, nil, nil
	}
	var args []string
	if len(auths) > 0 {
		b, err := json.Marshal(map[string]any{"auths": auths})
		if err != nil {
			return nil, nil, err
		}
		data["auth.json"] = b
		args = []string{"--authfile", authFile}
	} else {
		data["auth.json"] = []byte(`{"auths":{}}`)
	}
	labels := k.labels(nil, ws.BuildID)
	labels[LabelStep] = labelValue(step)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "freshet-" + dnsLabel(ws.BuildID, 24) + "-" + dnsLabel(step, 20) + "-" + randomName(),
			Namespace: k.namespace, Labels: labels, Annotations: annotations},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}, args, nil
}

// createSecret creates s owned by pod, the builder pod that mounts it.
func (k *Kubernetes) createSecret(ctx context.Context, s *corev1.Secret, pod *corev1.Pod) error {
	s = s.DeepCopy()
	s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), apiTimeout)
	defer cancel()
	if _, err := k.client.CoreV1().Secrets(k.namespace).Create(actx, s, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the registry secret of builder pod %s: %w", pod.Name, err)
	}
	return nil
}

// terminationMessage is the message the step container of p left, or "".
func terminationMessage(p *corev1.Pod) string {
	if p == nil {
		return ""
	}
	if t := stepTerminated(p); t != nil {
		return t.Message
	}
	return ""
}

// insecure reports whether a registry is reached over plain HTTP (its URL says http://).
func insecure(regs []executor.Registry) bool {
	for _, r := range regs {
		if strings.HasPrefix(r.URL, "http://") {
			return true
		}
	}
	return false
}

// checkPlatform checks os/arch[/variant].
func checkPlatform(s string) string {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || slices.Contains(parts, "") {
		return "want os/arch or os/arch/variant, e.g. linux/amd64"
	}
	return ""
}

func randomName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// buildLog passes a builder pod's log through and remembers the last build step buildah
// announced ("STEP 2/5: RUN …") and the last error line it printed.
type buildLog struct {
	w io.Writer

	mu      sync.Mutex
	partial []byte
	step    int
	err     string
}

var (
	buildahStep  = regexp.MustCompile(`^STEP (\d+)(?:/\d+)?:`)
	buildahError = regexp.MustCompile(`(?i)^(error:|error building|.*level=error )`)
)

func (l *buildLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.line(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	if len(l.partial) > 8<<10 {
		l.partial = l.partial[:0] // a line too long to be a STEP or error line
	}
	l.mu.Unlock()
	return l.w.Write(p)
}

func (l *buildLog) line(s string) {
	s = strings.TrimSpace(s)
	if m := buildahStep.FindStringSubmatch(s); m != nil {
		l.step, _ = strconv.Atoi(m[1])
	}
	if buildahError.MatchString(s) {
		l.err = oneLine(strings.TrimPrefix(s, "Error: "))
	}
}

func (l *buildLog) lastStep() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.step
}

func (l *buildLog) lastError() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == "" && len(l.partial) > 0 {
		l.line(string(l.partial))
	}
	return l.err
}
