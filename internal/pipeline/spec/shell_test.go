package spec

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

func TestShellVarName(t *testing.T) {
	tests := map[string]string{
		"CF_BRANCH":             "FRESHET_VAR_CF_BRANCH",
		"1abc":                  "FRESHET_VAR_1abc",
		"steps.build.imageId":   "FRESHET_VAR_steps_build_imageId_",
		"my-clone":              "FRESHET_VAR_my_clone_",
		"steps.build_imageId":   "FRESHET_VAR_steps_build_imageId_",
		"steps_build.imageId.x": "FRESHET_VAR_steps_build_imageId_x_",
	}
	seen := map[string]string{}
	for name, prefix := range tests {
		got := ShellVarName(name)
		if !strings.HasPrefix(got, prefix) || !shellIdent.MatchString(got) {
			t.Errorf("ShellVarName(%q) = %q, want a shell name starting %q", name, got, prefix)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("%q and %q share %s", name, other, got)
		}
		seen[got] = name
	}
}

// TestInterpolateShellText checks what each place a reference stands in is rewritten to.
func TestInterpolateShellText(t *testing.T) {
	vars := map[string]string{"X": "v", "N": "42", "steps.a.b": "s", "ID": "name_1"}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	const v = "${FRESHET_VAR_X}"
	tests := []struct{ in, want string }{
		{"echo ${{X}}", `echo "` + v + `"`},
		{"echo repo:${{X}}-x", `echo repo:"` + v + `"-x`},
		{`echo "a ${{X}} b"`, `echo "a ` + v + ` b"`},
		{`echo 'a ${{X}} b'`, `echo 'a '"` + v + `"' b'`},
		{`echo $'a\t${{X}}\n'`, `echo $'a\t'"` + v + `"$'\n'`},
		{"echo ${{UNKNOWN}} ${{ X }}", "echo ${{UNKNOWN}} ${{ X }}"},
		{"echo ${{steps.a.b}}", `echo "${` + ShellVarName("steps.a.b") + `}"`},
		{"echo $(echo ${{X}}) `echo ${{X}}`", `echo $(echo "` + v + `") ` + "`echo \"" + v + "\"`"},
		{`echo "$(echo "${{X}}")"`, `echo "$(echo "` + v + `")"`},
		{`echo ${A:-${{X}}} "${A:-${{X}}}" "${A#${{X}}}"`, `echo ${A:-"` + v + `"} "${A:-"` + v + `"}" "${A#"` + v + `"}"`},
		{`echo "${A:-it's ${{X}}}"`, `echo "${A:-it's "` + v + `"}"`},
		{"echo hi # ${{X}} isn't", "echo hi # " + v + " isn't"},
		{"echo a#${{X}}", `echo a#"` + v + `"`},
		{"echo $(( ${{N}} + 1 )) $[${{N}}]", "echo $(( ${FRESHET_VAR_N} + 1 )) $[${FRESHET_VAR_N}]"},
		{"(( n = ${{N}} * 2 ))", "(( n = ${FRESHET_VAR_N} * 2 ))"},
		{"cat <<EOF\na ${{X}} \"q\" 'q'\nEOF\necho ${{X}}", "cat <<EOF\na " + v + " \"q\" 'q'\nEOF\necho \"" + v + `"`},
		{"cat <<'EOF'\n$HOME ${{X}} \\ `x` ${{UNKNOWN}}\nEOF", "cat <<EOF\n\\$HOME " + v + " \\\\ \\`x\\` \\${{UNKNOWN}}\nEOF"},
		{"cat <<'EOF'\n$HOME\nEOF", "cat <<'EOF'\n$HOME\nEOF"},
		{"cat <<-\"END\"\n\t${{X}}\n\tEND", "cat <<-END\n\t" + v + "\n\tEND"},
		{"cat <<A <<'B'\n${{X}}\nA\n$${{X}}\nB", "cat <<A <<B\n" + v + "\nA\n\\$" + v + "\nB"},
		{"cat <<<${{X}}", `cat <<<"` + v + `"`},
		{`[[ ${{X}} == main && ${{N}} -gt 1 ]]`, `[[ "` + v + `" == main && "${FRESHET_VAR_N}" -gt 1 ]]`},
		{"a[${{N}}]=${{X}}", `a[${FRESHET_VAR_N}]="` + v + `"`},
		{"declare -A m; m[${{X}}]=1; echo ${m[${{X}}]}", `declare -A m; m["` + v + `"]=1; echo ${m["` + v + `"]}`},
		{"echo ${s:${{N}}:1}", "echo ${s:${FRESHET_VAR_N}:1}"},
		{"read ${{ID}} <f", `read "${FRESHET_VAR_ID}" <f`},
		{"x=\"${{X}}\" y='${{X}}'", `x="` + v + `" y=''"` + v + `"''`},
	}
	for _, tt := range tests {
		got, env, err := InterpolateShell("commands", []string{tt.in}, lookup)
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if got[0] != tt.want {
			t.Errorf("InterpolateShell(%q)\n got %s\nwant %s", tt.in, got[0], tt.want)
		}
		for _, e := range env {
			if !strings.HasPrefix(e.Name, ShellVarPrefix) {
				t.Errorf("%q: env %s", tt.in, e.Name)
			}
		}
	}
}

