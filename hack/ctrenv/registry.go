package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
)

const (
	registryBinary = "/usr/bin/docker-registry"
	compRegistry   = "registry"
	// RegistryUser is the one htpasswd user every registry instance has.
	RegistryUser = "freshet"
	// registryRealm is the Basic auth realm the registry announces.
	registryRealm = "freshet-test-registry"
	// bcryptCost is bcrypt's minimum: the registry checks the password with bcrypt on every
	// request, and at the default cost (10) that adds ~60 ms to each of them. The registry
	// only listens on loopback and the password is random.
	bcryptCost = bcrypt.MinCost
)

// Bounds of registry up.
const (
	registryReadyTimeout = 30 * time.Second
	registryStartTries   = 3 // a port taken between choosing and binding → another port
)

// registryState is what a registry instance remembers (state.json, mode 0600: it holds the
// password).
type registryState struct {
	Name       string `json:"name"`
	Port       int    `json:"port,omitempty"`
	Username   string `json:"username"`
	Password   string `json:"password"`
	TLS        bool   `json:"tls"`
	HTTPSecret string `json:"httpSecret"`
}

type registry struct {
	instance
	st registryState
}

// RegistryInfo is what `registry up --json` and `registry env --json` print; the Go test
// helper (internal/testenv/containers) decodes it.
type RegistryInfo struct {
	Name     string `json:"name"`
	Address  string `json:"address"` // 127.0.0.1:PORT
	Username string `json:"username"`
	Password string `json:"password"`
	TLS      bool   `json:"tls"`
	CAFile   string `json:"caFile,omitempty"`  // PEM of the CA that signed the serving certificate
	CertDir  string `json:"certDir,omitempty"` // a containers-certs.d(5) directory for Address: podman login --cert-dir
	StateDir string `json:"stateDir"`
	LogFile  string `json:"logFile"`
	Running  bool   `json:"running"`
	PID      int    `json:"pid,omitempty"`
}

func openRegistry(name string) (*registry, error) {
	in, err := openInstance(kindRegistry, name)
	if err != nil {
		return nil, err
	}
	r := &registry{instance: in, st: registryState{Name: name}}
	if err := readJSON(r.path("state.json"), &r.st); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *registry) address() string { return net.JoinHostPort(loopback, strconv.Itoa(r.st.Port)) }
func (r *registry) caFile() string  { return r.path("tls", caCertFile) }
func (r *registry) certDir() string { return r.path("certs.d", r.address()) }
func (r *registry) scheme() string {
	if r.st.TLS {
		return "https"
	}
	return "http"
}

func (r *registry) info() RegistryInfo {
	ri := RegistryInfo{Name: r.name, Address: r.address(), Username: r.st.Username, Password: r.st.Password, TLS: r.st.TLS,
		StateDir: r.dir, LogFile: r.logPath(compRegistry)}
	if r.st.TLS {
		ri.CAFile, ri.CertDir = r.caFile(), r.certDir()
	}
	if p, ok := r.process(compRegistry); ok {
		ri.Running, ri.PID = true, p.PID
	}
	return ri
}

