package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Bounds of the waits in up.
const (
	defaultUpTimeout = 3 * time.Minute
	startAttempts    = 3 // a port taken between choosing and binding → another port
	pollInterval     = 100 * time.Millisecond
)

var errExited = errors.New("exited")

// upResult is what "up --json" prints.
type upResult struct {
	Name         string         `json:"name"`
	Kubeconfig   string         `json:"kubeconfig"`
	Server       string         `json:"server"`
	StateDir     string         `json:"stateDir"`
	LogDir       string         `json:"logDir"`
	BinDir       string         `json:"binDir"`
	Ports        map[string]int `json:"ports"`
	Started      []string       `json:"started"`      // components this run started (all of them on a fresh up)
	StaleCleaned []string       `json:"staleCleaned"` // components whose stale pid file was removed
	ReadySeconds float64        `json:"readySeconds"`
}

func cmdUp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf commonFlags
	cf.bind(fs, true)
	timeout := fs.Duration("timeout", defaultUpTimeout, "give up if the instance is not ready after this long")
	watchPID := fs.Int("down-when-exits", 0, "run `down --purge` for this instance when the process with this pid exits (used by test helpers)")
	realNode := fs.Bool("real-node", false, "also run a real node (kubelet on containerd and runc) beside the kwok node; remembered by the instance")
	var rn realNodeConf
	fs.StringVar(&rn.Registry, "registry", "", "real node: HOST:PORT of the registry it pulls from")
	fs.StringVar(&rn.Username, "registry-user", "", "real node: user name for --registry")
	passwordEnv := fs.String("registry-password-env", "", "real node: name of the environment variable holding the password for --registry")
	fs.StringVar(&rn.CAFile, "registry-ca", "", "real node: CA certificate file for --registry (HTTPS)")
	fs.StringVar(&rn.PauseImage, "pause-image", "", "real node: the sandbox (pause) image, pullable by the node (required with --real-node)")
	if err := fs.Parse(args); err != nil {
		return exitError{code: exitUsage}
	}
	if fs.NArg() > 0 {
		return exitError{code: exitUsage, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	in, err := openInstance(cf.name)
	if err != nil {
		return exitError{code: exitUsage, err: err}
	}
	if *realNode {
		if rn.PauseImage == "" {
			return exitError{code: exitUsage, err: errors.New("--real-node needs --pause-image (make devcluster REAL_NODE=1 pushes one to the loopback registry)")}
		}
		if *passwordEnv != "" {
			rn.Password = os.Getenv(*passwordEnv)
			if rn.Password == "" {
				return exitError{code: exitUsage, err: fmt.Errorf("--registry-password-env %s: the variable is empty or not set", *passwordEnv)}
			}
		}
		if rn.CAFile != "" {
			if rn.CAFile, err = filepath.Abs(rn.CAFile); err != nil {
				return exitError{code: exitUsage, err: err}
			}
		}
		if os.Geteuid() != 0 {
			return exitError{code: exitUsage, err: errors.New("--real-node: the kubelet and containerd need root")}
		}
		if missing := missingPackages(realNodePackages...); len(missing) > 0 {
			return exitError{code: exitNoBinaries, err: fmt.Errorf("%w: Debian packages %s are missing; install them with: devcluster build --real-node",
				errNoBinaries, strings.Join(missing, ", "))}
		}
		in.st.RealNode = &rn
	}
	if in.st.RealNode != nil {
		if err := checkBinary(filepath.Join(in.bin, binKubelet), binKubelet); err != nil {
			return exitError{code: exitNoBinaries, err: fmt.Errorf("%w: kubelet missing or invalid in %s; build it with: devcluster build --real-node", errNoBinaries, in.bin)}
		}
	}
	if missing := missingBinaries(in.bin); len(missing) > 0 {
		return exitError{code: exitNoBinaries, err: fmt.Errorf("%w: %s missing or invalid in %s; build them with: %s",
			errNoBinaries, strings.Join(missing, ", "), in.bin, buildHintShort)}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := os.MkdirAll(in.path("run"), 0o755); err != nil {
		return err
	}
	if *watchPID > 0 {
		// Started before the work so a caller that dies during up is still cleaned up after.
		if err := in.startWatchdog(*watchPID); err != nil {
			return err
		}
	}
	unlock, err := lockFile(ctx, in.path("lock"))
	if err != nil {
		return err
	}
	defer unlock()
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "devcluster %s [%s] "+format+"\n", append([]any{time.Now().Format("15:04:05.000"), in.name}, args...)...)
	}
	res, err := in.up(ctx, logf)
	if err != nil {
		return fmt.Errorf("instance %q: %w\nlogs are in %s; stop the instance with: devcluster down --name %s", in.name, err, in.path("logs"), in.name)
	}
	if cf.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintln(stdout, res.Kubeconfig)
	return nil
}

