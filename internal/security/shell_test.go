package security_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/runner"
	"github.com/freshet-dev/freshet/internal/runner/executor/local"
	"github.com/freshet-dev/freshet/internal/server/servertest"
)

// injPayloads are branch names and commit messages from whoever can push. Each tries to break
// out of some quoting context and create a marker file; MARK stands for the marker's path, which
// ends in the name of the step the payload ran in (the shell expands $FORM only if the payload
// runs as code).
var injPayloads = []string{
	"main", "", "feature/login", "main$(touch${IFS}MARK)", "$(touch MARK)", "`touch MARK`",
	`x"; touch MARK; echo "`, `x'; touch MARK; echo '`, `x'"'"'; touch MARK #`, "; touch MARK", "&& touch MARK",
	"|| touch MARK", "| touch MARK", "x\ntouch MARK", "\\\"; touch MARK #", "EOF\ntouch MARK\nEOF",
	"EOF\ntouch MARK", "*", "[a]?", "~", "$HOME", "${IFS}", "a[$(touch MARK)]", "$((1+1))", "-n", "-e", `\n`,
	`a\`, `'"`, `$'\x41'`, "日本語 ünï", `"}"`, "${{CF_BRANCH}}", "%s%n", ">MARK", "a #b", " lead  trail ",
	"tab\there", "))) ; touch MARK ; (((", "}; touch MARK; {", "$'\\n'; touch MARK", "-- $(touch MARK)", "42",
	"x' $(touch MARK) '", "$[1]", "\r\ntouch MARK", "../../..",
}

// injForm is one step of the attack pipeline: a way users write ${{CF_BRANCH}} or
// ${{CF_COMMIT_MESSAGE}}, and what the step must print between @@NAME@@ and @@/NAME@@ for a
// value v. With ok false the step must not run (refused or skipped); with out == anyOutput it
// may print anything (bash computing arithmetic).
type injForm struct {
	name string
	step string // the step that holds the form's commands with others ("sh_forms", "bash_forms"), or "" for a step of its own
	yaml string // the step's fields, or for a shared step the form's commands (YAML list items)
	want func(v string) (out string, ok bool)
}

const anyOutput = "\x00any"

func exactly(v string) (string, bool) { return v, true }

// arithSafe are the values Freshet lets bash evaluate as arithmetic.
func arithSafe(v string) bool {
	return strings.Trim(v, "0123456789 \t\n\r\v\f+-*/%()<>=!&|^~?:,") == ""
}

