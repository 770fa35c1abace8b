package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	podmanBinary = "/usr/bin/podman"
	compPodman   = "podman"
	// engineReadyTimeout bounds engine up's wait for the API to answer.
	engineReadyTimeout = time.Minute
	// maxSocketPath is the longest unix socket path Linux accepts (sun_path minus the NUL).
	maxSocketPath = 107
	// runtimeRoot is where engines keep their runtime directories.
	runtimeRoot = "/run/freshet"
	// maxRunroot is the longest runroot Podman 4.3 accepts.
	maxRunroot = 50
	// Ceilings of the containers' default ulimits (see chooseUlimits).
	maxNofile   = 1 << 20
	maxNproc    = 32768
	rlimitNproc = 6 // RLIMIT_NPROC, which package syscall does not name
)

// engineState is what an engine instance remembers (state.json).
type engineState struct {
	Name       string   `json:"name"`
	ID         string   `json:"id"`                   // random; names the instance's runtime directory
	Slot       int      `json:"slot"`                 // its subnet slot (slots.go); -1 before the first start
	Registries []string `json:"registries,omitempty"` // ctrenv registries it was configured for (names)
	// The containers' default hard limits (0: not chosen yet); see chooseUlimits.
	Nofile uint64 `json:"nofile,omitempty"`
	Nproc  uint64 `json:"nproc,omitempty"`
}

type engine struct {
	instance
	st engineState
}

// EngineInfo is what `engine up --json` and `engine env --json` print; the Go test helper
// (internal/testenv/containers) decodes it.
type EngineInfo struct {
	Name       string   `json:"name"`
	DockerHost string   `json:"dockerHost"` // unix:///…/podman.sock
	Socket     string   `json:"socket"`
	StateDir   string   `json:"stateDir"`
	LogFile    string   `json:"logFile"`
	SubnetPool string   `json:"subnetPool,omitempty"`
	Trusted    []string `json:"trusted"` // registry addresses whose CA the engine trusts
	Insecure   []string `json:"insecure"`
	APIVersion string   `json:"apiVersion,omitempty"`
	// PodmanEnv is the service's environment: with it, the podman command works directly on
	// the engine's storage and configuration (env $PodmanEnv podman ps), bypassing the API.
	PodmanEnv []string `json:"podmanEnv"`
	Running   bool     `json:"running"`
	PID       int      `json:"pid,omitempty"`
}

func openEngine(name string) (*engine, error) {
	in, err := openInstance(kindEngine, name)
	if err != nil {
		return nil, err
	}
	e := &engine{instance: in, st: engineState{Name: name, Slot: -1}}
	if err := readJSON(e.path("state.json"), &e.st); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *engine) socket() string { return e.path("run", "podman.sock") }

// runtimeDir holds what Podman keeps only while it runs (its runroot and tmp_dir) on /run, a
// tmpfs, so that a reboot is a clean start as Podman expects. The path is short on purpose:
// Podman refuses a runroot longer than 50 characters (in the `podman container cleanup` that
// conmon runs when a container exits; without it the service never notices the exit), and
// test state directories are long.
func (e *engine) runtimeDir() string { return filepath.Join(runtimeRoot, "engine-"+e.st.ID) }
func (e *engine) dockerHost() string { return "unix://" + e.socket() }
func (e *engine) home() string       { return e.path("home") }

// certsDir is the engine's containers-certs.d(5) directory: c/image reads
// $HOME/.config/containers/certs.d for root too, and the service runs with HOME set to the
// instance's home, so trust stays in the engine's configuration, not system-wide.
func (e *engine) certsDir() string {
	return filepath.Join(e.home(), ".config", "containers", "certs.d")
}

func (e *engine) info(ctx context.Context) EngineInfo {
	ei := EngineInfo{Name: e.name, DockerHost: e.dockerHost(), Socket: e.socket(), StateDir: e.dir, LogFile: e.logPath(compPodman),
		Trusted: []string{}, Insecure: e.insecureRegistries(), PodmanEnv: e.env()}
	if e.st.Slot >= 0 {
		ei.SubnetPool = slotPool(e.st.Slot).String()
	}
	ents, _ := os.ReadDir(e.certsDir())
	for _, d := range ents {
		ei.Trusted = append(ei.Trusted, d.Name())
	}
	if p, ok := e.process(compPodman); ok {
		ei.PID = p.PID
		if v, err := e.ping(ctx); err == nil {
			ei.Running, ei.APIVersion = true, v
		}
	}
	return ei
}

