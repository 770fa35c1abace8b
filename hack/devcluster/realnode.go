package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The real node: a kubelet built from the same Kubernetes module as the control plane, on
// Debian's containerd and runc, beside the kwok node. It is opt-in (up --real-node) and
// remembered in state.json, so a later up keeps it.

// Real-node components, started after the control plane.
const (
	compContainerd = "containerd"
	compKubelet    = "kubelet"
)

// Real-node ports in state.json.
const (
	portKubelet        = "kubelet"
	portKubeletHealthz = "kubelet-healthz"
)

// Real-node facts.
const (
	realNodeName = "real-node-0"
	// RealNodeTaint keeps ordinary pods on the kwok node: only pods that tolerate it (and select
	// the node) run on the real node.
	realNodeTaint    = "freshet.dev/real-node"
	realNodeLabel    = "freshet.dev/real-node"
	debianContainerd = "/usr/bin/containerd"
	debianRunc       = "/usr/sbin/runc"
	debianCNIBin     = "/usr/lib/cni"
	pkiNode          = "node"
	runRoot          = "/run/freshet"
)

// realNodeConf is the real node's configuration, remembered in state.json.
type realNodeConf struct {
	// Registry is HOST:PORT of the registry the node pulls from (and trusts with CAFile and
	// authenticates to with Username and Password); empty for none.
	Registry string `json:"registry,omitempty"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	CAFile   string `json:"caFile,omitempty"`
	// PauseImage is the sandbox ("pause") image; it must be pullable by the node.
	PauseImage string `json:"pauseImage"`
}

// components returns the instance's components in start order: the control plane and kwok,
// then the real node's containerd and kubelet when it has one.
func (in *instance) components() []string {
	if in.st.RealNode == nil {
		return components
	}
	return append(append([]string(nil), components...), compContainerd, compKubelet)
}

// allComponents is every component an instance may have (down stops them all).
var allComponents = append(append([]string(nil), components...), compContainerd, compKubelet)

// binPath is the program of a component.
func (in *instance) binPath(comp string) string {
	if comp == compContainerd {
		return debianContainerd
	}
	return filepath.Join(in.bin, comp)
}

// runDir is the instance's directory under /run: containerd's state and sockets (a unix socket
// path must stay under 108 bytes, which a test's temp dir does not guarantee). Named by a hash
// of the state directory, so two instances never share it.
func (in *instance) runDir() string {
	sum := sha256.Sum256([]byte(in.dir))
	return filepath.Join(runRoot, "devcluster-"+hex.EncodeToString(sum[:])[:12])
}

func (in *instance) containerdSocket() string { return filepath.Join(in.runDir(), "containerd.sock") }

// hashByte is a byte of the state directory's hash: the real node's bridge subnet and name.
func (in *instance) hashByte() byte {
	sum := sha256.Sum256([]byte(in.dir))
	return sum[0]
}

// cgroupParent is the real node's cgroup root (in every cgroup v1 hierarchy and the unified one):
// its own, so two real nodes on one machine do not share kubepods.
func (in *instance) cgroupParent() string { return "/" + filepath.Base(in.runDir()) }

// podSubnet is the real node's pod subnet: 10.250.X.0/24 with X from the state directory's hash.
func (in *instance) podSubnet() string { return fmt.Sprintf("10.250.%d.0/24", in.hashByte()) }

// bridgeName is the real node's CNI bridge (at most 15 bytes).
func (in *instance) bridgeName() string { return fmt.Sprintf("fdc%x", in.hashByte()) }

// nodeIP is the real node's address: the pods' gateway on its bridge. The kubelet refuses a
// loopback node IP, and the apiserver reaches the kubelet (logs, exec) at the node's
// InternalIP; an address on the bridge is reachable from the host and the node's pods only.
func (in *instance) nodeIP() string { return fmt.Sprintf("10.250.%d.1", in.hashByte()) }

// ensureBridge creates the real node's bridge with the node IP before the kubelet starts (the
// CNI bridge plugin then uses it as the pods' gateway).
func (in *instance) ensureBridge(ctx context.Context) error {
	ip := func(args ...string) error {
		out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	name := in.bridgeName()
	iface, err := net.InterfaceByName(name)
	if err != nil {
		if err := ip("link", "add", name, "type", "bridge"); err != nil {
			return err
		}
		if iface, err = net.InterfaceByName(name); err != nil {
			return err
		}
	}
	addrs, _ := iface.Addrs()
	has := false
	for _, a := range addrs {
		if strings.HasPrefix(a.String(), in.nodeIP()+"/") {
			has = true
		}
	}
	if !has {
		if err := ip("addr", "add", in.nodeIP()+"/24", "dev", name); err != nil {
			return err
		}
	}
	return ip("link", "set", name, "up")
}

// writeRealNodeConfigs writes containerd's, the kubelet's and the CNI configuration.
func (in *instance) writeRealNodeConfigs() error {
	rn := in.st.RealNode
	if rn == nil {
		return nil
	}
	for _, d := range []string{in.path("conf", "cni"), in.path("containerd"), in.path("kubelet"), in.runDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	q := strconv.Quote
	var b strings.Builder
	fmt.Fprintf(&b, `# Written by devcluster: the real node's containerd (CRI for the kubelet).
version = 2
root = %s
state = %s
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = %s

[ttrpc]
  address = %s

[metrics]
  address = ""

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %s
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_cdi = false
  # root here lacks CAP_SYS_RESOURCE: runc cannot lower a process's oom_score_adj (the
  # kubelet asks -998 for sandboxes), and its init dies ("can't get final child's PID").
  restrict_oom_score_adj = true

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  BinaryName = %s
  SystemdCgroup = false

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = %s
  conf_dir = %s
`, q(in.path("containerd")), q(filepath.Join(in.runDir(), "containerd")), q(in.containerdSocket()),
		q(in.containerdSocket()+".ttrpc"), q(rn.PauseImage), q(debianRunc), q(debianCNIBin), q(in.path("conf", "cni")))
	if rn.Registry != "" {
		// containerd speaks plain HTTP to a loopback registry unless its endpoint says https.
		scheme := "http"
		if rn.CAFile != "" {
			scheme = "https"
		}
		fmt.Fprintf(&b, "\n[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.%s]\n  endpoint = [%s]\n", q(rn.Registry), q(scheme+"://"+rn.Registry))
		if rn.CAFile != "" {
			fmt.Fprintf(&b, "\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.%s.tls]\n  ca_file = %s\n", q(rn.Registry), q(rn.CAFile))
		}
		if rn.Username != "" {
			fmt.Fprintf(&b, "\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.%s.auth]\n  username = %s\n  password = %s\n",
				q(rn.Registry), q(rn.Username), q(rn.Password))
		}
	}
	if err := writeFileAtomic(in.path("conf", "containerd.toml"), []byte(b.String()), 0o600); err != nil {
		return err
	}

	cni := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "devcluster",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %q}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, in.bridgeName(), in.podSubnet(), filepath.Join(in.runDir(), "cni-ipam"))
	if err := writeFileAtomic(in.path("conf", "cni", "10-devcluster.conflist"), []byte(cni), 0o644); err != nil {
		return err
	}

	p := func(k string) string { return strconv.Itoa(in.st.Ports[k]) }
	kubelet := fmt.Sprintf(`# Written by devcluster: the real node's kubelet.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %s
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %q}
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
cgroupRoot: %q
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://%s
imageServiceEndpoint: unix://%s
resolvConf: /etc/resolv.conf
registerWithTaints:
- {key: %s, value: "true", effect: NoSchedule}
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
serializeImagePulls: false
podLogsDir: %q
syncFrequency: 10s
fileCheckFrequency: 10s
`, in.nodeIP(), p(portKubelet), p(portKubeletHealthz), filepath.Join(in.pkiDir(), pkiCA+".crt"), in.cgroupParent(),
		in.containerdSocket(), in.containerdSocket(), realNodeTaint, in.path("kubelet", "pod-logs"))
	if err := writeFileAtomic(in.path("conf", "kubelet.yaml"), []byte(kubelet), 0o644); err != nil {
		return err
	}
	kc, err := kubeconfig(in.pkiDir(), in.name, in.serverURL(), pkiNode)
	if err != nil {
		return err
	}
	return writeFileAtomic(in.kubeletKubeconfig(), kc, 0o600)
}

func (in *instance) kubeletKubeconfig() string {
	return in.path("conf", fmt.Sprintf("kubelet-%d.kubeconfig", in.st.Ports[portAPIServer]))
}

// realNodeArgs returns the command line of a real-node component.
func (in *instance) realNodeArgs(comp string) []string {
	switch comp {
	case compContainerd:
		return []string{"--config=" + in.path("conf", "containerd.toml")}
	case compKubelet:
		return []string{
			"--config=" + in.path("conf", "kubelet.yaml"),
			// The kubeconfig's name carries the apiserver's port, so the command line changes
			// (and up restarts the kubelet) when the apiserver moved.
			"--kubeconfig=" + in.kubeletKubeconfig(),
			"--root-dir=" + in.path("kubelet", "root"),
			"--cert-dir=" + in.path("kubelet", "pki"),
			"--hostname-override=" + realNodeName,
			"--node-ip=" + in.nodeIP(),
			"--node-labels=" + realNodeLabel + "=true,type=real",
			"--v=1",
		}
	}
	return nil
}

// prepareCgroups creates the real node's cgroup root in every hierarchy (the kubelet refuses
// a cgroup root that does not exist), with cpuset's cpus and mems copied from the root.
func (in *instance) prepareCgroups() error {
	ents, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return err
	}
	for _, e := range ents {
		h := filepath.Join("/sys/fs/cgroup", e.Name())
		if fi, err := os.Stat(h); err != nil || !fi.IsDir() {
			continue
		}
		d := filepath.Join(h, in.cgroupParent())
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("cgroup %s: %w", d, err)
		}
		if e.Name() == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(h, f))
				if err == nil {
					_ = os.WriteFile(filepath.Join(d, f), v, 0o644)
				}
			}
		}
	}
	return nil
}

// removeCgroups removes the real node's cgroup trees, deepest first (each must be empty).
func (in *instance) removeCgroups() {
	ents, _ := os.ReadDir("/sys/fs/cgroup")
	for _, e := range ents {
		root := filepath.Join("/sys/fs/cgroup", e.Name(), in.cgroupParent())
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			_ = syscall.Rmdir(d)
		}
	}
}

// checkContainerd waits for containerd's socket to accept connections.
func (in *instance) checkContainerd(ctx context.Context) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", in.containerdSocket())
	if err != nil {
		return err
	}
	return c.Close()
}

// stopRealNode removes what the real node leaves behind when its processes are stopped: the
// pod containers (they run under containerd's shims, which outlive containerd), the shims, the
// mounts under the instance's directories, the cgroups and the bridge.
func (in *instance) stopRealNode(ctx context.Context) {
	if _, err := os.Stat(in.path("conf", "containerd.toml")); err != nil {
		return
	}
	// Kill every task through containerd while it still runs.
	if in.checkContainerd(ctx) == nil {
		ctr := func(args ...string) string {
			cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			out, _ := exec.CommandContext(cctx, "ctr", append([]string{"--address", in.containerdSocket(), "--namespace", "k8s.io"}, args...)...).Output()
			return string(out)
		}
		for _, id := range strings.Fields(ctr("tasks", "ls", "-q")) {
			ctr("tasks", "kill", "--all", "--signal", "SIGKILL", id)
		}
		deadline := time.Now().Add(10 * time.Second)
		for _, id := range strings.Fields(ctr("tasks", "ls", "-q")) {
			for time.Now().Before(deadline) && !strings.Contains(ctr("tasks", "delete", id), id) {
				if !strings.Contains(ctr("tasks", "ls", "-q"), id) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
}

// cleanupRealNode runs after the real node's processes stopped: stray shims, mounts, cgroups,
// the bridge and the run directory.
func (in *instance) cleanupRealNode() {
	if _, err := os.Stat(in.path("conf", "containerd.toml")); err != nil {
		return
	}
	// Shims name the socket on their command line; whatever they still run is killed with them
	// (each container is in its own cgroup under the node's cgroup root).
	sock := in.containerdSocket()
	ents, _ := os.ReadDir("/proc")
	var shims []pidFile
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), "containerd-shim") || !strings.Contains(string(b), sock) {
			continue
		}
		if st, err := readProcStat(pid); err == nil {
			shims = append(shims, pidFile{PID: pid, StartTime: st.startTime})
		}
	}
	in.killCgroupProcs()
	stopProcesses(shims, sock, 5*time.Second)
	in.killCgroupProcs()
	unmountUnder(in.dir, in.runDir())
	in.removeCgroups()
	_ = exec.Command("ip", "link", "delete", in.bridgeName()).Run()
	_ = os.RemoveAll(in.runDir())
}

// killCgroupProcs SIGKILLs every process in the real node's cgroup tree (containers whose shim
// is gone).
func (in *instance) killCgroupProcs() {
	root := filepath.Join("/sys/fs/cgroup", "pids", in.cgroupParent())
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		return nil
	})
}

// unmountUnder lazily unmounts every mount point under the given directories, deepest first.
func unmountUnder(dirs ...string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var mps []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		for _, d := range dirs {
			if mp == d || strings.HasPrefix(mp, d+"/") {
				mps = append(mps, mp)
			}
		}
	}
	sort.Slice(mps, func(i, j int) bool { return len(mps[i]) > len(mps[j]) })
	for _, mp := range mps {
		_ = syscall.Unmount(mp, syscall.MNT_DETACH)
	}
}

func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// checkRealNodeReady tells whether the real node is registered and Ready.
func (in *instance) checkRealNodeReady(ctx context.Context) error {
	c, err := in.adminClient()
	if err != nil {
		return err
	}
	var node struct {
		Status struct {
			Conditions []struct{ Type, Status, Reason, Message string } `json:"conditions"`
		} `json:"status"`
	}
	if err := getJSON(ctx, c, in.serverURL()+"/api/v1/nodes/"+realNodeName, &node); err != nil {
		return fmt.Errorf("node %s: %w", realNodeName, err)
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == "Ready" {
			if cond.Status == "True" {
				return nil
			}
			return fmt.Errorf("node %s is not Ready: %s: %s", realNodeName, cond.Reason, cond.Message)
		}
	}
	return errors.New("node " + realNodeName + " has no Ready condition yet")
}
