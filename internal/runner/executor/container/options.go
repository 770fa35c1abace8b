package container

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// ErrInvalidOptions is wrapped by every error Options.Validate returns.
var ErrInvalidOptions = errors.New("invalid container executor options")

// ErrNoEngine means no container engine answered where the executor looked for one.
var ErrNoEngine = errors.New("no container engine reachable")

// Defaults.
const (
	// DefaultDockerSocket and DefaultPodmanSocket are where an engine is looked for when
	// DOCKER_HOST is not set, in this order.
	DefaultDockerSocket = "/var/run/docker.sock"
	DefaultPodmanSocket = "/run/podman/podman.sock"
	// DefaultMaxContextSize bounds the build context a build step sends to the engine.
	DefaultMaxContextSize = 512 << 20
	// pingTimeout bounds how long Detect waits for an engine to answer.
	pingTimeout = 3 * time.Second
)

// Options configures the container executor. The zero value is valid and means the defaults.
type Options struct {
	// Host is the engine's address as DOCKER_HOST writes it (unix:///path, tcp://host:port).
	// Empty: DOCKER_HOST, else DefaultDockerSocket, else DefaultPodmanSocket (see Detect).
	Host string
	// Runner names the runner; it labels everything the executor makes, and Sweep removes
	// only what carries it (default: the host name).
	Runner string
	// KillGrace is how long a stopped step has between SIGTERM and SIGKILL (default
	// executor.DefaultKillGrace).
	KillGrace time.Duration
	// MaxContextSize bounds a build step's context, in bytes (default DefaultMaxContextSize).
	MaxContextSize int64
}

// Validate reports every invalid field, naming the field, its value and what is valid.
func (o *Options) Validate() error {
	var errs []error
	bad := func(field string, value any, valid string) {
		errs = append(errs, fmt.Errorf("%w: %s = %q: %s", ErrInvalidOptions, field, fmt.Sprint(value), valid))
	}
	if o.Host != "" {
		if u, err := url.Parse(o.Host); err != nil || (u.Scheme != "unix" && u.Scheme != "tcp" && u.Scheme != "http" && u.Scheme != "https") {
			bad("Host", o.Host, "must be unix:///path/to/socket or tcp://host:port (as DOCKER_HOST)")
		}
	}
	if o.KillGrace < 0 {
		bad("KillGrace", o.KillGrace, fmt.Sprintf("must not be negative (0 means %s)", executor.DefaultKillGrace))
	}
	if o.MaxContextSize < 0 {
		bad("MaxContextSize", o.MaxContextSize, "must not be negative (0 means the default)")
	}
	if strings.ContainsAny(o.Runner, "\x00\n") {
		bad("Runner", o.Runner, "must be one line")
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.Runner == "" {
		o.Runner, _ = os.Hostname()
	}
	if o.KillGrace == 0 {
		o.KillGrace = executor.DefaultKillGrace
	}
	if o.MaxContextSize == 0 {
		o.MaxContextSize = DefaultMaxContextSize
	}
	return o
}

// Candidates returns the engine addresses Detect tries for host, in order: host itself when
// set, else DOCKER_HOST when set, else the default Docker socket and then Podman's.
func Candidates(host string) []string {
	if host != "" {
		return []string{host}
	}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return []string{h}
	}
	return []string{"unix://" + DefaultDockerSocket, "unix://" + DefaultPodmanSocket}
}

// Detect returns the address of the first engine among Candidates(host) that answers a ping,
// or an error wrapping ErrNoEngine that names every address tried and why it failed.
func Detect(ctx context.Context, host string) (string, error) {
	var errs []string
	for _, h := range Candidates(host) {
		if path, ok := strings.CutPrefix(h, "unix://"); ok {
			if _, err := os.Stat(path); err != nil {
				errs = append(errs, fmt.Sprintf("%s: no socket", h))
				continue
			}
		}
		cli, err := client.New(client.WithHost(h))
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", h, err))
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, pingTimeout)
		_, err = cli.Ping(pctx, client.PingOptions{})
		cancel()
		cli.Close()
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", h, err))
			continue
		}
		return h, nil
	}
	return "", fmt.Errorf("%w (tried %s)", ErrNoEngine, strings.Join(errs, "; "))
}