func (e *engine) insecureRegistries() []string {
	var out []string
	for _, name := range e.st.Registries {
		if r, err := openRegistry(name); err == nil && r.st.Port != 0 && !r.st.TLS {
			out = append(out, r.address())
		}
	}
	return out
}

func cmdEngine(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError("engine: want a sub-command: up, down, env, status or trust")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("engine "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf commonFlags
	cf.bind(fs)
	var (
		registries      *string
		install, purge  *bool
		watch           *int
		address, caFile *string
	)
	switch sub {
	case "up":
		registries = fs.String("registry", "", "comma-separated ctrenv registries (names) the engine trusts: their CA, or plain HTTP when they serve it")
		install = fs.Bool("install", true, "install the Debian packages when missing (apt-get, as root)")
		watch = fs.Int("down-when-exits", 0, "run `down --purge` when the process with this pid exits (used by test helpers)")
	case "down":
		purge = fs.Bool("purge", false, "also remove the state directory (images, containers, volumes, configuration)")
	case "trust":
		address = fs.String("address", "", "registry host:port")
		caFile = fs.String("ca-file", "", "PEM file of the CA that signed the registry's certificate")
	case "env", "status":
	default:
		return usageError("engine: unknown sub-command %q: want up, down, env, status or trust", sub)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	e, err := openEngine(cf.name)
	if err != nil {
		return err
	}
	switch sub {
	case "up":
		logf := func(f string, a ...any) {
			fmt.Fprintf(stderr, "ctrenv engine [%s] "+f+"\n", append([]any{e.name}, a...)...)
		}
		if err := ensurePackages(ctx, enginePkgs, *install, logf); err != nil {
			return err
		}
		if os.Geteuid() != 0 {
			return exitError{code: exitNotPermitted, err: errors.New("the engine is rootful Podman and needs root (rootless Podman needs subordinate uid/gid ranges and newuidmap, which this tooling does not set up)")}
		}
		if *watch > 0 {
			if err := e.startWatchdog(*watch); err != nil {
				return err
			}
		}
		var names []string
		for _, n := range strings.Split(*registries, ",") {
			if n = strings.TrimSpace(n); n != "" {
				if err := checkName(n); err != nil {
					return usageError("--registry %q: %v", n, err)
				}
				names = append(names, n)
			}
		}
		t0 := time.Now()
		if err := e.up(ctx, names, logf); err != nil {
			return fmt.Errorf("engine %q: %w\nlog: %s; stop it with: ctrenv engine down --name %s", e.name, err, e.logPath(compPodman), e.name)
		}
		if !cf.json {
			logf("ready in %.1fs", time.Since(t0).Seconds())
		}
		return printEngine(e.info(ctx), cf.json, false, stdout, stderr)
	case "down":
		n, err := downEngine(ctx, e.instance, *purge, stderr)
		if err == nil {
			fmt.Fprintf(stderr, "ctrenv engine [%s] down: stopped %d process(es)\n", e.name, n)
		}
		return err
	case "trust":
		if _, _, err := net.SplitHostPort(*address); err != nil {
			return usageError("--address %q: want host:port of the registry", *address)
		}
		ca, err := os.ReadFile(*caFile)
		if err != nil {
			return usageError("--ca-file %q: %v", *caFile, err)
		}
		return e.trust(*address, ca)
	default: // env, status
		ei := e.info(ctx)
		if err := printEngine(ei, cf.json, sub == "env", stdout, stderr); err != nil {
			return err
		}
		if !ei.Running {
			return exitError{code: exitNotRunning, err: fmt.Errorf("engine %q is not running; start it with `make engine` or `ctrenv engine up --name %s`", e.name, e.name)}
		}
		return nil
	}
}

func printEngine(ei EngineInfo, asJSON, exports bool, stdout, stderr io.Writer) error {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(ei)
	}
	prefix := ""
	if exports {
		prefix = "export "
	}
	fmt.Fprintf(stdout, "%sDOCKER_HOST=%s\n%sCONTAINER_HOST=%s\n", prefix, ei.DockerHost, prefix, ei.DockerHost)
	if !exports {
		fmt.Fprintf(stderr, "use it:  podman --remote --url %s ps    (or: DOCKER_HOST=%s docker ps)\n", ei.DockerHost, ei.DockerHost)
		fmt.Fprintf(stderr, "in a shell:  eval \"$(hack/ctrenv/ctrenv engine env --name %s)\"\n", ei.Name)
		if len(ei.Trusted) > 0 {
			fmt.Fprintf(stderr, "trusts the CA of: %s\n", strings.Join(ei.Trusted, ", "))
		}
	}
	return nil
}

func (e *engine) up(ctx context.Context, registries []string, logf func(string, ...any)) error {
	if len(e.socket()) > maxSocketPath {
		return fmt.Errorf("socket path %s is longer than %d bytes; use a shorter %s", e.socket(), maxSocketPath, EnvState)
	}
	unlock, err := e.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	for _, d := range []string{"logs", "conf", "storage", "networks", "tmp", e.certsDir()} {
		if !filepath.IsAbs(d) {
			d = e.path(d)
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if e.st.ID == "" {
		if e.st.ID, err = randomString(4); err != nil {
			return err
		}
	}
	if len(filepath.Join(e.runtimeDir(), "storage")) > maxRunroot {
		return fmt.Errorf("runroot %s is longer than the %d characters Podman accepts", filepath.Join(e.runtimeDir(), "storage"), maxRunroot)
	}
	if registries != nil {
		e.st.Registries = registries
	}
	// The registries' CAs (certs.d is read on every pull, so no restart is needed for it).
	for _, name := range e.st.Registries {
		r, err := openRegistry(name)
		if err != nil {
			return err
		}
		if r.st.Port == 0 {
			return fmt.Errorf("registry %q has no address yet: start it first (ctrenv registry up --name %s)", name, name)
		}
		if r.st.TLS {
			ca, err := os.ReadFile(r.caFile())
			if err != nil {
				return fmt.Errorf("registry %q: %w", name, err)
			}
			if err := e.trust(r.address(), ca); err != nil {
				return err
			}
		}
	}
	if p, ok := e.process(compPodman); ok {
		if e.configsCurrent() {
			if _, err := e.ping(ctx); err == nil {
				return writeJSON(e.path("state.json"), e.st, 0o644)
			}
		}
		logf("restarting pid %d (configuration changed or API not answering)", p.PID)
	}
	// Not running, or to restart: clear whatever is left of the last run first.
	if err := e.stopService(ctx, io.Discard); err != nil {
		return err
	}
	if e.st.Slot, err = claimSlot(ctx, e.dir); err != nil {
		return err
	}
	e.chooseUlimits()
	for attempt := 0; ; attempt++ {
		p, err := e.start(ctx)
		if err != nil {
			return err
		}
		changed, err := e.checkUlimits(p)
		if err != nil || !changed || attempt > 0 {
			return err
		}
		logf("the service runs with lower limits than configured; restarting with nofile=%d nproc=%d", e.st.Nofile, e.st.Nproc)
		if err := e.stopService(ctx, io.Discard); err != nil {
			return err
		}
	}
}

// start writes the state and configuration, starts the service and waits for its API.
func (e *engine) start(ctx context.Context) (pidFile, error) {
	if err := writeJSON(e.path("state.json"), e.st, 0o644); err != nil {
		return pidFile{}, err
	}
	files, err := e.configs()
	if err != nil {
		return pidFile{}, err
	}
	for path, content := range files {
		if err := writeFileAtomic(path, []byte(content), 0o644); err != nil {
			return pidFile{}, err
		}
	}
	for _, d := range []string{e.path("run"), filepath.Join(e.runtimeDir(), "xdg")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return pidFile{}, err
		}
	}
	p, err := startDaemon(podmanBinary, []string{"--log-level=info", "system", "service", "--time=0", e.dockerHost()},
		e.env(), e.logPath(compPodman), e.pidPath(compPodman))
	if err != nil {
		return pidFile{}, err
	}
	if err := recordSlotOwner(e.st.Slot, e.dir, p); err != nil {
		return p, err
	}
	return p, e.waitReady(ctx, p)
}

// configsCurrent tells whether the configuration files on disk are what configs renders now.
func (e *engine) configsCurrent() bool {
	files, err := e.configs()
	if err != nil {
		return false
	}
	for path, content := range files {
		if b, err := os.ReadFile(path); err != nil || string(b) != content {
			return false
		}
	}
	return true
}

// env is the podman service's whole environment: its configuration files, a HOME of its own
// (certs.d and policy.json), and nothing of the caller's container settings.
func (e *engine) env() []string {
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + e.home(),
		"XDG_CONFIG_HOME=" + filepath.Join(e.home(), ".config"),
		"TMPDIR=" + e.path("tmp"),
		// c/image reads credentials from $XDG_RUNTIME_DIR/containers/auth.json, else from
		// root's /run/containers/0/auth.json: the engine must not see a `podman login` made
		// on the host. (A `podman login` with this environment writes there.)
		"XDG_RUNTIME_DIR=" + filepath.Join(e.runtimeDir(), "xdg"),
		"CONTAINERS_CONF=" + e.path("conf", "containers.conf"),
		"CONTAINERS_STORAGE_CONF=" + e.path("conf", "storage.conf"),
		"CONTAINERS_REGISTRIES_CONF=" + e.path("conf", "registries.conf"),
	}
}

// chooseUlimits picks the containers' default nofile and nproc limits (soft = hard) when
// none are chosen yet. This machine's root lacks CAP_SYS_RESOURCE, so no process can raise
// a hard limit, and runc fails with "error setting rlimits" when a container asks for more
// than the service has; Podman's own default asks for 1048576 of each. Podman 4.3 also lowers
// its own nproc limit to 32768 when it starts. So: our hard limits, capped; checkUlimits
// corrects them from the running service should Podman lower them further.
func (e *engine) chooseUlimits() {
	if e.st.Nofile > 0 && e.st.Nproc > 0 {
		return
	}
	var n, p syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &n)
	_ = syscall.Getrlimit(rlimitNproc, &p)
	e.st.Nofile, e.st.Nproc = min(n.Max, maxNofile), min(p.Max, maxNproc)
}

