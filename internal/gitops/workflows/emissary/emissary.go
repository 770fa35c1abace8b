// Package emissary is the helper that runs inside every pod of a workflow step (Argo
// Workflows' "emissary" role), as `freshet emissary`: its init container copies the freshet
// binary into a volume shared with the step's container (`freshet emissary init DEST`), and the
// step's container runs the user's command under it (`DEST emissary run [--result] [--param
// NAME=PATH]… -- COMMAND ARG…`). It passes stdin, stdout, stderr and signals through, exits with
// the command's exit code and then writes the step's outputs — stdout as the result, each
// output parameter's file — as JSON (Outputs) to the container's termination message, where the
// workflow controller reads them from the pod's status. It never runs anything but the command
// it was given, never through a shell.
package emissary

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/freshet-dev/freshet/internal/gitops/workflows/artifacts"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// Outputs is what `emissary run` writes to the termination message.
type Outputs struct {
	Result     *string           `json:"result,omitempty"`
	Parameters map[string]string `json:"parameters,omitempty"`
	// Errors names the parameters whose file could not be read, and why.
	Errors map[string]string `json:"errors,omitempty"`
	// Error says why the outputs could not be written whole.
	Error string `json:"error,omitempty"`
	// Artifacts are the output artifacts saved, with their size in bytes as stored.
	Artifacts map[string]int64 `json:"artifacts,omitempty"`
	// ArtifactErrors names the output artifacts that could not be saved, and why (a missing
	// optional one is in neither map).
	ArtifactErrors map[string]string `json:"artifactErrors,omitempty"`
	// InputError says why an input artifact could not be loaded: the command did not run.
	InputError string `json:"inputError,omitempty"`
}

// Limits. A pod's termination message holds at most 4096 bytes (Kubernetes truncates it).
const (
	MaxMessage      = 4096
	maxCapture      = 64 << 10
	TerminationPath = "/dev/termination-log"
	// EnvTerminationPath overrides TerminationPath (tests).
	EnvTerminationPath = "FRESHET_EMISSARY_TERMINATION_LOG"
	// EnvArtifacts holds the step's artifacts.Spec as JSON (`run --artifacts`).
	EnvArtifacts = "FRESHET_EMISSARY_ARTIFACTS"
	// EnvSecretPrefix starts the names of the variables holding the artifacts' credentials;
	// they and EnvArtifacts are removed from the command's environment.
	EnvSecretPrefix = "FRESHET_ARTIFACT_SECRET_"
)

// Main runs `freshet emissary ARGS` and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: freshet emissary init DEST | run [--result] [--artifacts] [--param NAME=PATH]... -- COMMAND [ARG...]")
		return 2
	}
	switch args[0] {
	case "init":
		if len(args) != 2 {
			fmt.Fprintln(stderr, "usage: freshet emissary init DEST")
			return 2
		}
		if err := copySelf(args[1]); err != nil {
			fmt.Fprintln(stderr, "emissary init:", err)
			return 1
		}
		return 0
	case "run":
		return run(args[1:], stdin, stdout, stderr)
	}
	fmt.Fprintf(stderr, "emissary: unknown command %q (init, run)\n", args[0])
	return 2
}

func copySelf(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(self)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dest + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dest)
}

