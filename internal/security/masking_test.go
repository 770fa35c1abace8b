package security_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
)

// maskSecret has a character of every class an encoder treats differently: space, '/', '&',
// '!', quotes, parentheses, '*', '~', a backslash and non-ASCII.
const maskSecret = `S3cr3t/p@ss w0rd&x!'()*~é"\;`

// maskPrints are the ways a step prints a secret it holds in $TOKEN, by the real tools, each
// between @@name@@ and @@/name@@. need names a program the line needs.
var maskPrints = []struct{ name, need, cmd string }{
	{"plain", "", `printf '@@plain@@%s@@/plain@@\n' "$TOKEN"`},
	{"base64", "base64", `printf '@@base64@@%s@@/base64@@\n' "$(printf '%s' "$TOKEN" | base64 -w0)"`},
	{"base64nl", "base64", `printf '@@base64nl@@%s@@/base64nl@@\n' "$(echo "$TOKEN" | base64 -w0)"`},
	{"base64url", "base64", `printf '@@base64url@@%s@@/base64url@@\n' "$(printf '%s' "$TOKEN" | base64 -w0 | tr '+/' '-_' | tr -d '=')"`},
	{"basic", "base64", `printf '@@basic@@Authorization: Basic %s@@/basic@@\n' "$(printf 'ci:%s' "$TOKEN" | base64 -w0)"`},
	{"hex", "xxd", `printf '@@hex@@%s@@/hex@@\n' "$(printf '%s' "$TOKEN" | xxd -p -c 256)"`},
	{"HEX", "xxd", `printf '@@HEX@@%s@@/HEX@@\n' "$(printf '%s' "$TOKEN" | xxd -p -u -c 256)"`},
	{"quote", "python3", `python3 -c 'import os, urllib.parse as u; print("@@quote@@" + u.quote(os.environ["TOKEN"], safe="") + "@@/quote@@")'`},
	{"quoteslash", "python3", `python3 -c 'import os, urllib.parse as u; print("@@quoteslash@@" + u.quote(os.environ["TOKEN"]) + "@@/quoteslash@@")'`},
	{"quoteplus", "python3", `python3 -c 'import os, urllib.parse as u; print("@@quoteplus@@" + u.quote_plus(os.environ["TOKEN"], safe="") + "@@/quoteplus@@")'`},
	{"lowerpct", "python3", `python3 -c 'import os, re, urllib.parse as u; print("@@lowerpct@@" + re.sub("%..", lambda m: m.group(0).lower(), u.quote(os.environ["TOKEN"], safe="")) + "@@/lowerpct@@")'`},
	{"pyjson", "python3", `python3 -c 'import os, json; print("@@pyjson@@" + json.dumps({"token": os.environ["TOKEN"]}) + "@@/pyjson@@")'`},
	{"encodeURIComponent", "node", `node -e 'console.log("@@encodeURIComponent@@" + encodeURIComponent(process.env.TOKEN) + "@@/encodeURIComponent@@")'`},
	{"encodeURI", "node", `node -e 'console.log("@@encodeURI@@https://ci.example/?t=" + encodeURI(process.env.TOKEN) + "@@/encodeURI@@")'`},
	{"jsjson", "node", `node -e 'console.log("@@jsjson@@" + JSON.stringify({token: process.env.TOKEN}) + "@@/jsjson@@")'`},
}

// maskForms are the forms of s the stored log must not hold, computed here from the
// encoders' definitions.
func maskForms(s string) map[string]string {
	pct := func(keep string, plus, lower bool) string {
		var b strings.Builder
		for _, c := range []byte(s) {
			switch {
			case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(keep, c) >= 0:
				b.WriteByte(c)
			case c == ' ' && plus:
				b.WriteByte('+')
			case lower:
				fmt.Fprintf(&b, "%%%02x", c)
			default:
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
		return b.String()
	}
	js, _ := json.Marshal(s)
	jsJSON := strings.ReplaceAll(string(js[1:len(js)-1]), `\u0026`, "&") // JSON.stringify escapes no HTML
	forms := map[string]string{
		"plain": s, "base64": base64.StdEncoding.EncodeToString([]byte(s)),
		"base64url": base64.RawURLEncoding.EncodeToString([]byte(s))[:len(s)*8/6],
		"hex":       hex.EncodeToString([]byte(s)), "HEX": strings.ToUpper(hex.EncodeToString([]byte(s))),
		"quote": pct("-_.~", false, false), "quoteslash": pct("-_.~/", false, false), "quoteplus": url.QueryEscape(s),
		"lowerpct": pct("-_.~", false, true), "encodeURIComponent": pct("-_.!~*'()", false, false),
		"encodeURI": pct("-_.!~*'();,/?:@&=+$#", false, false), "json": string(js[1 : len(js)-1]),
		"jsjson": jsJSON, "pyjson": strings.ReplaceAll(jsJSON, "é", `\u00e9`), "path": url.PathEscape(s),
	}
	// Pieces any of them could leak by: a form's middle half.
	out := map[string]string{}
	for name, f := range forms {
		out[name] = f
		out[name+" (middle)"] = f[len(f)/4 : len(f)*3/4]
	}
	return out
}

// A step holding a secret prints it in every encoding common tools produce; the stored build
// log must hold none of them.
func TestMaskedSecretEncodings(t *testing.T) {
	ctx := context.Background()
	s := servertest.StartWith(t, backend(), servertest.Config{})
	startInjRunner(t, s)
	if _, err := s.Admin.CreateContext(ctx, client.ContextRequest{Name: "deploy", Type: "secret", Values: map[string]string{"TOKEN": maskSecret}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.CreateProject(ctx, "mask"); err != nil {
		t.Fatal(err)
	}
	var cmds, printed []string
	for _, p := range maskPrints {
		if p.need != "" {
			if _, err := exec.LookPath(p.need); err != nil {
				t.Logf("%s: %s is not installed here", p.name, p.need)
				continue
			}
		}
		cmds = append(cmds, "      - "+yamlQuote(p.cmd))
		printed = append(printed, p.name)
	}
	spec := "version: '1.0'\nsteps:\n  leak:\n    commands:\n" + strings.Join(cmds, "\n") + "\n"
	if _, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "mask", Name: "leak", Spec: spec,
		Config: client.PipelineConfig{Contexts: []string{"deploy"}}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	b, err := s.Admin.RunPipeline(ctx, "mask/leak", client.RunRequest{Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	final, log := waitInjBuild(t, s.Admin, b.ID)
	took := time.Since(start)
	if final.Status != "success" {
		t.Fatalf("build %s: %s\n%s", final.Status, final.Reason, log)
	}
	leaked := 0
	for _, name := range printed {
		got, ok := between(log, name)
		if !ok || !strings.Contains(got, "****") {
			t.Errorf("%s: printed %q (%v), want it masked", name, got, ok)
			leaked++
		}
	}
	forms := maskForms(maskSecret)
	for name, f := range forms {
		if strings.Contains(log, f) {
			t.Errorf("the log holds the secret's %s form %q", name, f)
			leaked++
		}
	}
	attack(t, "masking: a secret printed in common encodings", len(printed)+len(forms), leaked, took)
}

// yamlQuote writes s as a YAML double-quoted scalar.
func yamlQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