// checkUlimits reads the running service's hard limits; if the configured defaults exceed
// them, it lowers them and reports that the configuration changed.
func (e *engine) checkUlimits(p pidFile) (changed bool, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", p.PID))
	if err != nil {
		return false, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		var limit *uint64
		switch {
		case strings.HasPrefix(l, "Max open files"):
			limit = &e.st.Nofile
		case strings.HasPrefix(l, "Max processes"):
			limit = &e.st.Nproc
		default:
			continue
		}
		f := strings.Fields(l)
		if len(f) < 5 || f[len(f)-2] == "unlimited" {
			continue
		}
		hard, err := strconv.ParseUint(f[len(f)-2], 10, 64)
		if err == nil && hard < *limit {
			*limit, changed = hard, true
		}
	}
	return changed, nil
}

// configs renders the engine's configuration files. Every Podman-specific setting lives
// here, so that the container executor only speaks the Docker Engine API.
func (e *engine) configs() (map[string]string, error) {
	if e.st.Slot < 0 {
		return nil, errors.New("no subnet slot claimed")
	}
	if e.st.Nofile == 0 || e.st.Nproc == 0 {
		return nil, errors.New("no ulimits chosen")
	}
	nofile := fmt.Sprintf("nofile=%d:%d", e.st.Nofile, e.st.Nofile)
	nproc := fmt.Sprintf("nproc=%d:%d", e.st.Nproc, e.st.Nproc)
	q := strconv.Quote
	containers := fmt.Sprintf(`# Written by ctrenv (hack/ctrenv) for engine %q; rewritten by every "engine up".
[containers]
# runc fails to start a container that asks for more than the service's own hard limits
# (root has no CAP_SYS_RESOURCE here), and Podman's default asks for 1048576.
default_ulimits = [%s, %s]
# The Docker API's container logs read the k8s-file driver (there is no journald here).
log_driver = "k8s-file"
# HostConfig.Init (docker run --init).
init_path = %s

[engine]
# crun refuses this machine's hybrid cgroup v1 layout; runc works.
runtime = "runc"
# There is no systemd to delegate cgroups to.
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = %s
# Per instance: several engines run at once, and shm locks would be shared between them.
tmp_dir = %s
lock_type = "file"
image_copy_tmp_dir = %s
# Debian installs netavark and aardvark-dns here.
helper_binaries_dir = ["/usr/lib/podman", "/usr/libexec/podman"]

[network]
network_backend = "netavark"
network_config_dir = %s
# This instance's slot (see ctrenv's slots.go): networks it creates never collide with
# another running engine's.
default_subnet_pools = [{"base" = %s, "size" = 24}]
`, e.name, q(nofile), q(nproc), q(catatonitPath), q(e.path("logs", "events.log")), q(filepath.Join(e.runtimeDir(), "libpod")),
		q(e.path("tmp")), q(e.path("networks")), q(slotPool(e.st.Slot).String()))

	storage := fmt.Sprintf(`# Written by ctrenv (hack/ctrenv) for engine %q.
[storage]
driver = "overlay"
graphroot = %s
runroot = %s
`, e.name, q(e.path("storage")), q(filepath.Join(e.runtimeDir(), "storage")))

	var reg strings.Builder
	fmt.Fprintf(&reg, "# Written by ctrenv (hack/ctrenv) for engine %q.\nunqualified-search-registries = []\n", e.name)
	for _, a := range e.insecureRegistries() {
		fmt.Fprintf(&reg, "\n# A ctrenv registry serving plain HTTP.\n[[registry]]\nlocation = %s\ninsecure = true\n", q(a))
	}

	return map[string]string{
		e.path("conf", "containers.conf"):                               containers,
		e.path("conf", "storage.conf"):                                  storage,
		e.path("conf", "registries.conf"):                               reg.String(),
		filepath.Join(e.home(), ".config", "containers", "policy.json"): `{"default": [{"type": "insecureAcceptAnything"}]}` + "\n",
	}, nil
}