func cmdRegistry(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError("registry: want a sub-command: up, down, env or status")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("registry "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf commonFlags
	cf.bind(fs)
	var (
		useTLS, install *bool
		purge, quiet    *bool
		watch           *int
	)
	switch sub {
	case "up":
		useTLS = fs.Bool("tls", true, "serve HTTPS with a certificate from the instance's own CA (false: plain HTTP)")
		install = fs.Bool("install", true, "install the Debian package when missing (apt-get, as root)")
		watch = fs.Int("down-when-exits", 0, "run `down --purge` when the process with this pid exits (used by test helpers)")
		quiet = fs.Bool("quiet", false, "print nothing when all is well")
	case "down":
		purge = fs.Bool("purge", false, "also remove the state directory (data, password, CA)")
	case "env", "status":
	default:
		return usageError("registry: unknown sub-command %q: want up, down, env or status", sub)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	r, err := openRegistry(cf.name)
	if err != nil {
		return err
	}
	switch sub {
	case "up":
		tlsSet := false
		fs.Visit(func(f *flag.Flag) { tlsSet = tlsSet || f.Name == "tls" })
		if err := ensurePackages(ctx, registryPkgs, *install, func(f string, a ...any) { fmt.Fprintf(stderr, "ctrenv registry: "+f+"\n", a...) }); err != nil {
			return err
		}
		if *watch > 0 {
			// Started before the work, so a caller that dies during up is cleaned up after too.
			if err := r.startWatchdog(*watch); err != nil {
				return err
			}
		}
		t0 := time.Now()
		if err := r.up(ctx, *useTLS, tlsSet, stderr); err != nil {
			return fmt.Errorf("registry %q: %w\nlog: %s; stop it with: ctrenv registry down --name %s", r.name, err, r.logPath(compRegistry), r.name)
		}
		if *quiet {
			return nil
		}
		if !cf.json {
			fmt.Fprintf(stderr, "ctrenv registry [%s] ready in %.1fs\n", r.name, time.Since(t0).Seconds())
		}
		return printRegistry(r.info(), cf.json, false, stdout, stderr)
	case "down":
		n, err := downRegistry(ctx, r.instance, *purge)
		if err == nil {
			fmt.Fprintf(stderr, "ctrenv registry [%s] down: stopped %d process(es)\n", r.name, n)
		}
		return err
	default: // env, status
		ri := r.info()
		if err := printRegistry(ri, cf.json, sub == "env", stdout, stderr); err != nil {
			return err
		}
		if !ri.Running {
			return exitError{code: exitNotRunning, err: fmt.Errorf("registry %q is not running; start it with `make registry` or `ctrenv registry up --name %s`", r.name, r.name)}
		}
		return nil
	}
}

func printRegistry(ri RegistryInfo, asJSON, exports bool, stdout, stderr io.Writer) error {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(ri)
	}
	prefix := ""
	if exports {
		prefix = "export "
	}
	fmt.Fprintf(stdout, "%sREGISTRY=%s\n%sREGISTRY_USER=%s\n%sREGISTRY_PASSWORD=%s\n", prefix, ri.Address, prefix, ri.Username, prefix, shellQuote(ri.Password))
	if ri.TLS {
		fmt.Fprintf(stdout, "%sREGISTRY_CA_FILE=%s\n", prefix, shellQuote(ri.CAFile))
	}
	if !exports {
		if ri.TLS {
			fmt.Fprintf(stderr, "log in:  podman login --cert-dir %s -u %s -p %s %s\n", shellQuote(ri.CertDir), ri.Username, shellQuote(ri.Password), ri.Address)
			fmt.Fprintf(stderr, "         curl --cacert %s -u %s:%s https://%s/v2/_catalog\n", shellQuote(ri.CAFile), ri.Username, shellQuote(ri.Password), ri.Address)
		} else {
			fmt.Fprintf(stderr, "log in:  podman login --tls-verify=false -u %s -p %s %s\n", ri.Username, shellQuote(ri.Password), ri.Address)
		}
		fmt.Fprintf(stderr, "in a shell:  eval \"$(hack/ctrenv/ctrenv registry env --name %s)\"\n", ri.Name)
	}
	return nil
}

func (r *registry) up(ctx context.Context, useTLS, tlsSet bool, stderr io.Writer) error {
	unlock, err := r.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	for _, d := range []string{"run", "logs", "data"} {
		if err := os.MkdirAll(r.path(d), 0o755); err != nil {
			return err
		}
	}
	fresh := r.st.Password == ""
	if fresh {
		r.st.Username = RegistryUser
		if r.st.Password, err = randomString(18); err != nil {
			return err
		}
		if r.st.HTTPSecret, err = randomString(24); err != nil {
			return err
		}
	}
	if fresh || tlsSet {
		r.st.TLS = useTLS
	}
	if r.st.TLS {
		if err := ensurePKI(r.path("tls"), "freshet test registry CA ("+r.name+")"); err != nil {
			return fmt.Errorf("certificates: %w", err)
		}
	}
	hash, err := htpasswdLine(r.st.Username, r.st.Password)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(r.path("htpasswd"), []byte(hash), 0o600); err != nil {
		return err
	}
	if p, ok := r.process(compRegistry); ok {
		cfg, _ := os.ReadFile(r.path("config.yml"))
		if string(cfg) == r.config() && r.healthy(ctx) == nil {
			return r.finish()
		}
		fmt.Fprintf(stderr, "ctrenv registry [%s]: restarting pid %d (configuration changed or not answering)\n", r.name, p.PID)
		stopProcesses([]pidFile{p}, r.marker(), 10*time.Second)
	}
	r.stopAll([]string{compRegistry}, 5*time.Second) // anything left of an earlier run
	var lastErr error
	for attempt := range registryStartTries {
		if attempt > 0 || !portFree(r.st.Port) {
			if r.st.Port, err = freePort(); err != nil {
				return err
			}
		}
		if err := writeFileAtomic(r.path("config.yml"), []byte(r.config()), 0o600); err != nil {
			return err
		}
		if err := writeJSON(r.path("state.json"), r.st, 0o600); err != nil {
			return err
		}
		p, err := startDaemon(registryBinary, []string{"serve", r.path("config.yml")}, registryEnv(), r.logPath(compRegistry), r.pidPath(compRegistry))
		if err != nil {
			return err
		}
		if lastErr = r.waitReady(ctx, p); lastErr == nil {
			return r.finish()
		}
		stopProcesses([]pidFile{p}, r.marker(), 5*time.Second)
		if !strings.Contains(lastErr.Error(), "address already in use") {
			break
		}
	}
	return lastErr
}

// finish writes what clients read: the certs.d directory of the current address.
func (r *registry) finish() error {
	if !r.st.TLS {
		return nil
	}
	_ = os.RemoveAll(r.path("certs.d")) // an earlier port's directory
	ca, err := os.ReadFile(r.caFile())
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(r.certDir(), caCertFile), ca, 0o644)
}

