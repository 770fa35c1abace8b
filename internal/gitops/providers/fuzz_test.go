package providers

import (
	"encoding/json"
	"testing"
)

// FuzzDecodePage feeds arbitrary response bodies (from a git host the user points Freshet at,
// so possibly hostile) to every provider's page decoder: nothing panics, a page that decodes
// holds no more repositories than the body has objects, and every repository encodes as the
// JSON the API returns.
func FuzzDecodePage(f *testing.F) {
	for _, s := range []string{`[{"name":"app","full_name":"acme/app","clone_url":"https://h/acme/app.git","private":true,"updated_at":"2026-01-02T03:04:05Z"}]`,
		`[{"path":"app","path_with_namespace":"g/app","http_url_to_repo":"https://h/g/app.git","visibility":"public","last_activity_at":"2026-01-02T03:04:05Z"}]`,
		`[]`, `{}`, `null`, `[null,{}]`, `[{"updated_at":"yesterday"}]`, `[{"private":"yes"}]`, `[` + `{},` + `{}]`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, kind := range []string{GitHub, GitLab, Gitea} {
			repos, err := (&Client{kind: kind}).decode(body)
			if err != nil {
				continue
			}
			if n := countBraces(body); len(repos) > n {
				t.Fatalf("%s: %d repositories from a body with %d objects", kind, len(repos), n)
			}
			if _, err := json.Marshal(repos); err != nil {
				t.Fatalf("%s: decoded repositories do not encode: %v", kind, err)
			}
		}
	})
}

// countBraces bounds the number of JSON objects in b from above, plus the nulls a JSON array may
// hold instead (each decodes to a zero repository).
func countBraces(b []byte) int {
	n := 0
	for i, c := range b {
		if c == '{' || c == 'n' && i+3 < len(b) && string(b[i:i+4]) == "null" {
			n++
		}
	}
	return n
}