// trust makes the engine trust ca for the registry at address (read on every pull).
func (e *engine) trust(address string, ca []byte) error {
	return writeFileAtomic(filepath.Join(e.certsDir(), address, caCertFile), ca, 0o644)
}

func (e *engine) waitReady(ctx context.Context, p pidFile) error {
	ctx, cancel := context.WithTimeout(ctx, engineReadyTimeout)
	defer cancel()
	var last error
	for {
		if !running(p) {
			log, _ := os.ReadFile(e.logPath(compPodman))
			return fmt.Errorf("podman system service exited: %s", tail(string(log), 1500))
		}
		if _, last = e.ping(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("API not answering after %s: %w", engineReadyTimeout, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ping asks the engine's API for /_ping and returns the API version it announces.
func (e *engine) ping(ctx context.Context) (string, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", e.socket())
		},
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://engine/_ping", nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK || string(body) != "OK" {
		return "", fmt.Errorf("GET /_ping: %s %q", resp.Status, body)
	}
	return resp.Header.Get("Api-Version"), nil
}

// podmanCLI runs the podman command directly on the engine's storage (not through its API),
// with the engine's configuration: it works whether or not the service runs.
func (e *engine) podmanCLI(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, podmanBinary, append([]string{"--log-level=error"}, args...)...)
	cmd.Env = e.env()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.Bytes(), fmt.Errorf("podman %s: %w: %s", strings.Join(args, " "), err, tail(out.String(), 800))
	}
	return out.Bytes(), nil
}