// registryEnv is the environment of the registry process: the caller's, without the
// REGISTRY_* variables the distribution registry would read as configuration overrides (and
// `make registry` prints REGISTRY=…).
func registryEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REGISTRY") {
			env = append(env, kv)
		}
	}
	return env
}

// config is the distribution registry's configuration for this instance.
func (r *registry) config() string {
	var b strings.Builder
	fmt.Fprintf(&b, `# Written by ctrenv (hack/ctrenv); rewritten by every "registry up".
version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: %q
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %q
  secret: %q
`, r.path("data"), r.address(), r.st.HTTPSecret)
	if r.st.TLS {
		fmt.Fprintf(&b, "  tls:\n    certificate: %q\n    key: %q\n", r.path("tls", serverCertFile), r.path("tls", serverKeyFile))
	}
	fmt.Fprintf(&b, `auth:
  htpasswd:
    realm: %s
    path: %q
health:
  storagedriver:
    enabled: false
`, registryRealm, r.path("htpasswd"))
	return b.String()
}

func (r *registry) waitReady(ctx context.Context, p pidFile) error {
	ctx, cancel := context.WithTimeout(ctx, registryReadyTimeout)
	defer cancel()
	var last error
	for {
		if !running(p) {
			log, _ := os.ReadFile(r.logPath(compRegistry))
			return fmt.Errorf("docker-registry exited: %s", tail(string(log), 800))
		}
		if last = r.healthy(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s: %w", registryReadyTimeout, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// healthy checks that the registry answers GET /v2/ with 200 for the user's credentials
// (and 401 without: the auth is really on).
func (r *registry) healthy(ctx context.Context) error {
	c, err := r.httpClient()
	if err != nil {
		return err
	}
	get := func(auth bool) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.scheme()+"://"+r.address()+"/v2/", nil)
		if err != nil {
			return 0, err
		}
		if auth {
			req.SetBasicAuth(r.st.Username, r.st.Password)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := get(true); err != nil || code != http.StatusOK {
		return fmt.Errorf("GET /v2/ with credentials: status %d, %v", code, err)
	}
	if code, err := get(false); err != nil || code != http.StatusUnauthorized {
		return fmt.Errorf("GET /v2/ without credentials: status %d (want 401), %v", code, err)
	}
	return nil
}

// httpClient trusts the instance's CA and nothing else.
func (r *registry) httpClient() (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if r.st.TLS {
		pool, err := r.caPool()
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}, nil
}

func (r *registry) caPool() (*x509.CertPool, error) {
	pem, err := os.ReadFile(r.caFile())
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", r.caFile())
	}
	return pool, nil
}

// downRegistry stops the registry (and its watchdog, unless that is the caller); purge also
// removes the state directory.
func downRegistry(ctx context.Context, in instance, purge bool) (int, error) {
	if _, err := os.Stat(in.dir); errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	unlock, err := in.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	n := in.stopAll([]string{compRegistry, compWatchdog}, 10*time.Second)
	if err := os.RemoveAll(in.path("run")); err != nil {
		return n, err
	}
	if purge {
		return n, os.RemoveAll(in.dir)
	}
	return n, nil
}

// htpasswdLine is one line of an Apache htpasswd file with a bcrypt hash, the only scheme the
// distribution registry accepts.
func htpasswdLine(user, password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcryptCost)
	if err != nil {
		return "", err
	}
	return user + ":" + string(h) + "\n", nil
}

// randomString is n random bytes in hex: safe in shells, URLs and flag values.
func randomString(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
