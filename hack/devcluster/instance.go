package main

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

//go:embed kwok-stages.yaml
var kwokStages []byte

// Component names, as status prints them, in start order.
const (
	compEtcd      = "etcd"
	compAPIServer = "kube-apiserver"
	compKCM       = "kube-controller-manager"
	compScheduler = "kube-scheduler"
	compKwok      = "kwok"
)

var components = []string{compEtcd, compAPIServer, compKCM, compScheduler, compKwok}

// Port keys in state.json.
const (
	portEtcd      = "etcd-client"
	portEtcdPeer  = "etcd-peer"
	portAPIServer = "kube-apiserver"
	portKCM       = "kube-controller-manager"
	portScheduler = "kube-scheduler"
)

// componentPorts maps each component to the ports it listens on (kwok listens on none).
var componentPorts = map[string][]string{
	compEtcd:      {portEtcd, portEtcdPeer},
	compAPIServer: {portAPIServer},
	compKCM:       {portKCM},
	compScheduler: {portScheduler},
	compKubelet:   {portKubelet, portKubeletHealthz},
}

// Fixed cluster facts.
const (
	nodeName         = "kwok-node-0"
	serviceCIDR      = "10.0.0.0/24"
	podCIDR          = "10.244.0.1/16"
	fakeNodeIP       = "10.244.0.1"
	serviceAccountIs = "https://kubernetes.default.svc.cluster.local"
	loopback         = "127.0.0.1"
)

// state is what an instance remembers between commands (state.json).
type state struct {
	Name  string         `json:"name"`
	Ports map[string]int `json:"ports"`
	// RealNode, when set, gives the instance a real node (kubelet, containerd) beside kwok's.
	RealNode *realNodeConf `json:"realNode,omitempty"`
}

// instance is one named control plane: its directories and remembered ports.
type instance struct {
	name string
	dir  string // state directory; also the marker that identifies our processes
	bin  string
	st   state
}

func openInstance(name string) (*instance, error) {
	dir, err := instanceDir(name)
	if err != nil {
		return nil, err
	}
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	in := &instance{name: name, dir: dir, bin: bin, st: state{Name: name, Ports: map[string]int{}}}
	b, err := os.ReadFile(in.path("state.json"))
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &in.st); err != nil {
			return nil, fmt.Errorf("read %s: %w", in.path("state.json"), err)
		}
		if in.st.Ports == nil {
			in.st.Ports = map[string]int{}
		}
	case errors.Is(err, os.ErrNotExist):
	default:
		return nil, err
	}
	return in, nil
}

func (in *instance) path(elem ...string) string {
	return filepath.Join(append([]string{in.dir}, elem...)...)
}

// marker is a string every command line of this instance's processes contains.
func (in *instance) marker() string     { return in.dir + string(filepath.Separator) }
func (in *instance) pkiDir() string     { return in.path("pki") }
func (in *instance) kubeconfig() string { return in.path("kubeconfig") }
func (in *instance) pidPath(c string) string {
	return in.path("run", c+".pid")
}
func (in *instance) logPath(c string) string {
	return in.path("logs", c+".log")
}
func (in *instance) componentKubeconfig(c string) string {
	return in.path("conf", c+".kubeconfig")
}
func (in *instance) serverURL() string {
	return "https://" + net.JoinHostPort(loopback, strconv.Itoa(in.st.Ports[portAPIServer]))
}

