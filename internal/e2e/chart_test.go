package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/freshet-dev/freshet/charts"
	"github.com/freshet-dev/freshet/internal/helmchart"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
	"github.com/freshet-dev/freshet/internal/testenv/proc"
)

// TestChartReplicasStartFromTheirPodSpec runs the freshet chart's control plane the way its
// pods would: two `freshet server` processes started with exactly the args and environment the
// rendered Deployment gives its container (Secret references resolved from the rendered
// Secret, the pod IP as 127.0.0.1), on a fresh PostgreSQL schema and a real NATS JetStream
// server. Both replicas must pass the chart's own readiness and liveness probes, share the
// database (the admin the chart configures logs in on either), and stop cleanly on SIGTERM
// within the pod's grace period. Two pods have their own IPs; on one host each replica gets
// its own port instead (the chart's 8080 in --listen and the advertise URL is replaced).
func TestChartReplicasStartFromTheirPodSpec(t *testing.T) {
	if os.Getenv(storetest.EnvPostgres) == "" {
		t.Skipf("%s is not set: the chart's control plane runs on PostgreSQL", storetest.EnvPostgres)
	}
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, JetStream: true,
		StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats not ready")
	}
	key := make([]byte, 32)
	rand.Read(key)
	ch, err := helmchart.Load(charts.Freshet)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := helmchart.Render(ch, helmchart.Release{Name: "freshet", Namespace: "freshet"}, map[string]any{
		"replicaCount": 2,
		"masterKey":    map[string]any{"value": "k1:" + base64.StdEncoding.EncodeToString(key)},
		"database":     map[string]any{"url": storetest.DSN(t, store.Postgres)},
		"nats":         map[string]any{"url": ns.ClientURL()},
		"tunnel":       map[string]any{"hopSecret": "chart-test-hop-secret-of-32-bytes-or-more"},
		"admin":        map[string]any{"email": "ops@example.com", "password": "chart-test-password-1"},
		"ingress":      map[string]any{"enabled": false},
	})
	if err != nil {
		t.Fatal(err)
	}
	secret := map[string]string{}
	var pod map[string]any
	for _, o := range objs {
		switch o["kind"] {
		case "Secret":
			for k, v := range o["stringData"].(map[string]any) {
				secret[k] = v.(string)
			}
		case "Deployment":
			pod = o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		}
	}
	if pod == nil {
		t.Fatal("no Deployment rendered")
	}
	c := pod["containers"].([]any)[0].(map[string]any)
	grace := time.Duration(pod["terminationGracePeriodSeconds"].(float64)) * time.Second
	probe := func(name string) string {
		return c[name].(map[string]any)["httpGet"].(map[string]any)["path"].(string)
	}
	readiness, liveness := probe("readinessProbe"), probe("livenessProbe")
	if readiness != "/readyz" || liveness != "/healthz" {
		t.Fatalf("probes %s %s", readiness, liveness)
	}

	type replica struct {
		url    string
		cmd    *exec.Cmd
		logs   *proc.Buffer
		exited chan error
	}
	start := func(port int) *replica {
		data := t.TempDir()
		var args []string
		for _, a := range c["args"].([]any) {
			s := a.(string)
			s = strings.Replace(s, ":8080", fmt.Sprintf("127.0.0.1:%d", port), 1)
			s = strings.Replace(s, "/var/lib/freshet", data, 1)
			args = append(args, s)
		}
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		vars := map[string]string{}
		for _, e := range c["env"].([]any) {
			e := e.(map[string]any)
			name := e["name"].(string)
			var v string
			switch {
			case e["value"] != nil:
				v = os.Expand(strings.ReplaceAll(e["value"].(string), "$(", "${"), func(k string) string { return vars[k] })
			case e["valueFrom"] != nil:
				from := e["valueFrom"].(map[string]any)
				if ref, ok := from["secretKeyRef"].(map[string]any); ok {
					if ref["name"] != "freshet" {
						t.Fatalf("%s refers to Secret %v, not the chart's", name, ref["name"])
					}
					v, ok = secret[ref["key"].(string)]
					if !ok {
						t.Fatalf("%s refers to key %v, which the chart's Secret lacks", name, ref["key"])
					}
				} else {
					v = "127.0.0.1" // status.podIP
				}
			}
			if name == "FRESHET_ADVERTISE_URL" {
				v = strings.Replace(v, ":8080", fmt.Sprintf(":%d", port), 1)
			}
			vars[name] = v
			env = append(env, name+"="+v)
		}
		r := &replica{url: fmt.Sprintf("http://127.0.0.1:%d", port), logs: &proc.Buffer{}}
		r.cmd = exec.Command(binary, args...)
		r.cmd.Env = env
		r.cmd.Stdout, r.cmd.Stderr = r.logs, r.logs
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.exited = make(chan error, 1)
		go func() { r.exited <- r.cmd.Wait() }()
		t.Cleanup(func() {
			r.cmd.Process.Kill()
			<-r.exited
		})
		return r
	}
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	replicas := []*replica{start(proc.FreePort(t)), start(proc.FreePort(t))}
	for i, r := range replicas {
		deadline := time.Now().Add(90 * time.Second)
		for {
			code, body := get(r.url + readiness)
			if code == http.StatusOK {
				var rz struct{ Ready bool }
				if json.Unmarshal([]byte(body), &rz); !rz.Ready {
					t.Fatalf("replica %d: %s answers 200 but %s", i, readiness, body)
				}
				break
			}
			select {
			case err := <-r.exited:
				r.exited <- err // for the cleanup
				t.Fatalf("replica %d exited (%v) before it was ready:\n%s", i, err, r.logs)
			case <-time.After(100 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d not ready (%d %s):\n%s", i, code, body, r.logs)
			}
		}
		if code, body := get(r.url + liveness); code != http.StatusOK {
			t.Fatalf("replica %d: %s = %d %s", i, liveness, code, body)
		}
	}
	// One database: the admin the chart's values create logs in on both replicas.
	for i, r := range replicas {
		resp, err := http.Post(r.url+"/api/v1/auth/login", "application/json",
			strings.NewReader(`{"email":"ops@example.com","password":"chart-test-password-1"}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("replica %d: login = %d %s", i, resp.StatusCode, b)
		}
	}
	// SIGTERM, as the kubelet sends: the replica exits 0 within the pod's grace period.
	r := replicas[0]
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-r.exited:
		r.exited <- err // for the cleanup
		if err != nil {
			t.Fatalf("replica 0 exited with %v after SIGTERM:\n%s", err, r.logs)
		}
	case <-time.After(grace):
		t.Fatalf("replica 0 did not stop within the chart's grace period %s", grace)
	}
	if code, body := get(replicas[1].url + readiness); code != http.StatusOK {
		t.Errorf("replica 1 after replica 0 stopped: %d %s", code, body)
	}
}