// TestInterpolateShellSpansCommands: a quote or here-document may span list items, and each
// item comes back rewritten on its own.
func TestInterpolateShellSpansCommands(t *testing.T) {
	lookup := func(n string) (string, bool) { return "v", n == "X" }
	got, env, err := InterpolateShell("commands", []string{"cat <<'EOF'", "$a ${{X}}", "EOF", "echo ${{X}} ${{X}}"}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cat <<EOF", `\$a ${FRESHET_VAR_X}`, "EOF", `echo "${FRESHET_VAR_X}" "${FRESHET_VAR_X}"`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
	if len(env) != 1 || env[0] != (ShellVar{"FRESHET_VAR_X", "v"}) {
		t.Errorf("env = %v", env)
	}
	same, env, err := InterpolateShell("commands", []string{"echo plain"}, lookup)
	if err != nil || same[0] != "echo plain" || env != nil {
		t.Errorf("no references: %q %v %v", same, env, err)
	}
}

// TestInterpolateShellRefuses: a value bash would evaluate as arithmetic or read as a name must
// be a number or a name; anything else is refused, naming the command.
func TestInterpolateShellRefuses(t *testing.T) {
	vars := map[string]string{"N": "3", "EXPR": "2 * (3 + 1)", "BAD": "a[$(touch /tmp/x)]", "NAME": "CF_COMMIT_MESSAGE", "EMPTY": ""}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	ok := []string{
		"echo $(( ${{N}} + ${{EXPR}} ))", "(( ${{N}} > 1 ))", "let x=${{N}}", "[[ ${{N}} -ge 1 ]]", "echo ${a[${{N}}]}",
		"declare -i n=${{N}}", "echo $((${{EMPTY}}0))", "[[ ${{BAD}} == x ]]", "echo ${{BAD}}", "read -p ${{BAD}} v",
		"read ${{NAME}}", "printf -v ${{NAME}} %s x", "[[ -v ${{NAME}} ]]", "cat <<EOF\n$(( 1 ))${{BAD}}\nEOF",
	}
	for _, c := range ok {
		if _, _, err := InterpolateShell("commands", []string{c}, lookup); err != nil {
			t.Errorf("%q refused: %v", c, err)
		}
	}
	bad := []string{
		"echo $(( ${{BAD}} + 1 ))", "echo $(( ${{NAME}} + 1 ))", "(( ${{BAD}} ))", "for (( i=0; i<${{BAD}}; i++ )); do :; done",
		"let x=${{BAD}}", `let "x = ${{BAD}}"`, "[[ ${{BAD}} -eq 1 ]]", "[[ 1 -lt \"${{BAD}}\" ]]", "echo ${a[${{BAD}}]}",
		"a[${{BAD}}]=1", "echo ${s:${{BAD}}}", "echo $[ ${{BAD}} ]", "declare -i n=${{BAD}}", "local -i n=${{NAME}}",
		"read ${{BAD}}", "read -r x ${{BAD}}", "printf -v ${{BAD}} %s x", "[[ -v ${{BAD}} ]]", "test -v ${{BAD}}",
		"declare -n r=${{BAD}}", "echo $(( $(echo ${{BAD}}) ))", "cat <<${{N}}\nx\n3",
	}
	for _, c := range bad {
		_, _, err := InterpolateShell("commands", []string{"echo first", c}, lookup)
		if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "commands[1]") {
			t.Errorf("%q: err = %v, want an invalid commands[1]", c, err)
		}
		if err != nil && strings.Contains(err.Error(), vars["BAD"]) {
			t.Errorf("%q: the error shows the value: %v", c, err)
		}
	}
}

