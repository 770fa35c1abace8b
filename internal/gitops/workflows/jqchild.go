package workflows

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A jqFilter is the workflow author's code: it runs in a child process of the controller's own
// binary, so that a filter that allocates without bound ("x" * 1e9, [range(1e9)]) ends that
// process, not the controller that runs every workflow of the runtime. The child is this
// binary started with jqChildEnv set and nothing else in its environment; this package's init
// runs the filter (from stdin) and exits before anything else starts, in the freshet binary
// and in test binaries alike.
const (
	jqChildEnv = "FRESHET_WORKFLOWS_JQ_CHILD"
	// jqMemory is how much address space the child may take beyond what it had when it started.
	jqMemory = 512 << 20
)

func init() {
	if os.Getenv(jqChildEnv) == "1" {
		os.Exit(jqChildMain(os.Stdin, os.Stdout, os.Stderr))
	}
}

// jqRequest is what the controller sends its child.
type jqRequest struct {
	Filter string          `json:"filter"`
	Input  json.RawMessage `json:"input"`
}

// jqChildMain bounds its own address space, then evaluates the request on in and writes the
// output to out; an error goes to errOut with exit code 1.
func jqChildMain(in io.Reader, out, errOut io.Writer) int {
	if vm := vmSize(); vm > 0 {
		lim := &syscall.Rlimit{Cur: vm + jqMemory, Max: vm + jqMemory}
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, lim); err != nil {
			fmt.Fprintf(errOut, "bound the filter's memory: %v", err)
			return 1
		}
	}
	var req jqRequest
	if err := json.NewDecoder(io.LimitReader(in, 64<<20)).Decode(&req); err != nil {
		fmt.Fprintf(errOut, "read the request: %v", err)
		return 1
	}
	var v any
	if err := json.Unmarshal(req.Input, &v); err != nil {
		fmt.Fprintf(errOut, "read the object: %v", err)
		return 1
	}
	res, err := runJQ(context.Background(), req.Filter, v)
	if err != nil {
		fmt.Fprint(errOut, err.Error())
		return 1
	}
	_, _ = io.WriteString(out, res)
	return 0
}

// vmSize is the process's virtual memory size (VmSize), 0 where unknown.
func vmSize() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// evalJQInChild runs a jq filter over input (JSON) in a child process: the child's own 2 s
// bound and 256 KiB output, its address space bounded (jqMemory), killed when ctx ends or a
// little after the filter's time.
func evalJQInChild(ctx context.Context, filter string, input []byte) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the controller's binary to run the filter in: %w", err)
	}
	req, err := json.Marshal(jqRequest{Filter: filter, Input: input})
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, jqTimeout+3*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = []string{jqChildEnv + "=1"}
	cmd.Dir = os.TempDir()
	cmd.Stdin = bytes.NewReader(req)
	var stdout limitedBuffer
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), nil
	case ctx.Err() != nil:
		return "", fmt.Errorf("ran longer than %s", jqTimeout)
	case errors.As(err, &exit) && exit.ExitCode() == 1 && stderr.Len() > 0:
		return "", errors.New(stderr.String())
	case strings.Contains(stderr.String(), "out of memory") || strings.Contains(stderr.String(), "address space"):
		// The runtime's "out of memory" ("too many address space collisions" under -race).
		return "", fmt.Errorf("needs more than %d MiB", jqMemory>>20)
	default:
		first, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		return "", fmt.Errorf("does not evaluate: %v: %s", err, first)
	}
}
