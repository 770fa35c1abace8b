package kubernetes

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
)

// Build and push steps on Kubernetes: the arguments and the pod (no cluster), the builder
// scripts against the real buildah on this machine with the loopback registry (the container
// suites' gate), the registry Secret on the loopback apiserver, and the whole path through
// builder pods on the real node (FRESHET_TEST_REAL_NODE=1).

// hostileValue is a build argument that would run commands if any shell evaluated it.
const hostileValue = "a;b $(touch /tmp/freshet-pwned) `id` 'q' \"d\" $HOME"

func TestBuildArgs(t *testing.T) {
	ws := executor.Workspace{BuildID: "b1", Path: "/codefresh/volume", Handle: ClaimName("b1")}
	args, dir, msg := buildArgs(ws, executor.BuildSpec{ContextDir: "/codefresh/volume/app", Dockerfile: "docker/Dockerfile",
		Tags: []string{"r.example/x:1", "r.example/x:2"}, BuildArgs: []executor.EnvVar{{Name: "MSG", Value: hostileValue}},
		Target: "final", Platform: "linux/arm64/v8", NoCache: true, CacheTo: "r.example/x-cache",
		Registries: []executor.Registry{{URL: "http://plain.example:5000"}}})
	want := []string{"/codefresh/volume/app/docker/Dockerfile", "--tag", "r.example/x:1", "--tag", "r.example/x:2",
		"--build-arg", "MSG=" + hostileValue, "--target", "final", "--platform", "linux/arm64/v8", "--no-cache",
		"--layers", "--cache-to", "r.example/x-cache", "--tls-verify=false"}
	if msg != "" || dir != "/codefresh/volume/app" || !slices.Equal(args, want) {
		t.Errorf("buildArgs = %q, %q, %q\nwant %q", args, dir, msg, want)
	}
	for _, c := range []struct {
		b    executor.BuildSpec
		want string
	}{
		{executor.BuildSpec{ContextDir: "/etc"}, "the build context /etc is outside the workspace (/codefresh/volume)"},
		{executor.BuildSpec{ContextDir: "/codefresh/volume-other"}, "outside the workspace"},
		{executor.BuildSpec{ContextDir: "/codefresh/volume", Dockerfile: "../Dockerfile"}, "dockerfile ../Dockerfile must be a path inside the build context /codefresh/volume"},
		{executor.BuildSpec{ContextDir: "/codefresh/volume", Dockerfile: "/etc/passwd"}, "must be a path inside the build context"},
		{executor.BuildSpec{ContextDir: "/codefresh/volume", Platform: "linux"}, `platform "linux": want os/arch or os/arch/variant`},
	} {
		if _, _, msg := buildArgs(ws, c.b); !strings.Contains(msg, c.want) {
			t.Errorf("buildArgs(%+v) says %q, want %q", c.b, msg, c.want)
		}
	}
}

