package faults

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
)

// countLog checks a log for "line 1" … "line n" in order: it returns how many are missing and
// how many appear more than once.
func countLog(log string, n int) (lost, doubled int) {
	seen := map[string]int{}
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, "line ") {
			seen[l]++
		}
	}
	for i := 1; i <= n; i++ {
		switch c := seen[fmt.Sprintf("line %d", i)]; {
		case c == 0:
			lost++
		case c > 1:
			doubled += c - 1
		}
	}
	return lost, doubled
}

// Item 7: `freshet build logs -f` follows a build through a control-plane restart longer than
// its old retry budget (about 3 s) and prints every line once.
func TestFaultLogFollowerSurvivesRestart(t *testing.T) {
	cp := newControlPlane(t, "server")
	cp.runner("r1", "")
	const lines = 150
	ref := cp.pipeline("count", fmt.Sprintf("version: '1.0'\nsteps:\n  count:\n    commands:\n      - 'for i in $(seq 1 %d); do echo \"line $i\"; sleep 0.05; done'\n", lines))
	b := cp.run(ref, nil)
	login, err := client.New(cp.url).Login(context.Background(), client.LoginRequest{Email: "admin@freshet.local", Password: adminPassword})
	if err != nil {
		t.Fatal(err)
	}
	follower := start(t, "build logs -f", []string{"FRESHET_SERVER=" + cp.url, "FRESHET_TOKEN=" + login.Token,
		"FRESHET_CLI_CONFIG=" + filepath.Join(t.TempDir(), "cli.yaml")}, "build", "logs", b.ID, "-f")
	waitFor(t, 30*time.Second, "the follower prints line 10", func() bool { return strings.Contains(follower.out.String(), "line 10\n") })

	cp.kill()
	time.Sleep(4 * time.Second)
	cp.start()

	took, ended := follower.waitExit(60 * time.Second)
	final := cp.waitFinished(60*time.Second, b.ID)[0]
	lost, doubled := countLog(follower.out.String(), lines)
	gaveUp := 0
	if !ended || follower.err != nil {
		gaveUp = 1
	}
	row(t, "7", "lines lost by build logs -f across a 4 s restart ("+backend()+")", lost)
	row(t, "7", "followers that gave up or failed ("+backend()+")", gaveUp)
	if final.Status != "success" {
		t.Fatalf("build %s: %s\n%s", final.Status, final.Reason, cp.log(b.ID))
	}
	if gaveUp != 0 || lost != 0 || doubled != 0 {
		t.Fatalf("follower: ended %v (%v after the restart, err %v), %d lines lost, %d doubled:\n%s", ended, took, follower.err, lost, doubled, follower.out)
	}
}
