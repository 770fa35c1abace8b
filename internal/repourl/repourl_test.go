package repourl_test

import (
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/repourl"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:s3cret@github.com/org/repo.git": "https://user:***@github.com/org/repo.git",
		"https://github.com/org/repo":                 "https://github.com/org/repo",
		"git@github.com:org/repo.git":                 "git@github.com:org/repo.git",
	} {
		if got := repourl.Redact(in); got != want || strings.Contains(got, "s3cret") {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	msg := `Get "https://bot:tok3n@git.example.com/x.git/info/refs": dial tcp: refused`
	if got := repourl.RedactText(msg); strings.Contains(got, "tok3n") || !strings.Contains(got, "bot:***@") {
		t.Errorf("RedactText = %q", got)
	}
}

func TestParse(t *testing.T) {
	u, err := repourl.Parse("git@gitlab.example.com:group/sub/repo.git")
	if err != nil || u.Scheme != "ssh" || u.User.Username() != "git" || u.Host != "gitlab.example.com" || u.Path != "/group/sub/repo.git" {
		t.Errorf("Parse(scp) = %v, %v", u, err)
	}
}

// A file URL names a path on this machine, with no host: file://localhost/… once slipped
// past a check that refused only other hosts.
func TestParseRefusesFileURLsWithAHost(t *testing.T) {
	for _, raw := range []string{"file://localhost/etc", "file://LOCALHOST/data/x.git", "file://example.com/x", "file://127.0.0.1/x"} {
		if u, err := repourl.Parse(raw); err == nil {
			t.Errorf("Parse(%q) = %v", raw, u)
		}
	}
	for raw, want := range map[string]string{"file:///srv/git/x.git": "/srv/git/x.git", "/srv/git/../git/x": "/srv/git/x", "file:////srv/x": "/srv/x"} {
		if u, err := repourl.Parse(raw); err != nil || u.Path != want || u.Host != "" {
			t.Errorf("Parse(%q) = %v, %v; want path %s", raw, u, err, want)
		}
	}
}
