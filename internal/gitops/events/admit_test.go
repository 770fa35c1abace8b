package events

import (
	"net/http"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/webhook"
)

// TestAdmit: a git source's events, repositories, organizations and projects.
func TestAdmit(t *testing.T) {
	gh := &route{provider: webhook.GitHub, events: lowerSet([]string{"push"}), repos: lowerSet([]string{"Acme/App"}), orgs: lowerSet([]string{"tools"})}
	orgOnly := &route{provider: webhook.GitHub, orgs: lowerSet([]string{"tools"})}
	gl := &route{provider: webhook.GitLab, events: lowerSet([]string{gitLabEvents["PushEvents"]}), repos: lowerSet([]string{"42"})}
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	for _, c := range []struct {
		name   string
		r      *route
		h      http.Header
		body   string
		ignore string // "" admitted, else a part of the reason
	}{
		{"github push to the repository", gh, hdr("X-GitHub-Event", "push", "X-GitHub-Delivery", "d1"), `{"repository":{"full_name":"acme/app"}}`, ""},
		{"github push of the organization", gh, hdr("X-GitHub-Event", "push"), `{"repository":{"full_name":"tools/x"},"organization":{"login":"Tools"}}`, ""},
		{"github other repository", gh, hdr("X-GitHub-Event", "push"), `{"repository":{"full_name":"acme/other"}}`, "acme/other"},
		{"github other event", gh, hdr("X-GitHub-Event", "issues"), `{"repository":{"full_name":"acme/app"}}`, "issues"},
		{"github ping", gh, hdr("X-GitHub-Event", "ping"), `{}`, "ping"},
		{"organization only, other org", orgOnly, hdr("X-GitHub-Event", "push"), `{"repository":{"full_name":"acme/x"},"organization":{"login":"acme"}}`, "acme/x"},
		{"organization only, its org", orgOnly, hdr("X-GitHub-Event", "push"), `{"repository":{"full_name":"tools/x"},"organization":{"login":"tools"}}`, ""},
		{"gitlab project by id", gl, hdr("X-Gitlab-Event", "Push Hook"), `{"project":{"id":42,"path_with_namespace":"a/b"}}`, ""},
		{"gitlab other project", gl, hdr("X-Gitlab-Event", "Push Hook"), `{"project":{"id":7,"path_with_namespace":"a/c"}}`, "project"},
		{"gitlab tag push", gl, hdr("X-Gitlab-Event", "Tag Push Hook"), `{"project":{"id":42}}`, "Tag Push Hook"},
	} {
		id, why := c.r.admit(c.h, []byte(c.body))
		if (c.ignore == "") != (why == "") || !strings.Contains(why, c.ignore) {
			t.Errorf("%s: ignored %q, want %q", c.name, why, c.ignore)
		}
		if c.h.Get("X-GitHub-Delivery") != "" && id != c.h.Get("X-GitHub-Delivery") {
			t.Errorf("%s: id %q", c.name, id)
		}
	}
}