func (in *instance) saveState() error {
	b, err := json.MarshalIndent(in.st, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(in.path("state.json"), append(b, '\n'), 0o600) // may hold the real node's registry password
}

// writeConfigs (re)writes every kubeconfig and the kwok config for the current ports.
func (in *instance) writeConfigs() error {
	if err := os.MkdirAll(in.path("conf"), 0o755); err != nil {
		return err
	}
	admin, err := kubeconfig(in.pkiDir(), in.name, in.serverURL(), pkiAdmin)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(in.kubeconfig(), admin, 0o600); err != nil {
		return err
	}
	for comp, identity := range map[string]string{compKCM: pkiKCM, compScheduler: pkiScheduler, compKwok: pkiKwok} {
		kc, err := kubeconfig(in.pkiDir(), in.name, in.serverURL(), identity)
		if err != nil {
			return err
		}
		if err := writeFileAtomic(in.componentKubeconfig(comp), kc, 0o600); err != nil {
			return err
		}
	}
	if err := writeFileAtomic(in.path("conf", "kwok.yaml"), kwokStages, 0o644); err != nil {
		return err
	}
	return in.writeRealNodeConfigs()
}

// args returns the command line of a component.
func (in *instance) args(comp string) []string {
	p := func(k string) string { return strconv.Itoa(in.st.Ports[k]) }
	pki := func(f string) string { return filepath.Join(in.pkiDir(), f) }
	etcdURL := "http://" + net.JoinHostPort(loopback, p(portEtcd))
	peerURL := "http://" + net.JoinHostPort(loopback, p(portEtcdPeer))
	switch comp {
	case compEtcd:
		return []string{
			"--name=devcluster",
			"--data-dir=" + in.path("etcd-data"),
			"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
			"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=devcluster=" + peerURL,
			"--unsafe-no-fsync", "--quota-backend-bytes=2147483648",
		}
	case compAPIServer:
		return []string{
			"--etcd-servers=" + etcdURL,
			"--bind-address=" + loopback, "--advertise-address=" + loopback, "--secure-port=" + p(portAPIServer),
			// Without this the apiserver floods its log about the loopback kubernetes Endpoints.
			"--endpoint-reconciler-type=none",
			"--tls-cert-file=" + pki(pkiAPIServer+".crt"), "--tls-private-key-file=" + pki(pkiAPIServer+".key"),
			"--client-ca-file=" + pki(pkiCA+".crt"),
			// Node: the real node's kubelet (system:node:NAME) may read what its pods need.
			"--authorization-mode=Node,RBAC",
			// pods/log, exec and port-forward reach the real node's kubelet on 127.0.0.1.
			"--kubelet-client-certificate=" + pki(pkiAdmin+".crt"), "--kubelet-client-key=" + pki(pkiAdmin+".key"),
			"--kubelet-preferred-address-types=InternalIP",
			"--service-account-issuer=" + serviceAccountIs,
			"--service-account-key-file=" + pki(pkiSA+".pub"),
			"--service-account-signing-key-file=" + pki(pkiSA+".key"),
			"--service-cluster-ip-range=" + serviceCIDR,
			"--allow-privileged=true",
			"--cert-dir=" + in.path("run", "apiserver-certs"),
			"--profiling=false",
		}
	case compKCM:
		// --master repeats the kubeconfig's server so the command line changes with the
		// apiserver port, which is how up notices a client that must restart.
		// No --authentication-kubeconfig/--authorization-kubeconfig: with them the
		// controller-manager loops on the missing requestheader CA bundle.
		return []string{
			"--kubeconfig=" + in.componentKubeconfig(compKCM), "--master=" + in.serverURL(),
			"--bind-address=" + loopback, "--secure-port=" + p(portKCM),
			"--cert-dir=" + in.path("run", "kcm-certs"),
			"--leader-elect=false", "--profiling=false",
			"--service-account-private-key-file=" + pki(pkiSA+".key"),
			"--root-ca-file=" + pki(pkiCA+".crt"),
			"--cluster-signing-cert-file=" + pki(pkiCA+".crt"), "--cluster-signing-key-file=" + pki(pkiCA+".key"),
			"--use-service-account-credentials=true",
		}
	case compScheduler:
		return []string{
			"--kubeconfig=" + in.componentKubeconfig(compScheduler), "--master=" + in.serverURL(),
			"--bind-address=" + loopback, "--secure-port=" + p(portScheduler),
			"--cert-dir=" + in.path("run", "scheduler-certs"),
			"--leader-elect=false", "--profiling=false",
		}
	case compKwok:
		manage := []string{"--manage-all-nodes=true"}
		if in.st.RealNode != nil {
			// Only the fake node: the real node's kubelet runs its own pods.
			manage = []string{"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake"}
		}
		return append([]string{
			"--kubeconfig=" + in.componentKubeconfig(compKwok), "--master=" + in.serverURL(),
			"--config=" + in.path("conf", "kwok.yaml")},
			append(manage,
				"--cidr="+podCIDR, "--node-ip="+fakeNodeIP,
				"--node-lease-duration-seconds=40")...)
	case compContainerd, compKubelet:
		return in.realNodeArgs(comp)
	}
	panic("unknown component " + comp)
}

// compStatus is one component's state as status reports it.
type compStatus struct {
	Name     string `json:"name"`
	Running  bool   `json:"running"`
	PID      int    `json:"pid,omitempty"`
	RSSBytes int64  `json:"rssBytes,omitempty"`
	Ports    []int  `json:"ports,omitempty"`
	Stale    bool   `json:"stalePidFile,omitempty"` // a pid file names a process that is gone
	Log      string `json:"log"`
}

// inspect reports a component without changing anything.
func (in *instance) inspect(comp string) compStatus {
	cs := compStatus{Name: comp, Log: in.logPath(comp)}
	for _, k := range componentPorts[comp] {
		if in.st.Ports[k] != 0 {
			cs.Ports = append(cs.Ports, in.st.Ports[k])
		}
	}
	pf, err := readPidFile(in.pidPath(comp))
	if errors.Is(err, os.ErrNotExist) {
		return cs
	}
	if err != nil || !processAlive(pf, in.marker()) {
		cs.Stale = true
		cs.PID = pf.PID
		return cs
	}
	cs.Running, cs.PID, cs.RSSBytes = true, pf.PID, rssBytes(pf.PID)
	return cs
}

// running returns the live pid file of a component, or errNoProcess.
func (in *instance) running(comp string) (pidFile, error) {
	pf, err := readPidFile(in.pidPath(comp))
	if err != nil {
		return pidFile{}, errNoProcess
	}
	if !processAlive(pf, in.marker()) {
		return pidFile{}, errNoProcess
	}
	return pf, nil
}

// portFree tells whether port can be bound on 127.0.0.1 right now.
func portFree(port int) bool {
	if port <= 0 {
		return false
	}
	l, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// freePorts asks the kernel for n distinct free ports on 127.0.0.1. All listeners stay open
// until every port is chosen, so the n ports differ.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
		if err != nil {
			return nil, fmt.Errorf("find a free port on %s: %w", loopback, err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// assignPorts gives every port of comp a free port: the remembered one if it is still free,
// otherwise a new one. It reports whether any port changed.
func (in *instance) assignPorts(comp string, forceNew bool) (changed bool, err error) {
	keys := componentPorts[comp]
	var need []string
	for _, k := range keys {
		if forceNew || !portFree(in.st.Ports[k]) {
			need = append(need, k)
		}
	}
	if len(need) == 0 {
		return false, nil
	}
	taken := map[int]bool{}
	for k, p := range in.st.Ports {
		if !slices.Contains(need, k) {
			taken[p] = true // remembered by another component, which may start later
		}
	}
	for range 10 {
		ports, err := freePorts(len(need))
		if err != nil {
			return false, err
		}
		if slices.ContainsFunc(ports, func(p int) bool { return taken[p] }) {
			continue
		}
		for i, k := range need {
			in.st.Ports[k] = ports[i]
		}
		return true, nil
	}
	return false, fmt.Errorf("no free ports on %s that differ from the instance's other ports", loopback)
}

// stopOrphans stops processes of this instance that no pid file accounts for, and returns
// how many there were.
func (in *instance) stopOrphans() int {
	known := map[int]bool{}
	var bins []string
	for _, comp := range allComponents {
		bins = append(bins, in.binPath(comp))
		if pf, err := in.running(comp); err == nil {
			known[pf.PID] = true
		}
	}
	ps := orphans(bins, in.marker(), known)
	stopProcesses(ps, in.marker(), 10*time.Second)
	return len(ps)
}
