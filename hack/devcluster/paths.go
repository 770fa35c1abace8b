package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

// Versions of what devcluster builds. The cache directory is keyed by KubernetesVersion; the
// kwok version is checked in each binary's embedded build info.
const (
	KubernetesVersion = "v1.33.13" // every k8s.io staging module exists on the proxy at v0.33.13
	KwokVersion       = "v0.7.0"   // uses client-go v0.33; v0.8.0 wants client-go v0.36
	DefaultName       = "dev"
)

// Environment variables.
const (
	EnvCache = "FRESHET_DEVCLUSTER_CACHE"
	EnvState = "FRESHET_DEVCLUSTER_STATE"
	EnvEtcd  = "FRESHET_DEVCLUSTER_ETCD"
	EnvGo    = "FRESHET_DEVCLUSTER_GO"
)

// cacheRoot is where built binaries live, outside any clone, shared by every instance.
func cacheRoot() (string, error) {
	if d := os.Getenv(EnvCache); d != "" {
		return filepath.Abs(d)
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "freshet", "devcluster"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cache dir: %w (set %s)", err, EnvCache)
	}
	return filepath.Join(home, ".cache", "freshet", "devcluster"), nil
}

// versionDir is the cache directory for this Kubernetes version.
func versionDir() (string, error) {
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "k8s-"+KubernetesVersion), nil
}

// binDir holds etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok.
func binDir() (string, error) {
	d, err := versionDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "bin"), nil
}

// stateRoot holds one directory per instance.
func stateRoot() (string, error) {
	if d := os.Getenv(EnvState); d != "" {
		return filepath.Abs(d)
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "freshet", "devcluster"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("state dir: %w (set %s)", err, EnvState)
	}
	return filepath.Join(home, ".local", "state", "freshet", "devcluster"), nil
}

var validName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

// errBadName is returned for an instance name that is not a short DNS label.
var errBadName = errors.New("invalid instance name")

func checkName(name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("%w: --name %q: want lowercase letters, digits and '-', at most 40 characters", errBadName, name)
	}
	return nil
}

// commonFlags are shared by the instance commands.
type commonFlags struct {
	name string
	json bool
}

func (c *commonFlags) bind(fs *flag.FlagSet, withJSON bool) {
	fs.StringVar(&c.name, "name", DefaultName, "instance name")
	if withJSON {
		fs.BoolVar(&c.json, "json", false, "machine-readable JSON output")
	}
}

// instanceDir returns the state directory of the named instance.
func instanceDir(name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	root, err := stateRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, name), nil
}