func (in *instance) up(ctx context.Context, logf func(string, ...any)) (*upResult, error) {
	t0 := time.Now()
	for _, d := range []string{"run", "logs", "conf"} {
		if err := os.MkdirAll(in.path(d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := ensurePKI(in.pkiDir()); err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	res := &upResult{Name: in.name, Kubeconfig: in.kubeconfig(), StateDir: in.dir, LogDir: in.path("logs"), BinDir: in.bin,
		Started: []string{}, StaleCleaned: []string{}}

	// Stale pid files: the process is gone (crashed, killed, machine rebooted) or the pid now
	// belongs to someone else. Remove them so nothing acts on a foreign pid.
	for _, comp := range in.components() {
		if cs := in.inspect(comp); cs.Stale {
			logf("%s: removing stale pid file (pid %d is not a running %s of this instance)", comp, cs.PID, comp)
			_ = os.Remove(in.pidPath(comp))
			res.StaleCleaned = append(res.StaleCleaned, comp)
		}
	}

	if n := in.stopOrphans(); n > 0 {
		logf("stopped %d process(es) of this instance that had no pid file", n)
	}

	if in.st.RealNode != nil {
		if err := in.prepareCgroups(); err != nil {
			return nil, err
		}
		if err := in.ensureBridge(ctx); err != nil {
			return nil, fmt.Errorf("real node's bridge: %w", err)
		}
	}
	for _, comp := range in.components() {
		if err := in.reconcile(ctx, comp, res, logf); err != nil {
			return nil, err
		}
	}
	if err := in.ensureNode(ctx); err != nil {
		return nil, err
	}
	if err := in.waitReady(ctx); err != nil {
		return nil, err
	}
	res.Server = in.serverURL()
	res.Ports = in.st.Ports
	res.ReadySeconds = time.Since(t0).Seconds()
	if len(res.Started) == 0 {
		logf("already running and ready (%.1fs)", res.ReadySeconds)
	} else {
		logf("ready in %.1fs (started %s); kubeconfig: %s", res.ReadySeconds, strings.Join(res.Started, ", "), in.kubeconfig())
	}
	return res, nil
}

// reconcile leaves a component alone if it runs with the command line it should have now
// (ports included), and otherwise (re)starts it.
func (in *instance) reconcile(ctx context.Context, comp string, res *upResult, logf func(string, ...any)) error {
	if pf, err := in.running(comp); err == nil {
		if slices.Equal(processArgs(pf.PID), in.args(comp)) {
			return nil
		}
		logf("%s: restarting, its configuration changed (a port it depends on moved)", comp)
		stopProcesses([]pidFile{pf}, in.marker(), 10*time.Second)
		_ = os.Remove(in.pidPath(comp))
	}
	for attempt := range startAttempts {
		changed, err := in.assignPorts(comp, attempt > 0)
		if err != nil {
			return err
		}
		if changed || attempt == 0 {
			if err := in.saveState(); err != nil {
				return err
			}
			if err := in.writeConfigs(); err != nil {
				return err
			}
		}
		offset := fileSize(in.logPath(comp))
		t0 := time.Now()
		pf, err := startDaemon(in.binPath(comp), in.args(comp), in.logPath(comp), in.pidPath(comp), daemonEnv())
		if err != nil {
			return err
		}
		err = in.waitStarted(ctx, comp, pf)
		if err == nil {
			logf("%s: started (pid %d%s) in %s", comp, pf.PID, portsNote(in, comp), time.Since(t0).Round(time.Millisecond))
			res.Started = append(res.Started, comp)
			return nil
		}
		out := readFrom(in.logPath(comp), offset)
		if errors.Is(err, errExited) && strings.Contains(out, "address already in use") && attempt+1 < startAttempts {
			logf("%s: a port was taken before it could bind; choosing other ports", comp)
			continue
		}
		if !errors.Is(err, errExited) {
			stopProcesses([]pidFile{pf}, in.marker(), 5*time.Second)
		}
		return fmt.Errorf("%s: %w\n--- %s (last lines)\n%s", comp, err, in.logPath(comp), tail(out, 3000))
	}
	return fmt.Errorf("%s: no free port after %d attempts", comp, startAttempts)
}

func portsNote(in *instance, comp string) string {
	var ps []string
	for _, k := range componentPorts[comp] {
		ps = append(ps, strconv.Itoa(in.st.Ports[k]))
	}
	if len(ps) == 0 {
		return ""
	}
	return ", " + loopback + ":" + strings.Join(ps, ",")
}

// daemonEnv is the environment of the components: the caller's, minus variables they would
// read as configuration (etcd maps ETCD_* onto its flags; kwok and clients read KUBECONFIG).
func daemonEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "ETCD_") || strings.HasPrefix(kv, "KUBECONFIG=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// processArgs returns argv[1:] of pid.
func processArgs(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil
	}
	args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	if len(args) == 0 {
		return nil
	}
	return args[1:]
}

// waitStarted waits until a freshly started component serves its health endpoint.
func (in *instance) waitStarted(ctx context.Context, comp string, pf pidFile) error {
	var (
		timeout time.Duration
		check   func(context.Context) error
	)
	p := func(k string) string { return strconv.Itoa(in.st.Ports[k]) }
	switch comp {
	case compEtcd:
		timeout, check = 30*time.Second, func(ctx context.Context) error {
			return httpOK(ctx, plainClient, "http://"+loopback+":"+p(portEtcd)+"/health")
		}
	case compAPIServer:
		c, err := in.adminClient()
		if err != nil {
			return err
		}
		timeout, check = 120*time.Second, func(ctx context.Context) error {
			return httpOK(ctx, c, in.serverURL()+"/readyz")
		}
	case compKCM, compScheduler:
		port := portKCM
		if comp == compScheduler {
			port = portScheduler
		}
		timeout, check = 60*time.Second, func(ctx context.Context) error {
			return httpOK(ctx, insecureClient, "https://"+loopback+":"+p(port)+"/healthz")
		}
	case compContainerd:
		timeout, check = 30*time.Second, in.checkContainerd
	case compKubelet:
		timeout, check = 60*time.Second, func(ctx context.Context) error {
			return httpOK(ctx, plainClient, "http://"+loopback+":"+p(portKubeletHealthz)+"/healthz")
		}
	case compKwok:
		// kwok serves nothing; it counts as started when it is still alive after a moment.
		// waitReady proves it works: only kwok makes the node Ready.
		timeout, check = 10*time.Second, func(context.Context) error {
			time.Sleep(500 * time.Millisecond)
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if !sameProcessRunning(pf) {
			return fmt.Errorf("%w right after start", errExited)
		}
		if last = check(ctx); last == nil {
			if sameProcessRunning(pf) {
				return nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not healthy after %s: %v", timeout, last)
		case <-time.After(pollInterval):
		}
	}
}

// waitReady waits until the fake node is Ready without taints and the default ServiceAccount
// exists (Pods are refused before that), failing fast if a component dies meanwhile.
func (in *instance) waitReady(ctx context.Context) error {
	c, err := in.adminClient()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var last error
	for {
		for _, comp := range in.components() {
			if _, err := in.running(comp); err != nil {
				return fmt.Errorf("%s stopped while waiting for the cluster to become ready; see %s", comp, in.logPath(comp))
			}
		}
		if last = in.checkReady(ctx, c); last == nil && in.st.RealNode != nil {
			last = in.checkRealNodeReady(ctx)
		}
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not ready: %v", last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (in *instance) checkReady(ctx context.Context, c *http.Client) error {
	var node struct {
		Spec struct {
			Taints []struct{ Key, Effect string } `json:"taints"`
		} `json:"spec"`
		Status struct {
			Conditions []struct{ Type, Status string } `json:"conditions"`
		} `json:"status"`
	}
	if err := getJSON(ctx, c, in.serverURL()+"/api/v1/nodes/"+nodeName, &node); err != nil {
		return fmt.Errorf("node %s: %w", nodeName, err)
	}
	ready := false
	for _, cond := range node.Status.Conditions {
		if cond.Type == "Ready" && cond.Status == "True" {
			ready = true
		}
	}
	if !ready {
		return fmt.Errorf("node %s is not Ready yet", nodeName)
	}
	if len(node.Spec.Taints) > 0 {
		return fmt.Errorf("node %s still has taints %v", nodeName, node.Spec.Taints)
	}
	if err := getJSON(ctx, c, in.serverURL()+"/api/v1/namespaces/default/serviceaccounts/default", nil); err != nil {
		return fmt.Errorf("default ServiceAccount: %w", err)
	}
	return nil
}

// ensureNode registers the fake node kwok manages (kwok keeps it Ready via its Lease).
func (in *instance) ensureNode(ctx context.Context) error {
	c, err := in.adminClient()
	if err != nil {
		return err
	}
	node := map[string]any{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{
			"name":        nodeName,
			"annotations": map[string]string{"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
			"labels": map[string]string{"kubernetes.io/hostname": nodeName, "kubernetes.io/os": "linux",
				"kubernetes.io/arch": "amd64", "type": "kwok"},
		},
		"status": map[string]any{
			"allocatable": map[string]string{"cpu": "32", "memory": "256Gi", "pods": "110"},
			"capacity":    map[string]string{"cpu": "32", "memory": "256Gi", "pods": "110"},
		},
	}
	body, _ := json.Marshal(node)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.serverURL()+"/api/v1/nodes", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("create node %s: %w", nodeName, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusConflict {
		return fmt.Errorf("create node %s: %s: %s", nodeName, resp.Status, b)
	}
	return nil
}

// adminClient is an HTTP client that trusts the instance CA and authenticates as the admin.
func (in *instance) adminClient() (*http.Client, error) {
	caPEM, err := os.ReadFile(filepath.Join(in.pkiDir(), pkiCA+".crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("no certificate in %s", filepath.Join(in.pkiDir(), pkiCA+".crt"))
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(in.pkiDir(), pkiAdmin+".crt"), filepath.Join(in.pkiDir(), pkiAdmin+".key"))
	if err != nil {
		return nil, err
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}}, nil
}

var (
	plainClient = &http.Client{Timeout: 2 * time.Second}
	// The controller-manager and scheduler serve healthz with self-signed loopback certificates.
	insecureClient = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe only
	}}
)

func httpOK(ctx context.Context, c *http.Client, url string) error {
	return getJSON(ctx, c, url, nil)
}

// getJSON GETs url and decodes a 200 response into v (if not nil).
func getJSON(ctx context.Context, c *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, tail(string(b), 300))
	}
	if v != nil {
		return json.Unmarshal(b, v)
	}
	return nil
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readFrom returns the content of path from offset on (at most 1 MiB).
func readFrom(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	return string(b)
}