func injForms() []injForm {
	trim := func(v string) (string, bool) { return strings.TrimRight(v, "\n"), true }
	arith := func(v string) (string, bool) {
		if arithSafe(v) {
			return anyOutput, true
		}
		return "", false
	}
	return []injForm{
		{"unquoted", "bash_forms", "      - echo @@unquoted@@${{CF_BRANCH}}@@/unquoted@@", exactly},
		{"printf", "sh_forms", "      - printf '@@printf@@%s@@/printf@@\\n' ${{CF_COMMIT_MESSAGE}}", exactly},
		{"double", "bash_forms", "      - echo \"@@double@@${{CF_COMMIT_MESSAGE}}@@/double@@\"", exactly},
		{"single", "bash_forms", "      - echo '@@single@@${{CF_BRANCH}}@@/single@@'", exactly},
		{"tag", "bash_forms", "      - echo @@tag@@registry.example/app:${{CF_BRANCH}}@@/tag@@",
			func(v string) (string, bool) { return "registry.example/app:" + v, true }},
		{"assign", "sh_forms", "      - TAG=${{CF_BRANCH}}; printf '@@assign@@%s@@/assign@@\\n' \"$TAG\"", exactly},
		{"heredoc", "sh_forms", "      - |\n        cat <<EOF\n        @@heredoc@@${{CF_COMMIT_MESSAGE}}@@/heredoc@@\n        EOF", exactly},
		{"qheredoc", "sh_forms", "      - |\n        cat <<'EOF'\n        @@qheredoc@@${{CF_COMMIT_MESSAGE}}@@/qheredoc@@\n        EOF", exactly},
		{"subst", "sh_forms", "      - printf '@@subst@@%s@@/subst@@\\n' \"$(printf '%s' \"${{CF_COMMIT_MESSAGE}}\")\"", trim},
		{"backtick", "sh_forms", "      - printf '@@backtick@@%s@@/backtick@@\\n' \"`printf '%s' ${{CF_BRANCH}}`\"", trim},
		{"default", "sh_forms", "      - printf '@@default@@%s@@/default@@\\n' \"${NOPE:-${{CF_BRANCH}}}\"", exactly},
		{"comment", "sh_forms", "      - 'true # ${{CF_COMMIT_MESSAGE}}'\n      - printf '@@comment@@ok@@/comment@@\\n'",
			func(string) (string, bool) { return "ok", true }},
		{"test", "sh_forms", "      - if [ \"${{CF_BRANCH}}\" = main ]; then r=main; else r=other; fi; printf '@@test@@%s@@/test@@\\n' $r",
			func(v string) (string, bool) { return map[bool]string{true: "main", false: "other"}[v == "main"], true }},
		{"dbracket", "bash_forms", "      - '[[ ${{CF_BRANCH}} == main ]] && r=main || r=other; echo \"@@dbracket@@$r@@/dbracket@@\"'",
			func(v string) (string, bool) { return map[bool]string{true: "main", false: "other"}[v == "main"], true }},
		{"ansic", "bash_forms", "      - echo $'@@ansic@@\\t${{CF_BRANCH}}@@/ansic@@'", func(v string) (string, bool) { return "\t" + v, true }},
		{"words", "sh_forms", "      - for w in ${{CF_COMMIT_MESSAGE}}; do printf '@@words@@[%s]@@/words@@\\n' \"$w\"; done",
			func(v string) (string, bool) { return "[" + v + "]", true }},
		{"herestring", "bash_forms", "      - cat <<< @@herestring@@${{CF_BRANCH}}@@/herestring@@", exactly},
		{"environment", "", "environment: ['MSG=${{CF_COMMIT_MESSAGE}}']\n    commands:\n      - printf '@@environment@@%s@@/environment@@\\n' \"$MSG\"", exactly},
		{"entrypoint", "", "entry_point: [sh, -c, 'printf \"@@entrypoint@@%s@@/entrypoint@@\\n\" ${{CF_BRANCH}}']", exactly},
		{"cmd", "", "entry_point: [sh, -c]\n    cmd: ['printf \"@@cmd@@%s@@/cmd@@\\n\" \"${{CF_COMMIT_MESSAGE}}\"']", exactly},
		{"arith", "", "shell: bash\n    commands:\n      - echo \"@@arith@\"\"@$(( ${{CF_BRANCH}} ))@@/arith@@\"", arith},
		{"let", "", "shell: bash\n    commands:\n      - let n=${{CF_COMMIT_MESSAGE}}+0 || true; echo \"@@let@\"\"@$n@@/let@@\"", arith},
		{"when", "", "when:\n      condition:\n        all:\n          isMain: '\"${{CF_BRANCH}}\" == \"main\"'\n    commands:\n      - echo @@when@@ran@@/when@@",
			func(v string) (string, bool) {
				if v == "main" {
					return "ran", true
				}
				return "", false // skipped
			}},
		{"workdir", "", "working_directory: ${{CF_VOLUME_PATH}}/${{CF_BRANCH}}\n    commands:\n      - 'case \"$PWD/\" in \"$CF_VOLUME_PATH\"/*) printf \"@@workdir@@inside@@/workdir@@\\n\";; *) printf \"@@workdir@@outside@@/workdir@@\\n\";; esac'",
			func(v string) (string, bool) {
				for el := range strings.SplitSeq(v, "/") {
					if el == ".." {
						return "", false // refused: a value cannot climb out of the workspace
					}
				}
				return "inside", true
			}},
	}
}