func TestShellScriptArg(t *testing.T) {
	tests := []struct {
		argv []string
		want int
	}{
		{[]string{"sh", "-c", "echo"}, 2},
		{[]string{"/bin/bash", "-euo", "pipefail", "-c", "echo", "arg0"}, 4},
		{[]string{"bash", "-ec", "echo"}, 2},
		{[]string{"bash", "--norc", "-c", "echo"}, 3},
		{[]string{"busybox", "sh", "-c", "echo"}, 3},
		{[]string{"sh", "script.sh"}, -1},
		{[]string{"sh", "-x", "script.sh"}, -1},
		{[]string{"python3", "-c", "print(1)"}, -1},
		{[]string{"sh"}, -1},
		{[]string{"sh", "-c"}, -1},
	}
	for _, tt := range tests {
		if got := ShellScriptArg(tt.argv); got != tt.want {
			t.Errorf("ShellScriptArg(%q) = %d, want %d", tt.argv, got, tt.want)
		}
	}
}

// shellPayloads are values from whoever can push: each tries to break out of some quoting
// context and create the file named by MARK.
var shellPayloads = []string{
	"main", "", " ", "feature/login", "main$(touch${IFS}MARK)", "$(touch MARK)", "`touch MARK`",
	`x"; touch MARK; echo "`, `x'; touch MARK; echo '`, `x'"'"'; touch MARK #`, "; touch MARK", "&& touch MARK",
	"|| touch MARK", "| touch MARK", "x\ntouch MARK", "x\r\ntouch MARK", "\\\"; touch MARK #", "EOF\ntouch MARK\nEOF",
	"END\ntouch MARK", "*", "?", "[a]", "~", "~root", "$HOME", "${IFS}", "$IFS", "a[$(touch MARK)]", "$((1+1))",
	"-n", "-e", `\n`, `\`, `a\`, `'"`, `$'\x41'`, "日本語 ünï", "}", `"}"`, "${{X}}", "%s%n", "!!", ">MARK", "<MARK",
	"#", "a #b", " lead and trail ", "tab\there", ")", "((", "$[1]", "`", "'", `"`, "$", "{a,b}", "a b  c", "$(",
	"'$(touch MARK)'", `"$(touch MARK)"`, "x' $(touch MARK) '", "\\'", "}; touch MARK; {", "))) ; touch MARK ; (((",
	"$'\\n'; touch MARK", "-- $(touch MARK)", "--help",
}

// shellForm is a command that uses ${{X}} and what it must print for value v.
type shellForm struct {
	cmd  string
	want func(v string) string
	bash bool // bash only
}

func trimNL(v string) string { return strings.TrimRight(v, "\n") }

