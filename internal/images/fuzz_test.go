package images

import (
	"errors"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/store"
)

// FuzzParseKeys: whatever a commit message or branch name holds, the keys found are each well
// formed (ParseKey accepts them and gives them back unchanged), appear in the text, are
// distinct and at most MaxKeys; ParseKey refuses only with ErrInvalid naming its field, and what
// it accepts prints back to itself.
func FuzzParseKeys(f *testing.F) {
	for _, s := range []string{"PROJ-123: fix login (#45, acme/web#7)", "feature/ABC-9-login", "123-fix-login", "fix/42-x",
		"page#12 &#123; x:#5 https://h/o/r#3 a@b/c#4", "SHA-256 UTF-8 xPROJ-1 PROJ-1x PROJ-0 P-1 PR-01", "group/sub/proj#10",
		"#0 #01 #12345678901 ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGH-1", "", "#", "-1", "A-", "a/b#1#2", "./x#1", "ö#1 ÄB-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, keys := range [][]string{ParseKeys(text), BranchKeys(text)} {
			if len(keys) > MaxKeys {
				t.Fatalf("%d keys", len(keys))
			}
			seen := map[string]bool{}
			for _, k := range keys {
				if seen[k] {
					t.Fatalf("key %q twice", k)
				}
				seen[k] = true
				parsed, err := ParseKey("issue", k)
				if err != nil {
					t.Fatalf("found %q, which ParseKey refuses: %v", k, err)
				}
				if parsed.String() != k {
					t.Fatalf("found %q, canonical %q", k, parsed.String())
				}
				if !strings.Contains(text, strings.TrimPrefix(k, "#")) {
					t.Fatalf("found %q, not in the text", k)
				}
			}
		}
		k, err := ParseKey("issues[0]", text)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "issues[0]") {
				t.Fatalf("refused with %v", err)
			}
			return
		}
		if k.String() != text {
			t.Fatalf("accepted %q as %q", text, k.String())
		}
	})
}

// FuzzParseRef: an image reference and a digest are accepted or refused with ErrInvalid naming
// the field; an accepted reference's parts are valid and put back together give the text.
func FuzzParseRef(f *testing.F) {
	d := "sha256:" + strings.Repeat("ab", 32)
	for _, s := range []string{"ghcr.io/acme/web:1.2", "localhost:5000/a/b@" + d, "nginx", "a/b:c@" + d, "Upper/case", "a//b", "a:b:c",
		"host:99/x", "x@sha256:short", "x@" + strings.ToUpper(d), ":tag", "a/b:-x", "a__b/c--d.e", "a___b", "[::1]:5000/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef("image", s)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "image") {
				t.Fatalf("refused with %v", err)
			}
			return
		}
		back := r.Name()
		if r.Tag != "" {
			back += ":" + r.Tag
		}
		if r.Digest != "" {
			if ValidDigest("digest", r.Digest) != nil {
				t.Fatalf("accepted digest %q", r.Digest)
			}
			back += "@" + r.Digest
		}
		if back != s {
			t.Fatalf("%q parsed to %+v, which gives %q", s, r, back)
		}
		if !validRepository(r.Repository) {
			t.Fatalf("accepted repository %q", r.Repository)
		}
	})
}

// FuzzDecodeIssue: whatever a tracker answers, decoding never panics, and what it accepts has a
// title of at most maxTitle bytes, a kind, and a URL that is empty or http(s).
func FuzzDecodeIssue(f *testing.F) {
	f.Add("jira", `{"key":"PROJ-1","fields":{"summary":"Login fails","status":{"name":"Done"}}}`)
	f.Add("github", `{"title":"Fix it","state":"closed","html_url":"https://github.com/a/b/pull/2","pull_request":{}}`)
	f.Add("github", `{"title":"Fix it","html_url":"javascript:alert(1)","pull_request":null}`)
	f.Add("gitlab", `{"title":"T","state":"opened","web_url":"https://gitlab.com/a/b/-/issues/3"}`)
	f.Add("gitlab", `[]`)
	f.Add("jira", `{"fields":{"summary":""}}`)
	f.Fuzz(func(t *testing.T, kind, body string) {
		tr := store.IssueTracker{Name: "t", Kind: kind, URL: "https://tracker.example"}
		is, ok := decodeIssue(tr, Key{Kind: KeyJira, Project: "PROJ", Number: 1}, []byte(body))
		if !ok {
			return
		}
		if is.Title == "" || len(is.Title) > maxTitle || is.Kind == "" {
			t.Fatalf("accepted %+v", is)
		}
		if is.URL != "" && !strings.HasPrefix(is.URL, "https://") && !strings.HasPrefix(is.URL, "http://") {
			t.Fatalf("accepted URL %q", is.URL)
		}
	})
}