// stopService removes every container of the engine (they outlive the service: conmon runs
// them), stops the service and anything else of the instance, unmounts what the storage
// driver mounted and clears the run directory, so the next start begins like after a reboot.
func (e *engine) stopService(ctx context.Context, stderr io.Writer) error {
	var errs []error
	if _, err := os.Stat(e.path("conf", "storage.conf")); err == nil {
		if _, err := os.Stat(podmanBinary); err == nil {
			if _, err := e.podmanCLI(ctx, "pod", "rm", "--all", "--force", "--time", "0"); err != nil {
				fmt.Fprintf(stderr, "ctrenv engine [%s]: %v\n", e.name, err)
			}
			if _, err := e.podmanCLI(ctx, "rm", "--all", "--force", "--time", "0"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	e.stopAll([]string{compPodman}, 10*time.Second)
	dirs := []string{e.path("run")}
	if e.st.ID != "" {
		dirs = append(dirs, e.runtimeDir())
	}
	for _, d := range append(dirs, e.dir) {
		if err := unmountUnder(d); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// downEngine stops the engine, its containers and its watchdog (unless that is the caller),
// and releases its subnet slot; purge also removes the state directory.
func downEngine(ctx context.Context, in instance, purge bool, stderr io.Writer) (int, error) {
	if _, err := os.Stat(in.dir); errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	e, err := openEngine(in.name)
	if err != nil {
		return 0, err
	}
	unlock, err := e.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	n := 0
	if _, ok := e.process(compPodman); ok {
		n++
	}
	err = e.stopService(ctx, stderr)
	n += e.stopAll([]string{compWatchdog}, 5*time.Second)
	if e.st.Slot >= 0 {
		releaseSlot(e.st.Slot, e.dir)
	}
	if left := processesWith(e.marker()); len(left) > 0 {
		var d []string
		for _, p := range left {
			d = append(d, describe(p))
		}
		err = errors.Join(err, fmt.Errorf("processes left after down: %s", strings.Join(d, "; ")))
	}
	if purge && err == nil {
		if err := unmountUnder(e.dir); err != nil {
			return n, err
		}
		return n, os.RemoveAll(e.dir)
	}
	return n, err
}
