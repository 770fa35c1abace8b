package container

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// LabelNetwork marks service containers with the network they serve on.
const LabelNetwork = "dev.freshet.network"

// serviceLogLines is how much of a failed service's or readiness check's output a notice shows.
const serviceLogLines = 20

// StartServices starts the services of set on a new network and waits for its readiness
// check. See executor.ServiceRunner.
func (c *Container) StartServices(ctx context.Context, ws executor.Workspace, set executor.ServiceSet, out io.Writer) (string, string, error) {
	if err := c.checkWorkspace(ctx, ws, true); err != nil {
		return "", "", fmt.Errorf("services of %s: %w", set.Name, err)
	}
	if out == nil {
		out = io.Discard
	}
	o := executor.NewOutput(out)
	netName := fmt.Sprintf("%s-%d-%s", ws.Handle, c.sequence.Add(1), sanitizeName(set.Name))
	labels := c.labels(ws.BuildID, ws.Handle, "network")
	if _, err := c.cli.NetworkCreate(ctx, netName, client.NetworkCreateOptions{Driver: "bridge", Labels: labels}); err != nil {
		return "", "", fmt.Errorf("services of %s: create network: %w", set.Name, err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = c.StopServices(context.WithoutCancel(ctx), ws, netName)
		}
	}()
	ids := map[string]string{}
	for _, svc := range set.Services {
		msg, err := c.ensureImage(ctx, svc.Image, svc.PullPolicy, set.Registries, o)
		if err != nil {
			return "", "", fmt.Errorf("service %s: %w", svc.Name, err)
		}
		if msg != "" {
			return "", fmt.Sprintf("service %s: %s", svc.Name, msg), nil
		}
		l := c.labels(ws.BuildID, ws.Handle, "service")
		l[LabelNetwork], l[LabelStep] = netName, svc.Name
		init := true
		hc := &container.HostConfig{Init: &init, NetworkMode: container.NetworkMode(netName)}
		if svc.Workspace != "" {
			hc.Mounts = []mount.Mount{{Type: mount.TypeVolume, Source: ws.Handle, Target: svc.Workspace}}
		}
		created, err := c.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Name: fmt.Sprintf("%s-%s", netName, sanitizeName(svc.Name)),
			Config: &container.Config{Image: svc.Image, Env: executor.Environ(svc.Env), Entrypoint: svc.EntryPoint, Cmd: svc.Cmd,
				WorkingDir: svc.WorkingDir, Labels: l},
			HostConfig: hc,
			NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
				netName: {Aliases: []string{svc.Name}}}},
		})
		if err != nil {
			return "", "", fmt.Errorf("service %s: create container of %s: %w", svc.Name, svc.Image, err)
		}
		ids[svc.Name] = created.ID
		if _, err := c.cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
			if ctx.Err() != nil {
				return "", "canceled while starting services", nil
			}
			return "", fmt.Sprintf("service %s: image %s did not start: %s", svc.Name, svc.Image, oneLine(err.Error())), nil
		}
		o.Notice("service %s started (image %s)", svc.Name, svc.Image)
	}
	if msg := c.ready(ctx, ws, set, netName, ids, o); msg != "" {
		return "", msg, nil
	}
	ok = true
	return netName, "", nil
}

// ready runs the readiness check of set until it succeeds, a service exits, or the timeout
// passes; it returns why the services are not ready ("" when they are).
func (c *Container) ready(ctx context.Context, ws executor.Workspace, set executor.ServiceSet, netName string, ids map[string]string, o *executor.Output) string {
	exited := func() string {
		for _, svc := range set.Services {
			in, err := c.cli.ContainerInspect(ctx, ids[svc.Name], client.ContainerInspectOptions{})
			if err != nil || in.Container.State == nil || in.Container.State.Running {
				continue
			}
			o.Notice("service %s exited with code %d; its last output:", svc.Name, in.Container.State.ExitCode)
			c.tail(ctx, ids[svc.Name], o)
			return fmt.Sprintf("service %s (image %s) exited with code %d before it was ready", svc.Name, svc.Image, in.Container.State.ExitCode)
		}
		return ""
	}
	r := set.Readiness
	if r == nil {
		return exited()
	}
	timeout, period := r.Timeout, r.Period
	if timeout <= 0 {
		timeout = executor.DefaultReadinessTimeout
	}
	if period <= 0 {
		period = executor.DefaultReadinessPeriod
	}
	start := time.Now()
	deadline := start.Add(r.InitialDelay + timeout)
	if !sleep(ctx, r.InitialDelay) {
		return "canceled while waiting for services"
	}
	step := executor.Step{Name: set.Name + "-readiness", Image: r.Image, Commands: r.Commands, Shell: r.Shell, Env: r.Env,
		Networks: []string{netName}, Registries: set.Registries}
	if err := step.Validate(); err != nil {
		return fmt.Sprintf("readiness of %s: %v", set.Name, err)
	}
	var last bytes.Buffer
	for attempt := 1; ; attempt++ {
		if msg := exited(); msg != "" {
			return msg
		}
		last.Reset()
		lo := executor.NewOutput(&last)
		res, err := c.run(ctx, ws, step, VolumePath, "readiness", lo)
		if ctx.Err() != nil {
			return "canceled while waiting for services"
		}
		if err == nil && res.Message != "" {
			return fmt.Sprintf("readiness check of %s: %s", set.Name, res.Message)
		}
		if err == nil && res.Succeeded() {
			o.Notice("services of %s ready after %d checks (%s)", set.Name, attempt, time.Since(start).Round(time.Millisecond))
			return ""
		}
		if time.Now().Add(period).After(deadline) {
			o.Notice("readiness check of %s (image %s) still failing after %d tries (exit code %d); its last output:", set.Name, r.Image, attempt, res.ExitCode)
			writeTail(o, last.String())
			if err != nil {
				return fmt.Sprintf("readiness check of %s: %v", set.Name, err)
			}
			return fmt.Sprintf("services of %s not ready within %s: readiness check (image %s) exit code %d", set.Name, timeout, r.Image, res.ExitCode)
		}
		if !sleep(ctx, period) {
			return "canceled while waiting for services"
		}
	}
}

// tail writes the last lines of a container's output as notices.
func (c *Container) tail(ctx context.Context, id string, o *executor.Output) {
	logs, err := c.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: fmt.Sprint(serviceLogLines)})
	if err != nil {
		return
	}
	defer logs.Close()
	var b bytes.Buffer
	_, _ = stdcopy.StdCopy(&b, &b, io.LimitReader(logs, 64<<10))
	writeTail(o, b.String())
}

func writeTail(o *executor.Output, s string) {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > serviceLogLines {
		lines = lines[len(lines)-serviceLogLines:]
	}
	for _, l := range lines {
		if l != "" {
			o.Notice("  %s", l)
		}
	}
}

// StopServices removes the services started on netName and the network.
func (c *Container) StopServices(ctx context.Context, ws executor.Workspace, netName string) error {
	if err := c.checkWorkspace(ctx, ws, false); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), apiTimeout)
	defer cancel()
	var errs []string
	cs, err := c.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", LabelNetwork+"="+netName)})
	if err != nil {
		return fmt.Errorf("stop services on %s: %w", netName, err)
	}
	for _, ct := range cs.Items {
		if _, err := c.cli.ContainerRemove(ctx, ct.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, err.Error())
		}
	}
	if _, err := c.cli.NetworkRemove(ctx, netName, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("stop services on %s: %s", netName, strings.Join(errs, "; "))
	}
	return nil
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