func TestBuilderPod(t *testing.T) {
	k, err := NewWithClient(nil, Options{Namespace: "builds", BuilderImage: "reg.example/buildah:1", BuilderHostNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	ws := executor.Workspace{BuildID: "b1", Path: DefaultWorkspacePath, Handle: ClaimName("b1")}
	args, dir, _ := buildArgs(ws, executor.BuildSpec{ContextDir: ws.Path, Tags: []string{"r.example/x:1"},
		BuildArgs: []executor.EnvVar{{Name: "MSG", Value: hostileValue}}})
	step := executor.Step{Name: "build", Image: k.opts.BuilderImage, EntryPoint: []string{"sh", "-c", buildScript, "freshet-build"},
		Cmd: append(args, dir)}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: ws.Handle, Labels: k.labels(nil, ws.BuildID)}}
	pod, err := k.podFor(ws, pvc, step, ws.Path, true)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Annotations: map[string]string{"freshet.dev/ca-127-0-0-1-5000": "127.0.0.1:5000"}},
		Data: map[string][]byte{"auth.json": []byte("{}"), "ca-127-0-0-1-5000": []byte("PEM")}}
	k.builderPod(pod, secret)
	c := pod.Spec.Containers[0]
	// The user's values are arguments of the fixed script, never part of it; "$" is doubled
	// against the kubelet's $(VAR) expansion.
	if len(c.Command) < 4 || c.Command[0] != "sh" || c.Command[1] != "-c" || c.Command[2] != escape(buildScript) || c.Command[3] != "freshet-build" {
		t.Fatalf("command = %q", c.Command)
	}
	if !slices.Contains(c.Command, "MSG="+strings.ReplaceAll(hostileValue, "$", "$$")) {
		t.Errorf("the build argument is not one escaped argument: %q", c.Command)
	}
	if c.Image != "reg.example/buildah:1" || c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
		t.Errorf("builder container: image %q, security context %+v", c.Image, c.SecurityContext)
	}
	if !pod.Spec.HostNetwork || pod.Spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("host network %v, DNS policy %q", pod.Spec.HostNetwork, pod.Spec.DNSPolicy)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	for _, p := range []string{ws.Path, storageDir, registryDir, certsDir} {
		if mounts[p] == "" {
			t.Errorf("nothing mounted at %s: %v", p, mounts)
		}
	}
	for _, v := range pod.Spec.Volumes {
		switch v.Name {
		case "buildah-storage":
			if v.EmptyDir == nil {
				t.Errorf("buildah's storage is not an emptyDir: %+v", v.VolumeSource)
			}
		case "registry-certs":
			if len(v.Secret.Items) != 1 || v.Secret.Items[0].Path != "127.0.0.1:5000/ca.crt" {
				t.Errorf("CA items = %+v, want 127.0.0.1:5000/ca.crt", v.Secret.Items)
			}
		}
	}
	res, err := k.Push(t.Context(), executor.PushSpec{Name: "push", Source: "never/built:1", Target: "r.example/x:1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Message, "image never/built:1 was not built by a build step of this build") {
		t.Errorf("push of an image nothing built: %q", res.Message)
	}
}

func TestBuildLog(t *testing.T) {
	out := "STEP 1/3: FROM scratch\nSTEP 2/3: COPY a /a\n" +
		"STEP 3/3: RUN exit 3\nerror running container: exit status 3\n" +
		"Error: error building at STEP \"RUN exit 3\": error while running runtime: exit status 3\n"
	var got bytes.Buffer
	l := &buildLog{w: &got}
	for i := 0; i < len(out); i += 7 { // in pieces that split lines
		if _, err := l.Write([]byte(out[i:min(i+7, len(out))])); err != nil {
			t.Fatal(err)
		}
	}
	if got.String() != out {
		t.Errorf("the log is changed: %q", got.String())
	}
	if l.lastStep() != 3 || l.lastError() != `error building at STEP "RUN exit 3": error while running runtime: exit status 3` {
		t.Errorf("step %d, error %q", l.lastStep(), l.lastError())
	}
}

// scriptEnv runs the builder scripts on this machine with Debian's buildah as root: its
// storage (vfs) and the scripts' files in a temporary directory.
type scriptEnv struct {
	dir, ws, storageConf string
	reg                  *containers.RegistryInstance
	env                  []string // more environment for the next run
}

