package repourl_test

import (
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/repourl"
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