// capped keeps the first n bytes written to it and counts the rest.
type capped struct {
	buf  bytes.Buffer
	n    int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.n - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	if c.buf.Len()+len(p) > c.n {
		c.over = true
	}
	return len(p), nil
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var result, withArtifacts bool
	params := map[string]string{}
	var order []string
	i := 0
	for ; i < len(args) && args[i] != "--"; i++ {
		switch a := args[i]; {
		case a == "--result":
			result = true
		case a == "--artifacts":
			withArtifacts = true
		case a == "--param" && i+1 < len(args):
			i++
			name, path, ok := strings.Cut(args[i], "=")
			if !ok || name == "" || path == "" {
				fmt.Fprintf(stderr, "emissary: --param %q: want NAME=PATH\n", args[i])
				return 2
			}
			params[name] = path
			order = append(order, name)
		default:
			fmt.Fprintf(stderr, "emissary: unknown flag %q\n", a)
			return 2
		}
	}
	if i >= len(args)-1 {
		fmt.Fprintln(stderr, "emissary: no command after --")
		return 2
	}
	out := Outputs{}
	var spec *artifacts.Spec
	var mover *artifacts.Mover
	if withArtifacts {
		var err error
		if spec, mover, err = loadSpec(); err == nil {
			err = loadInputs(spec, mover)
		}
		if err != nil {
			fmt.Fprintln(stderr, "emissary:", err)
			out.InputError = capText(err.Error(), 1500)
			if werr := writeMessage(out); werr != nil {
				fmt.Fprintln(stderr, "emissary: write outputs:", werr)
			}
			return 1
		}
	}
	cmd := exec.Command(args[i+1], args[i+2:]...)
	cmd.Env = childEnv(os.Environ())
	cmd.Stdin, cmd.Stderr = stdin, stderr
	capture := &capped{n: maxCapture}
	cmd.Stdout = stdout
	if result {
		cmd.Stdout = io.MultiWriter(stdout, capture)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	code := 0
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "emissary: start %s: %v\n", args[i+1], err)
		code = 127
	} else {
		done := make(chan struct{})
		go func() {
			for {
				select {
				case s := <-sigs:
					_ = cmd.Process.Signal(s)
				case <-done:
					return
				}
			}
		}()
		err := cmd.Wait()
		close(done)
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		case err != nil:
			code = 1
		}
	}
	if spec != nil {
		saveOutputs(spec, mover, &out, stderr)
	}
	if result {
		r := strings.TrimRight(capture.buf.String(), "\n")
		out.Result = &r
		if capture.over {
			out.Error = fmt.Sprintf("stdout is longer than %d bytes: the result is cut", maxCapture)
		}
	}
	for _, name := range order {
		b, err := readCapped(params[name], maxCapture)
		if err != nil {
			if out.Errors == nil {
				out.Errors = map[string]string{}
			}
			out.Errors[name] = err.Error()
			continue
		}
		if out.Parameters == nil {
			out.Parameters = map[string]string{}
		}
		out.Parameters[name] = strings.TrimRight(string(b), "\n")
	}
	if err := writeMessage(out); err != nil {
		fmt.Fprintln(stderr, "emissary: write outputs:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func capText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// childEnv is the environment without the artifacts' spec and credentials.
func childEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if strings.HasPrefix(kv, EnvArtifacts+"=") || strings.HasPrefix(kv, EnvSecretPrefix) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func loadSpec() (*artifacts.Spec, *artifacts.Mover, error) {
	var spec artifacts.Spec
	if err := json.Unmarshal([]byte(os.Getenv(EnvArtifacts)), &spec); err != nil {
		return nil, nil, fmt.Errorf("the artifacts' spec (%s) does not decode: %v", EnvArtifacts, err)
	}
	p, err := netpolicy.Options{PrivateNetworks: spec.PrivateNetworks}.Policy()
	if err != nil {
		return nil, nil, fmt.Errorf("the artifacts' network policy: %v", err)
	}
	return &spec, &artifacts.Mover{Policy: p}, nil
}

func loadInputs(spec *artifacts.Spec, m *artifacts.Mover) error {
	for _, in := range spec.Inputs {
		if err := m.Load(context.Background(), in); err != nil {
			return fmt.Errorf("failed to load input artifact %q from %s: %v", in.Name, in.Location, err)
		}
	}
	return nil
}

func saveOutputs(spec *artifacts.Spec, m *artifacts.Mover, out *Outputs, stderr io.Writer) {
	for _, o := range spec.Outputs {
		size, err := m.Save(context.Background(), o)
		switch {
		case errors.Is(err, artifacts.ErrMissing) && o.Optional:
		case err != nil:
			fmt.Fprintf(stderr, "emissary: output artifact %s: %v\n", o.Name, err)
			if out.ArtifactErrors == nil {
				out.ArtifactErrors = map[string]string{}
			}
			out.ArtifactErrors[o.Name] = capText(err.Error(), 400)
		default:
			if out.Artifacts == nil {
				out.Artifacts = map[string]int64{}
			}
			out.Artifacts[o.Name] = size
		}
	}
}

func readCapped(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, n+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > n {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, n)
	}
	return b, nil
}

func writeMessage(out Outputs) error {
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	if len(b) > MaxMessage && out.Result != nil {
		// The result goes first: most steps print more than anyone reads as a result.
		size := len(b)
		out.Result = nil
		out.Error = fmt.Sprintf("stdout is too long to be the result: the outputs are %d bytes as JSON; a pod's termination message holds at most %d", size, MaxMessage)
		b, _ = json.Marshal(out)
	}
	if len(b) > MaxMessage {
		b, _ = json.Marshal(Outputs{Error: fmt.Sprintf("the outputs are %d bytes as JSON; a pod's termination message holds at most %d (use artifacts for larger outputs)", len(b), MaxMessage)})
	}
	path := TerminationPath
	if p := os.Getenv(EnvTerminationPath); p != "" {
		path = p
	}
	return os.WriteFile(path, b, 0o644)
}
