package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Environment variables.
const (
	EnvState = "FRESHET_CONTAINERS_STATE"
	EnvCache = "FRESHET_CONTAINERS_CACHE"
)

// DefaultName is the instance name `make registry` and `make engine` use.
const DefaultName = "dev"

// Kinds of instances; each has its own directory under the state root.
const (
	kindRegistry = "registry"
	kindEngine   = "engine"
)

const loopback = "127.0.0.1"

// stateRoot holds one directory per kind, and in it one per instance.
func stateRoot() (string, error) {
	return xdgDir(EnvState, "XDG_STATE_HOME", ".local/state")
}

// cacheRoot holds what builds cache (test image layouts), outside any clone.
func cacheRoot() (string, error) {
	return xdgDir(EnvCache, "XDG_CACHE_HOME", ".cache")
}

func xdgDir(override, xdg, homeRel string) (string, error) {
	if d := os.Getenv(override); d != "" {
		return filepath.Abs(d)
	}
	if d := os.Getenv(xdg); d != "" {
		return filepath.Join(d, "freshet", "containers"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("%w (set %s)", err, override)
	}
	return filepath.Join(home, homeRel, "freshet", "containers"), nil
}

var validName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)

func checkName(name string) error {
	if !validName.MatchString(name) {
		return usageError("--name %q: want lowercase letters, digits and '-', at most 32 characters", name)
	}
	return nil
}

// instanceDir is the state directory of an instance of a kind.
func instanceDir(kind, name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	root, err := stateRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, kind, name), nil
}

// commonFlags are shared by the instance commands.
type commonFlags struct {
	name string
	json bool
}

func (c *commonFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&c.name, "name", DefaultName, "instance name")
	fs.BoolVar(&c.json, "json", false, "machine-readable JSON output")
}

// parseFlags parses a sub-command's flags and refuses positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitError{code: exitOK}
		}
		return exitError{code: exitUsage}
	}
	if fs.NArg() > 0 {
		return usageError("unexpected arguments %q", fs.Args())
	}
	return nil
}

// readJSON reads path into v; a missing file leaves v as it is.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

func writeJSON(path string, v any, perm os.FileMode) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'), perm)
}

const tmpPrefix = ".tmp-"

// writeFileAtomic writes data to a temp file beside path and renames it into place, so a
// reader never sees half a file.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), tmpPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// lockFile takes an exclusive flock on path, waiting until ctx ends. The returned func
// releases it (more than one call is fine).
func lockFile(ctx context.Context, path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			var once sync.Once
			return func() { once.Do(func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }) }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for lock %s: %w", path, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == ':' || r == '=' || r == ',' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