// injPipeline is the attack pipeline: the forms as steps that do not stop the build — forms
// that need no fields of their own share a step of sh and one of bash — with $FORM naming the
// form, and a pipeline hook that uses the branch too.
func injPipeline(forms []injForm) string {
	var b strings.Builder
	b.WriteString("version: '1.0'\nsteps:\n")
	for _, shared := range []string{"sh_forms", "bash_forms"} {
		fmt.Fprintf(&b, "  %s:\n    fail_fast: false\n    shell: %s\n    commands:\n", shared, strings.TrimSuffix(shared, "_forms"))
		for _, f := range forms {
			if f.step == shared {
				fmt.Fprintf(&b, "      - FORM=%s\n%s\n", f.name, f.yaml)
			}
		}
	}
	for _, f := range forms {
		if f.step == "" {
			fmt.Fprintf(&b, "  %s:\n    fail_fast: false\n    %s\n", f.name, f.yaml)
			if !strings.Contains(f.yaml, "environment:") {
				fmt.Fprintf(&b, "    environment: [FORM=%s]\n", f.name)
			}
		}
	}
	b.WriteString("hooks:\n  on_finish:\n    - printf '@@hook@@%s@@/hook@@\\n' ${{CF_BRANCH}}\n")
	return b.String()
}

// startInjRunner runs an in-process runner with the local executor for the test.
func startInjRunner(t *testing.T, s *servertest.Server) {
	t.Helper()
	reg, err := s.Admin.RegisterRunner(context.Background(), client.RegisterRunnerRequest{Name: "attacked"})
	if err != nil {
		t.Fatal(err)
	}
	exec, err := local.New(local.Options{Root: t.TempDir(), KillGrace: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Options{Server: s.URL, Token: reg.Token, Name: "attacked", Executor: "local", Concurrency: 4,
		Transport: runner.TransportAuto}, exec, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.Run(ctx); err != nil {
			t.Errorf("runner: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// waitInjBuild waits for build id to finish and returns it with its stored log.
func waitInjBuild(t *testing.T, c *client.Client, id string) (client.Build, string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, err := c.GetBuild(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if b.Status == "success" || b.Status == "failed" || b.Status == "terminated" {
			log, err := c.BuildLog(ctx, id, 0)
			if err != nil {
				t.Fatal(err)
			}
			return b, string(log)
		}
		if time.Now().After(deadline) {
			t.Fatalf("build %s is still %s", id, b.Status)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// between returns what the log holds between @@name@@ and @@/name@@.
func between(log, name string) (string, bool) {
	_, rest, ok := strings.Cut(log, "@@"+name+"@@")
	if !ok {
		return "", false
	}
	v, _, ok := strings.Cut(rest, "@@/"+name+"@@")
	return v, ok
}

// checkInjBuild checks one finished build run with payload p (value v): every form printed v
// exactly, or failed before running when it must. It returns how many forms the payload got
// into (marker files in markDir).
func checkInjBuild(t *testing.T, forms []injForm, b client.Build, log, p, v, markDir string) int {
	t.Helper()
	for _, f := range forms {
		want, runs := f.want(v)
		st := stepNamed(b, f.name)
		if f.step != "" {
			st = stepNamed(b, f.step)
		}
		got, printed := between(log, f.name)
		switch {
		case runs && want == anyOutput:
		case runs && (st.Status != "success" || !printed || got != want):
			t.Errorf("payload %q, step %s (%s): printed %q (%v), want %q\n%s", p, f.name, st.Status, got, printed, want, log)
		case !runs && (st.Status == "success" || printed):
			t.Errorf("payload %q, step %s ran (%s, %q), want it refused or skipped", p, f.name, st.Status, got)
		}
	}
	if got, _ := between(log, "hook"); got != v {
		t.Errorf("payload %q, hook printed %q", p, got)
	}
	entries, _ := os.ReadDir(markDir)
	for _, e := range entries {
		t.Errorf("payload %q ran a command: %s", p, e.Name())
	}
	return len(entries)
}

func stepNamed(b client.Build, name string) client.Step {
	for _, s := range b.Steps {
		if s.Name == name {
			return s
		}
	}
	return client.Step{}
}

// Branch names and commit messages try to run commands on the runner through every way a
// pipeline writes ${{CF_BRANCH}} and ${{CF_COMMIT_MESSAGE}}: as manual runs and through a
// signed GitHub push webhook.
func TestShellInjectionFromGitValues(t *testing.T) {
	ctx := context.Background()
	s := servertest.StartWith(t, backend(), servertest.Config{})
	startInjRunner(t, s)
	if _, err := s.Admin.CreateProject(ctx, "inj"); err != nil {
		t.Fatal(err)
	}
	forms := injForms()
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "inj", Name: "ci", Spec: injPipeline(forms)}); err != nil {
		t.Fatal(err)
	}
	type run struct {
		id, payload, value, marks string
	}
	var runs []run
	for i, p := range injPayloads {
		marks := t.TempDir()
		v := strings.ReplaceAll(p, "MARK", filepath.Join(marks, fmt.Sprintf("pwned-%d-$FORM", i)))
		b, err := s.Admin.RunPipeline(ctx, "inj/ci", client.RunRequest{Branch: v, Message: v})
		if err != nil {
			t.Fatalf("payload %q: %v", p, err)
		}
		runs = append(runs, run{b.ID, p, v, marks})
	}

	// The same through a GitHub push (a branch name cannot hold spaces, so $IFS stands in).
	trg, err := s.Admin.CreateTrigger(ctx, "inj/ci", client.TriggerRequest{Type: "git", Provider: "github",
		Git: &client.GitTrigger{Repo: "acme/app", Events: []string{"push.heads"}, BranchRegex: ".*"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range []string{"main$(touch${IFS}MARK)", "x`touch${IFS}MARK`", "a;touch${IFS}MARK", "\"$(touch${IFS}MARK)\""} {
		marks := t.TempDir()
		v := strings.ReplaceAll(p, "MARK", filepath.Join(marks, fmt.Sprintf("hook-%d-$FORM", i)))
		body := injPush(v, v)
		mac := hmac.New(sha256.New, []byte(trg.Secret))
		mac.Write(body)
		req, _ := http.NewRequest("POST", trg.WebhookURL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("inj-%d", i))
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ Builds []string }
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != 201 || len(out.Builds) != 1 {
			t.Fatalf("push %q: %d %v", v, resp.StatusCode, out)
		}
		runs = append(runs, run{out.Builds[0], p, v, marks})
	}

	tries, got := 0, 0
	var worst time.Duration
	for _, r := range runs {
		b, log := waitInjBuild(t, s.Admin, r.id)
		if b.StartedAt != nil && b.FinishedAt != nil {
			worst = max(worst, b.FinishedAt.Sub(*b.StartedAt))
		}
		tries += len(forms) + 1
		got += checkInjBuild(t, forms, b, log, r.payload, r.value, r.marks)
	}
	attack(t, "shell injection: git values in step commands", tries, got, worst)
}

// injPush is a GitHub push event for branch with message.
func injPush(branch, message string) []byte {
	sha := strings.Repeat("ab", 20)
	b, _ := json.Marshal(map[string]any{
		"ref": "refs/heads/" + branch, "before": strings.Repeat("0", 40), "after": sha, "created": false, "deleted": false,
		"repository": map[string]any{"full_name": "acme/app", "name": "app", "owner": map[string]any{"login": "acme", "name": "acme"},
			"clone_url": "https://github.example/acme/app.git", "html_url": "https://github.example/acme/app", "default_branch": "main"},
		"pusher": map[string]any{"name": "dev", "email": "dev@acme.test"}, "sender": map[string]any{"login": "dev"},
		"head_commit": map[string]any{"id": sha, "message": message, "url": "https://github.example/acme/app/commit/" + sha,
			"author": map[string]any{"name": "Dev", "email": "dev@acme.test"}, "added": []string{}, "modified": []string{}, "removed": []string{}},
		"commits": []any{},
	})
	return b
}