var shellForms = []shellForm{
	{"printf '%s\\n' ${{X}}", func(v string) string { return v + "\n" }, false},
	{"printf '%s\\n' \"${{X}}\"", func(v string) string { return v + "\n" }, false},
	{"printf '%s\\n' 'quoted ${{X}} here'", func(v string) string { return "quoted " + v + " here\n" }, false},
	{"printf '%s\\n' repo:${{X}}", func(v string) string { return "repo:" + v + "\n" }, false},
	{"printf '%s\\n' \"v=${{X}}\"'/'${{X}}", func(v string) string { return "v=" + v + "/" + v + "\n" }, false},
	{"V=${{X}}; printf '%s\\n' \"$V\"", func(v string) string { return v + "\n" }, false},
	{"export V=${{X}} && printf '%s\\n' \"$V\"", func(v string) string { return v + "\n" }, false},
	{"printf '%s\\n' \"${UNSET:-${{X}}}\" ${UNSET:-${{X}}}", func(v string) string { return v + "\n" + v + "\n" }, false},
	{"printf '%s\\n' \"$(printf '%s' \"${{X}}\")\"", func(v string) string { return trimNL(v) + "\n" }, false},
	{"printf '%s\\n' \"`printf '%s' ${{X}}`\"", func(v string) string { return trimNL(v) + "\n" }, false},
	{"cat <<EOF\n<${{X}}>\nEOF", func(v string) string { return "<" + v + ">\n" }, false},
	{"cat <<'EOF'\n$HOME \\ <${{X}}>\nEOF", func(v string) string { return "$HOME \\ <" + v + ">\n" }, false},
	{"cat <<-EOF\n\t<${{X}}>\n\tEOF", func(v string) string { return "<" + v + ">\n" }, false},
	{"printf 'done\\n' # ${{X}} in a comment", func(string) string { return "done\n" }, false},
	{"case ${{X}} in \"${{X}}\") printf 'same\\n';; *) printf 'other\\n';; esac", func(string) string { return "same\n" }, false},
	{"if [ \"${{X}}\" = ${{X}} ]; then printf 'equal\\n'; fi", func(string) string { return "equal\n" }, false},
	{"for w in ${{X}}; do printf '[%s]\\n' \"$w\"; done", func(v string) string { return "[" + v + "]\n" }, false},
	{"printf '%s' ${{X}} > out.txt; cat out.txt; printf '\\n'", func(v string) string { return v + "\n" }, false},
	{"printf '%s\\n' ${#UNSET} ${{X}}x", func(v string) string { return "0\n" + v + "x\n" }, false},
	{"printf '%s\\n' $'tab\\t${{X}}'", func(v string) string { return "tab\t" + v + "\n" }, true},
	{"[[ ${{X}} == \"${{X}}\" ]] && printf 'same\\n'", func(string) string { return "same\n" }, true},
	{"cat <<< ${{X}}", func(v string) string { return v + "\n" }, true},
	{"a=(${{X}} b); printf '%s\\n' \"${#a[@]}\"", func(string) string { return "2\n" }, true},
	{"declare -A m; m[k${{X}}]=1; printf '%s\\n' \"${!m[@]}\"", func(v string) string { return "k" + v + "\n" }, true},
}

// TestInterpolateShellRuns runs every form with every payload in sh and bash: the form must
// print the value exactly, and no payload may create its marker file.
func TestInterpolateShellRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs shells")
	}
	for _, shell := range []string{"sh", "bash"} {
		bin, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("%s: %v", shell, err)
			continue
		}
		for i, p := range shellPayloads {
			dir := t.TempDir()
			mark := filepath.Join(dir, "pwned")
			value := strings.ReplaceAll(p, "MARK", mark)
			lookup := func(n string) (string, bool) { return value, n == "X" }
			var cmds []string
			var want strings.Builder
			for j, f := range shellForms {
				if f.bash && shell != "bash" {
					continue
				}
				cmds = append(cmds, fmt.Sprintf("printf '<%d>\\n'", j), f.cmd)
				fmt.Fprintf(&want, "<%d>\n%s", j, f.want(value))
			}
			got, env, err := InterpolateShell("commands", cmds, lookup)
			if err != nil {
				t.Fatalf("payload %d: %v", i, err)
			}
			if strings.Contains(strings.Join(got, "\n"), value) && strings.Contains(value, "MARK") {
				t.Errorf("payload %d is part of the script", i)
			}
			cmd := exec.Command(bin, "-c", strings.Join(got, "\n"))
			cmd.Dir = dir
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent"}
			for _, e := range env {
				cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if _, serr := os.Stat(mark); serr == nil {
				t.Errorf("%s: payload %q ran a command", shell, p)
			}
			if err != nil || string(out) != want.String() {
				t.Errorf("%s: payload %q: %v %s\n got %q\nwant %q", shell, p, err, stderr.String(), out, want.String())
			}
		}
	}
}