func newScriptEnv(t *testing.T) *scriptEnv {
	t.Helper()
	reg := containers.Registry(t)
	if _, err := exec.LookPath("buildah"); err != nil || os.Geteuid() != 0 {
		if os.Getenv(containers.EnvRequire) == "1" {
			t.Fatalf("the builder scripts need buildah and root (%s=1 forbids skipping): %s", containers.EnvRequire, containers.InstallHint)
		}
		t.Skipf("the builder scripts need buildah and root: %s", containers.InstallHint)
	}
	dir := t.TempDir()
	e := &scriptEnv{dir: dir, ws: filepath.Join(dir, "ws"), storageConf: filepath.Join(dir, "storage.conf"), reg: reg}
	conf := "[storage]\ndriver = \"vfs\"\nrunroot = \"" + filepath.Join(dir, "run") + "\"\ngraphroot = \"" + filepath.Join(dir, "storage") + "\"\n"
	if err := os.WriteFile(e.storageConf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(e.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

// run runs script (buildScript or pushScript, with its fixed files moved into the temporary
// directory) with args and the archive path, and returns its exit code, its output and the
// termination message it left.
func (e *scriptEnv) run(t *testing.T, script, archive string, args ...string) (int, string, string) {
	t.Helper()
	term := filepath.Join(e.dir, "termination-log")
	_ = os.Remove(term)
	script = strings.NewReplacer(termLog, term, iidFile, filepath.Join(e.dir, "iid"), digestFile, filepath.Join(e.dir, "digest")).Replace(script)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", script, "freshet-test"}, args...)...)
	cmd.Env = append(append(os.Environ(), "CONTAINERS_STORAGE_CONF="+e.storageConf, archiveEnv+"="+archive), e.env...)
	e.env = nil
	cmd.Dir = e.dir
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run the script: %v", err)
	}
	msg, _ := os.ReadFile(term)
	return code, string(out), string(msg)
}

func (e *scriptEnv) write(t *testing.T, files map[string]string) {
	t.Helper()
	for n, c := range files {
		p := filepath.Join(e.ws, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBuilderScripts runs the scripts a builder pod runs against the real buildah and the
// loopback registry: a build whose argument would run commands in any shell that evaluated it,
// the push of its archive (digest as the registry has it, the argument intact in the image), a
// Dockerfile that fails at a line, a missing Dockerfile, and a registry that refuses the
// credentials.
func TestBuilderScripts(t *testing.T) {
	e := newScriptEnv(t)
	ws := executor.Workspace{BuildID: "b1", Path: e.ws, Handle: ClaimName("b1")}
	e.write(t, map[string]string{
		"app/Dockerfile": "FROM scratch\nARG MSG\nLABEL msg=\"${MSG}\"\nCOPY hello.txt /hello.txt\n",
		"app/hello.txt":  "hello\n",
		"bad/Dockerfile": "FROM scratch\n# a comment\n\nCOPY hello.txt \\\n  /hello.txt\nCOPY missing.txt /missing.txt\n",
		"bad/hello.txt":  "hello\n",
	})
	_ = os.Remove("/tmp/freshet-pwned")
	target := e.reg.Ref("freshet-test/script-built:" + strings.ToLower(t.Name()))
	args, dir, msg := buildArgs(ws, executor.BuildSpec{ContextDir: filepath.Join(e.ws, "app"), Tags: []string{target},
		BuildArgs: []executor.EnvVar{{Name: "MSG", Value: hostileValue}}})
	if msg != "" {
		t.Fatal(msg)
	}
	archive := filepath.Join(e.ws, imagesSubdir, "one.tar")
	code, out, term := e.run(t, buildScript, archive, append(args, dir)...)
	if code != 0 || !strings.HasPrefix(term, msgBuilt+"sha256:") {
		t.Fatalf("build: exit %d, termination message %q\n%s", code, term, out)
	}
	if _, err := os.Stat(archive); err != nil {
		t.Fatalf("the archive: %v", err)
	}
	if _, err := os.Stat("/tmp/freshet-pwned"); err == nil {
		t.Fatal("a build argument ran as a command")
	}

	auth := filepath.Join(e.dir, "auth.json")
	writeAuth(t, auth, e.reg.Addr, e.reg.Username, e.reg.Password)
	code, out, term = e.run(t, pushScript, archive, target, "--authfile", auth, "--cert-dir", e.reg.CertDir)
	if code != 0 || !strings.HasPrefix(term, msgPushed+"sha256:") {
		t.Fatalf("push: exit %d, termination message %q\n%s", code, term, out)
	}
	reg := executor.Registry{Name: "loopback", URL: e.reg.Addr, Username: e.reg.Username, Password: e.reg.Password, CA: string(e.reg.CACert)}
	digest, size, err := executor.RemoteManifest(t.Context(), target, reg)
	if err != nil || digest != strings.TrimPrefix(term, msgPushed) || size <= 0 {
		t.Errorf("the registry has %s (%d bytes, %v); the script said %q", digest, size, err, term)
	}
	ref, _ := name.ParseReference(target)
	img, err := remote.Image(ref, remote.WithAuth(&authn.Basic{Username: e.reg.Username, Password: e.reg.Password}), remote.WithTransport(e.reg.HTTPClient().Transport))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil || cfg.Config.Labels["msg"] != hostileValue {
		t.Errorf("the image's label msg = %q (%v), want the build argument %q", cfg.Config.Labels["msg"], err, hostileValue)
	}

	args, dir, _ = buildArgs(ws, executor.BuildSpec{ContextDir: filepath.Join(e.ws, "bad"), Tags: []string{target}})
	var log bytes.Buffer
	bl := &buildLog{w: &log}
	code, out, term = e.run(t, buildScript, archive, append(args, dir)...)
	_, _ = bl.Write([]byte(out))
	if code == 0 || !strings.HasPrefix(term, msgFailed) {
		t.Fatalf("failing build: exit %d, termination message %q\n%s", code, term, out)
	}
	line, instr := executor.DockerfileInstruction([]byte(strings.TrimPrefix(term, msgFailed)), bl.lastStep())
	if line != 6 || instr != "COPY missing.txt /missing.txt" || !strings.Contains(bl.lastError(), "missing.txt") {
		t.Errorf("failing build: line %d (%q), error %q; want line 6\n%s", line, instr, bl.lastError(), out)
	}

	// An inline Dockerfile: written by the script from the environment, the context's own
	// Dockerfile not used.
	inline := "FROM scratch\nCOPY hello.txt /inline.txt\n"
	args, dir, _ = buildArgs(ws, executor.BuildSpec{ContextDir: filepath.Join(e.ws, "app"), DockerfileContent: inline, Tags: []string{target + "-inline"}})
	if args[0] != inlineFile {
		t.Fatalf("inline build arguments: %q", args)
	}
	args[0] = filepath.Join(e.dir, "inline.Dockerfile")
	e.env = []string{dockerfileEnv + "=" + inline}
	if code, out, term = e.run(t, buildScript, filepath.Join(e.ws, imagesSubdir, "inline.tar"), append(args, dir)...); code != 0 || !strings.HasPrefix(term, msgBuilt) || !strings.Contains(out, "COPY hello.txt /inline.txt") {
		t.Errorf("inline Dockerfile: exit %d, termination message %q\n%s", code, term, out)
	}

	args, dir, _ = buildArgs(ws, executor.BuildSpec{ContextDir: e.ws, Dockerfile: "nowhere/Dockerfile", Tags: []string{target}})
	if code, out, term = e.run(t, buildScript, archive, append(args, dir)...); code != 66 || term != msgMissing {
		t.Errorf("missing Dockerfile: exit %d, termination message %q\n%s", code, term, out)
	}

	writeAuth(t, auth, e.reg.Addr, e.reg.Username, "wrong-password")
	code, out, term = e.run(t, pushScript, archive, target, "--authfile", auth, "--cert-dir", e.reg.CertDir)
	bl = &buildLog{w: &log}
	_, _ = bl.Write([]byte(out))
	if code == 0 || term != "" || !strings.Contains(strings.ToLower(bl.lastError()), "unauthorized") {
		t.Errorf("push with a wrong password: exit %d, termination message %q, error %q\n%s", code, term, bl.lastError(), out)
	}
}

func writeAuth(t *testing.T, file, host, user, password string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password))}}})
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRealNodeBuildAndPush runs build and push steps through builder pods on the real node
// (FRESHET_TEST_REAL_NODE=1): a Dockerfile written by a step into the workspace claim, built
// FROM the loopback registry's busybox with a RUN, with a build argument that would run
// commands in a shell; pushed with the registry's credentials and CA from a Secret; then a step
// runs the built image. A Dockerfile failing at a line, a push whose credentials are refused,
// and Cleanup leaving no pod, claim or Secret.
func TestRealNodeBuildAndPush(t *testing.T) {
	if !realNode() {
		t.Skipf("set %s=1: builder pods need a node that runs containers", "FRESHET_TEST_REAL_NODE")
	}
	e := newTestEnv(t)
	k := e.executor(t, Options{BuilderImage: e.reg.BuilderImage(t), BuilderHostNetwork: true})
	ws := prepare(t, e, k, "images", nil)
	reg := executor.Registry{Name: "loopback", URL: e.reg.Addr, Username: e.reg.Username, Password: e.reg.Password, CA: string(e.reg.CACert)}
	base := e.reg.Ref(containers.ImageBusybox)
	write := executor.Step{Name: "write", Image: e.image(),
		Env: []executor.EnvVar{
			{Name: "GOOD", Value: "FROM " + base + "\nARG MSG\nRUN printf '%s\\n' \"$MSG\" > /msg.txt\nCMD [\"cat\", \"/msg.txt\"]\n"},
			{Name: "BAD", Value: "FROM " + base + "\n# comment\nRUN true\nRUN echo failing && exit 3\n"},
		},
		Commands: []string{`mkdir -p app bad && printf '%s' "$GOOD" > app/Dockerfile && printf '%s' "$BAD" > bad/Dockerfile`}}
	if res, out, _ := run(t, k, ws, write); !res.Succeeded() {
		t.Fatalf("write the Dockerfiles: %+v\n%s", res, out)
	}
	target := e.reg.Ref("freshet-test/k8s-built:" + e.ns)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	var log bytes.Buffer
	b, err := k.Build(ctx, ws, executor.BuildSpec{Name: "build", ContextDir: ws.Path + "/app", Tags: []string{target},
		BuildArgs: []executor.EnvVar{{Name: "MSG", Value: hostileValue}}, Registries: []executor.Registry{reg}}, &log)
	if err != nil || b.Message != "" || !strings.HasPrefix(b.ImageID, "sha256:") {
		t.Fatalf("Build: %+v %v\n%s", b, err, log.String())
	}
	t.Logf("build in a builder pod: %s", b.Duration)
	log.Reset()
	p, err := k.Push(ctx, executor.PushSpec{Name: "build", Source: target, Target: target, Registry: reg}, &log)
	if err != nil || p.Message != "" || !strings.HasPrefix(p.Digest, "sha256:") || p.Size <= 0 {
		t.Fatalf("Push: %+v %v\n%s", p, err, log.String())
	}
	if d, _, err := executor.RemoteManifest(ctx, target, reg); err != nil || d != p.Digest {
		t.Errorf("the registry has %s (%v), Push said %s", d, err, p.Digest)
	}
	if res, out, _ := run(t, k, ws, executor.Step{Name: "run-built", Image: target}); !res.Succeeded() || !strings.Contains(out, hostileValue+"\n") {
		t.Errorf("the built image's step: %+v, output %q, want the build argument %q", res, out, hostileValue)
	}

	log.Reset()
	b, err = k.Build(ctx, ws, executor.BuildSpec{Name: "bad", ContextDir: ws.Path + "/bad", Tags: []string{target + "-bad"}, Registries: []executor.Registry{reg}}, &log)
	if err != nil || !strings.Contains(b.Message, "at "+ws.Path+"/bad/Dockerfile line 4 (RUN echo failing && exit 3)") ||
		!strings.Contains(log.String(), "failing") {
		t.Errorf("a failing Dockerfile: %+v %v, want line 4 named\n%s", b, err, log.String())
	}
	log.Reset()
	wrong := reg
	wrong.Password = "wrong"
	p, err = k.Push(ctx, executor.PushSpec{Name: "build", Source: target, Target: target, Registry: wrong}, &log)
	if err != nil || !strings.Contains(p.Message, "push of "+target+" to registry loopback failed") || !strings.Contains(strings.ToLower(p.Message), "unauthorized") {
		t.Errorf("a push with refused credentials: %+v %v\n%s", p, err, log.String())
	}
	if err := k.Cleanup(ctx, ws); err != nil {
		t.Fatal(err)
	}
	if running, stored := e.leftovers(t, ws); len(running)+len(stored) > 0 {
		t.Errorf("left after Cleanup: %v %v", running, stored)
	}
	e.waitFor(t, "the garbage collector to delete the builder pods' secrets", func(ctx context.Context) (bool, error) {
		secrets, err := e.c.Client.CoreV1().Secrets(e.ns).List(ctx, metav1.ListOptions{LabelSelector: BuildSelector(ws.BuildID)})
		return err == nil && len(secrets.Items) == 0, err
	})
	if _, ok := k.images.get(target); ok {
		t.Error("Cleanup kept the build's images")
	}
}

