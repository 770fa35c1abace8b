package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/freshet-dev/freshet/client"
)

// ciBench measures CI: pickup latency with the streamed protocol and with a 3 s polling
// baseline, log latency to a live follower, and 100 concurrent builds of 1,000 lines each.
func ciBench(bin string, pickups, baselinePickups int) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "freshet-bench-ci")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	port := freePort()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	srv := exec.Command(bin, "server", "--data-dir", filepath.Join(dir, "data"), "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--log-level", "warn")
	srv.Env = append(os.Environ(), "FRESHET_ADMIN_PASSWORD="+adminPassword)
	var srvLog bytes.Buffer
	srv.Stderr = &srvLog
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { srv.Process.Signal(syscall.SIGTERM); srv.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for client.New(base).Health(ctx) != nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("server not ready: %s", srvLog.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	login, err := client.New(base).Login(ctx, client.LoginRequest{Email: "admin@freshet.local", Password: adminPassword})
	if err != nil {
		return err
	}
	c := client.New(base, client.WithToken(login.Token))
	if _, err := c.CreateProject(ctx, "bench"); err != nil {
		return err
	}
	runner := func(name string, args ...string) (func(), error) {
		reg, err := c.RegisterRunner(ctx, client.RegisterRunnerRequest{Name: name, Labels: map[string]string{"bench": name}})
		if err != nil {
			return nil, err
		}
		work := filepath.Join(dir, name)
		os.MkdirAll(work, 0o700)
		cmd := exec.Command(bin, append([]string{"runner", "--server", base, "--executor", "local", "--work-dir", work, "--log-level", "warn", "--labels", "bench=" + name}, args...)...)
		cmd.Env = append(os.Environ(), "FRESHET_RUNNER_TOKEN="+reg.Token)
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }, nil
	}
	pipeline := func(name, runnerLabel, step string) error {
		spec := "version: '1.0'\nsteps:\n  main:\n    commands:\n      - '" + strings.ReplaceAll(step, "'", "''") + "'\n"
		_, err := c.CreatePipeline(ctx, client.PipelineRequest{Project: "bench", Name: name, Spec: spec,
			Config: client.PipelineConfig{RunnerLabels: map[string]string{"bench": runnerLabel}}})
		return err
	}

	fmt.Printf("## CI: build pickup (queued → first step running)\n\n")
	fmt.Println("| runner transport | builds | p50 | p99 | max |")
	fmt.Println("|---|---|---|---|---|")
	for _, tc := range []struct {
		name, label string
		args        []string
		n           int
	}{
		{"stream (ConnectRPC server stream)", "stream", []string{"--transport", "stream"}, pickups},
		{"long-poll fallback", "poll", []string{"--transport", "poll"}, pickups / 4},
		{"baseline: poll every 3 s (venona)", "interval", []string{"--transport", "interval", "--poll-interval", "3s"}, baselinePickups},
	} {
		stop, err := runner(tc.label, tc.args...)
		if err != nil {
			return err
		}
		if err := pipeline("pickup-"+tc.label, tc.label, "true"); err != nil {
			stop()
			return err
		}
		time.Sleep(500 * time.Millisecond) // let the runner connect
		var lat []time.Duration
		for i := range tc.n {
			b, err := c.RunPipeline(ctx, "bench/pickup-"+tc.label, client.RunRequest{})
			if err != nil {
				stop()
				return err
			}
			done, err := waitDone(ctx, c, b.ID, 30*time.Second)
			if err != nil {
				stop()
				return fmt.Errorf("pickup build %d: %w", i, err)
			}
			if len(done.Steps) == 0 || done.Steps[0].StartedAt == nil {
				stop()
				return fmt.Errorf("build %s has no started step (%s)", b.ID, done.Status)
			}
			lat = append(lat, done.Steps[0].StartedAt.Sub(done.CreatedAt))
			if tc.label == "interval" {
				// Spread requests over the poll cycle, as real pushes would be.
				time.Sleep(time.Duration(i%7) * 370 * time.Millisecond)
			}
		}
		stop()
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		fmt.Printf("| %s | %d | %s | %s | %s |\n", tc.name, len(lat), ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100]), ms(lat[len(lat)-1]))
	}
	fmt.Println()

	// Log latency: a step prints timestamped lines; a live follower measures when it sees them.
	stop, err := runner("logs", "--transport", "stream")
	if err != nil {
		return err
	}
	if err := pipeline("loglatency", "logs", `for i in $(seq 1 400); do echo "t $(date +%s%N)"; sleep 0.01; done`); err != nil {
		stop()
		return err
	}
	time.Sleep(300 * time.Millisecond)
	b, err := c.RunPipeline(ctx, "bench/loglatency", client.RunRequest{})
	if err != nil {
		stop()
		return err
	}
	var lat []time.Duration
	var partial string
	err = c.FollowLog(ctx, b.ID, 0, func(ev client.LogEvent) error {
		now := time.Now()
		if ev.Done {
			return nil
		}
		text := partial + string(ev.Data)
		lines := strings.Split(text, "\n")
		partial = lines[len(lines)-1]
		for _, l := range lines[:len(lines)-1] {
			if ns, ok := strings.CutPrefix(l, "t "); ok {
				if v, err := strconv.ParseInt(ns, 10, 64); err == nil {
					lat = append(lat, now.Sub(time.Unix(0, v)))
				}
			}
		}
		return nil
	})
	stop()
	if err != nil {
		return err
	}
	if len(lat) == 0 {
		return fmt.Errorf("log latency: no lines seen")
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	fmt.Printf("## CI: log line written → seen by a live follower (SSE)\n\n")
	fmt.Println("| lines | p50 | p99 | max |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| %d | %s | %s | %s |\n\n", len(lat), ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100]), ms(lat[len(lat)-1]))

	// 100 concurrent builds × 1,000 lines.
	stop, err = runner("load", "--transport", "stream", "--concurrency", "100")
	if err != nil {
		return err
	}
	defer stop()
	if err := pipeline("load", "load", `seq 1 1000 | sed "s/^/line /"`); err != nil {
		return err
	}
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	var ids []string
	for range 100 {
		b, err := c.RunPipeline(ctx, "bench/load", client.RunRequest{})
		if err != nil {
			return err
		}
		ids = append(ids, b.ID)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(ids))
	for _, id := range ids {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			b, err := waitDone(ctx, c, id, 5*time.Minute)
			if err == nil && b.Status != "success" {
				err = fmt.Errorf("build %s %s", id, b.Status)
			}
			errs <- err
		}(id)
	}
	wg.Wait()
	wall := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	bad := 0
	for _, id := range ids {
		log, err := c.BuildLog(ctx, id, 0)
		if err != nil {
			return err
		}
		n := 0
		sc := bufio.NewScanner(bytes.NewReader(log))
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "line ") {
				n++
			}
		}
		if n != 1000 {
			bad++
		}
	}
	fmt.Printf("## CI: 100 concurrent builds × 1,000 log lines (one runner, concurrency 100, local executor)\n\n")
	fmt.Println("| builds | wall time | builds/s | log lines/s | logs complete |")
	fmt.Println("|---|---|---|---|---|")
	fmt.Printf("| 100 | %s | %.1f | %.0f | %d/100 |\n\n", wall.Round(10*time.Millisecond), 100/wall.Seconds(), 100000/wall.Seconds(), 100-bad)
	return nil
}

func waitDone(ctx context.Context, c *client.Client, id string, timeout time.Duration) (client.Build, error) {
	deadline := time.Now().Add(timeout)
	for {
		b, err := c.GetBuild(ctx, id)
		if err != nil {
			return b, err
		}
		switch b.Status {
		case "success", "failed", "terminated":
			return b, nil
		}
		if time.Now().After(deadline) {
			return b, fmt.Errorf("build %s still %s after %s", id, b.Status, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