// FuzzInterpolateShell checks that no script and value make the rewriting panic, that the
// value never becomes part of the script, and that a script without references is unchanged.
func FuzzInterpolateShell(f *testing.F) {
	for _, form := range shellForms {
		f.Add(form.cmd, "main$(touch x)")
	}
	for _, s := range []string{"echo $(( ${{X}} ))", "cat <<'E'\n${{X}}\nE", "echo \"${A:-'${{X}}'}\"", "echo ${a[${{X}}", "\\", "$", "${", "$((", "<<", "<<'", "cat <<E\n$(${{X}}"} {
		f.Add(s, "1")
	}
	f.Fuzz(func(t *testing.T, script, value string) {
		const marker = "\x01VALUE\x02"
		v := marker + value
		lookup := func(n string) (string, bool) { return v, n == "X" }
		got, env, err := InterpolateShell("commands", strings.Split(script, "\n"), lookup)
		if err != nil {
			return
		}
		out := strings.Join(got, "\n")
		if strings.Contains(out, marker) && !strings.Contains(script, marker) {
			t.Fatalf("the value is part of the script:\n%s", out)
		}
		if !strings.Contains(script, "${{") && out != script {
			t.Fatalf("a script without references changed:\n%q\n%q", script, out)
		}
		for _, e := range env {
			if e.Value != v {
				t.Fatalf("env %s = %q", e.Name, e.Value)
			}
		}
	})
}

// TestConditionValuesAreData: a when condition reads ${{NAME}} as a value wherever it stands,
// so no branch name can change what the expression compares.
func TestConditionValuesAreData(t *testing.T) {
	conds := []struct {
		expr string
		want func(branch string) bool
	}{
		{`"${{CF_BRANCH}}" == "main"`, func(b string) bool { return b == "main" }},
		{`'${{CF_BRANCH}}' == 'main'`, func(b string) bool { return b == "main" }},
		{"`${{CF_BRANCH}}` == 'main'", func(b string) bool { return b == "main" }},
		{`'refs/${{CF_BRANCH}}' != 'refs/main'`, func(b string) bool { return b != "main" }},
		{`includes("${{CF_BRANCH}}", "release") == false`, func(b string) bool { return !strings.Contains(b, "release") }},
		{`match('${{CF_BRANCH}}', '^main$', false)`, func(b string) bool { return b == "main" }},
		{`${{CF_BRANCH}} == 'main'`, func(b string) bool { return b == "main" }},
		{`length("${{CF_BRANCH}}") == length(Variable('CF_BRANCH'))`, func(string) bool { return true }},
	}
	branches := append([]string{
		`main" || true || "`, `main' || true || '`, "main` || true || `", `main") || true || ("`, `" == "" || "`,
		`\" || true || \"`, `main\`, `x" + "main`, `"; steps.x.result == "success`, "release' == 'release",
	}, shellPayloads...)
	for _, c := range conds {
		w := whenOf(t, "condition:\n  all:\n    c: "+strconvQuote(c.expr), "")
		for _, b := range branches {
			run, _, err := w.Evaluate(EvalContext{Variables: map[string]string{"CF_BRANCH": b}})
			if err != nil {
				t.Errorf("%s with branch %q: %v", c.expr, b, err)
				continue
			}
			if run != c.want(b) {
				t.Errorf("%s with branch %q: run = %v, want %v", c.expr, b, run, c.want(b))
			}
		}
	}
}

// strconvQuote writes s as a YAML double-quoted scalar.
func strconvQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func TestInterpolateShellNesting(t *testing.T) {
	lookup := func(n string) (string, bool) { return "v", n == "X" }
	deep := strings.Repeat("$(", 300) + "${{X}}" + strings.Repeat(")", 300)
	if _, _, err := InterpolateShell("commands", []string{deep}, lookup); err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Errorf("300 levels: %v", err)
	}
	ok := "echo " + strings.Repeat("$(", 50) + "${{X}}" + strings.Repeat(")", 50)
	if _, _, err := InterpolateShell("commands", []string{ok}, lookup); err != nil {
		t.Errorf("50 levels: %v", err)
	}
}