// TestBuilderSecret checks the registry Secret of a builder pod on the loopback apiserver: the
// credentials as containers-auth.json, each CA under its host, the build's labels, created owned
// by its pod, and deleted by the garbage collector with the pod.
func TestBuilderSecret(t *testing.T) {
	e := newTestEnv(t)
	k := e.executor(t, Options{})
	ws := prepare(t, e, k, "secrets", nil)
	ctx := t.Context()
	if s, args, err := k.registrySecret(ws, "none", []executor.Registry{{URL: "anonymous.example"}}); s != nil || args != nil || err != nil {
		t.Errorf("a registry without credentials or CA made a secret: %v %v %v", s, args, err)
	}
	secret, args, err := k.registrySecret(ws, "build", []executor.Registry{
		{URL: "https://reg.example:5000/team", Username: "u", Password: "p:w", CA: "PEM-1"},
		{URL: "plain.example", Username: "", Password: ""},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(args, []string{"--authfile", authFile}) {
		t.Errorf("args = %q", args)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "owner", Annotations: exitAfter("0", "1h")},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: StepContainer, Image: "busybox"}}}}
	if e.reg != nil {
		pod.Annotations, pod.Spec.Containers[0].Image, pod.Spec.Containers[0].Command = nil, e.image(), []string{"sleep", "3600"}
		pod.Spec.NodeSelector, pod.Spec.Tolerations = k.opts.NodeSelector, k.opts.Tolerations
	}
	pod, err = e.c.Client.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.createSecret(ctx, secret, pod); err != nil {
		t.Fatal(err)
	}
	got, err := e.c.Client.CoreV1().Secrets(e.ns).Get(ctx, secret.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var auth struct {
		Auths map[string]struct{ Auth string }
	}
	if err := json.Unmarshal(got.Data["auth.json"], &auth); err != nil {
		t.Fatal(err)
	}
	if len(auth.Auths) != 1 || auth.Auths["reg.example:5000/team"].Auth != base64.StdEncoding.EncodeToString([]byte("u:p:w")) {
		t.Errorf("auth.json = %s", got.Data["auth.json"])
	}
	var cas []string
	for key, v := range got.Data {
		if strings.HasPrefix(key, "ca-") {
			cas = append(cas, string(v))
		}
	}
	if len(got.Data) != 2 || !slices.Equal(cas, []string{"PEM-1"}) {
		t.Errorf("secret data = %q", got.Data)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != pod.UID || got.OwnerReferences[0].Kind != "Pod" {
		t.Errorf("owner references = %+v, want the pod %s", got.OwnerReferences, pod.UID)
	}
	b := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: StepContainer}}}}
	k.builderPod(b, got)
	var certPaths []string
	for _, v := range b.Spec.Volumes {
		if v.Name == "registry-certs" {
			for _, it := range v.Secret.Items {
				certPaths = append(certPaths, it.Path)
			}
		}
	}
	if !slices.Equal(certPaths, []string{"reg.example:5000/ca.crt"}) {
		t.Errorf("CA paths = %q", certPaths)
	}
	if got.Labels[LabelBuild] != labelValue(ws.BuildID) || got.Annotations[AnnotationBuildID] != ws.BuildID {
		t.Errorf("labels %v annotations %v", got.Labels, got.Annotations)
	}
	zero := int64(0)
	if err := e.c.Client.CoreV1().Pods(e.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, "the garbage collector to delete the secret with its pod", func(ctx context.Context) (bool, error) {
		_, err := e.c.Client.CoreV1().Secrets(e.ns).Get(ctx, secret.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
