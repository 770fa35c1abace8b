package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/pipeline"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

func gitCtx(provider, url, user, token string) pipeline.ContextInput {
	return pipeline.ContextInput{Type: pipeline.ContextGit, Git: &pipeline.GitProvider{Provider: provider, URL: url, Username: user, Token: token}}
}

// Bad git contexts are refused naming the field; the operator's network policy decides which
// provider URLs tenants may give.
func TestGitContextValidation(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	policy, err := netpolicy.Options{}.Policy()
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, db, func(d *pipeline.Deps) { d.Net = policy })
	ctx := context.Background()
	for _, c := range []struct {
		name, field, mention string
		in                   pipeline.ContextInput
	}{
		{"no git", "git", "git.provider", pipeline.ContextInput{Type: pipeline.ContextGit}},
		{"values on git", "git", "only it", pipeline.ContextInput{Type: pipeline.ContextGit, Values: map[string]string{"A": "b"}, Git: &pipeline.GitProvider{Provider: "github", Token: "t"}}},
		{"git on a secret", "registry", "registry or git", pipeline.ContextInput{Type: pipeline.ContextSecret, Values: map[string]string{"A": "b"}, Git: &pipeline.GitProvider{}}},
		{"git on a registry", "git", "only for contexts of type git", pipeline.ContextInput{Type: pipeline.ContextRegistry, Registry: &pipeline.Registry{URL: "ghcr.io"}, Git: &pipeline.GitProvider{}}},
		{"unknown provider", "git.provider", "github, gitlab, gitea or bitbucket", gitCtx("sourcehut", "", "", "t")},
		{"gitea without url", "git.url", "required for gitea", gitCtx("gitea", "", "", "t")},
		{"not http", "git.url", "not an http(s) URL", gitCtx("gitlab", "ftp://gitlab.com", "", "t")},
		{"credentials in url", "git.url", "credentials", gitCtx("gitlab", "https://u:p@gitlab.com", "", "t")},
		{"host not allowed", "git.url", "--git-provider-hosts", gitCtx("gitea", "https://gitea.internal.example", "", "t")},
		{"query", "git.url", "query", gitCtx("gitlab", "https://gitlab.com?x=1", "", "t")},
		{"no token", "git.token", "required", gitCtx("github", "", "", "")},
		{"mask on create", "git.token", "mask", gitCtx("github", "", "", pipeline.MaskedValue)},
		{"token with newline", "git.token", "control character", gitCtx("github", "", "", "tok\n")},
		{"username with colon", "git.username", "':'", gitCtx("bitbucket", "", "a:b", "t")},
	} {
		_, err := f.svc.PutContext(ctx, f.p, "git", c.in, true)
		var fe *errdefs.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(err.Error(), c.mention) {
			t.Errorf("%s: err = %v, want a field error on %s mentioning %q", c.name, err, c.field, c.mention)
		}
	}
	// The SaaS APIs are allowed without the operator listing them, and are the defaults.
	for i, c := range []struct{ provider, url, want string }{
		{"github", "", "https://api.github.com"}, {"gitlab", "", "https://gitlab.com"}, {"bitbucket", "", "https://api.bitbucket.org/2.0"},
		{"gitea", "https://codeberg.org/", "https://codeberg.org"},
	} {
		got, err := f.svc.PutContext(ctx, f.p, "ok-"+string(rune('a'+i)), gitCtx(c.provider, c.url, "", "t"), true)
		if err != nil || got.Git == nil || got.Git.URL != c.want || got.Git.Token != pipeline.MaskedValue {
			t.Errorf("%s %q: %+v, %v; want URL %s and the token masked", c.provider, c.url, got.Git, err, c.want)
		}
	}
}

// A git context's token is encrypted at rest and masked; admins may reveal it (audited); the
// mask sent back keeps it only while the provider and URL stay.
func TestGitContexts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		f := newFixture(t, db)
		const tok = "glpat-git-context-token-123"
		c, err := f.svc.PutContext(ctx, f.p, "gl", gitCtx("gitlab", "https://gitlab.example.com", "", tok), true)
		if err != nil {
			t.Fatal(err)
		}
		want := pipeline.GitProvider{Provider: "gitlab", URL: "https://gitlab.example.com", Token: pipeline.MaskedValue}
		if c.Type != pipeline.ContextGit || c.Git == nil || *c.Git != want || len(c.Values) != 0 {
			t.Fatalf("created %+v (git %+v), want %+v", c, c.Git, want)
		}
		row, err := db.GetContext(ctx, f.p.AccountID, "gl")
		if err != nil || strings.Contains(row.Data, tok) {
			t.Fatalf("stored row %+v, %v", row, err)
		}
		member := rbac.Principal{AccountID: f.p.AccountID, Email: "m@acme.test", Role: rbac.Member}
		if got, err := f.svc.GetContext(ctx, member, "gl", false); err != nil || *got.Git != want {
			t.Fatalf("member reads %+v, %v", got.Git, err)
		}
		if _, err := f.svc.GetContext(ctx, member, "gl", true); !errors.Is(err, errdefs.ErrForbidden) {
			t.Fatalf("member decrypts: %v", err)
		}
		if got, err := f.svc.GetContext(ctx, f.p, "gl", true); err != nil || got.Git.Token != tok {
			t.Fatalf("admin decrypts %+v, %v", got.Git, err)
		}
		// The mask keeps the token for the same URL…
		keep := gitCtx("gitlab", "https://gitlab.example.com", "ci-bot", pipeline.MaskedValue)
		if _, err := f.svc.PutContext(ctx, f.p, "gl", keep, false); err != nil {
			t.Fatal(err)
		}
		if got, _ := f.svc.GetContext(ctx, f.p, "gl", true); got.Git.Token != tok || got.Git.Username != "ci-bot" {
			t.Fatalf("after an update with the mask: %+v", got.Git)
		}
		// …but never follows it to another host or provider.
		for _, in := range []pipeline.ContextInput{gitCtx("gitlab", "https://evil.example", "", pipeline.MaskedValue), gitCtx("gitea", "https://gitlab.example.com", "", pipeline.MaskedValue)} {
			var fe *errdefs.FieldError
			if _, err := f.svc.PutContext(ctx, f.p, "gl", in, false); !errors.As(err, &fe) || fe.Field != "git.token" {
				t.Errorf("mask with %+v: %v, want refused on git.token", in.Git, err)
			}
		}
		if got, _ := f.svc.GetContext(ctx, f.p, "gl", true); got.Git.URL != "https://gitlab.example.com" || got.Git.Token != tok {
			t.Fatalf("a refused update changed the context: %+v", got.Git)
		}
	})
}

func TestCloneBase(t *testing.T) {
	for _, c := range []struct{ provider, api, want string }{
		{"github", "https://api.github.com", "https://github.com"},
		{"github", "https://ghe.example/api/v3", "https://ghe.example"},
		{"gitlab", "https://gitlab.com", "https://gitlab.com"},
		{"gitlab", "https://git.example/gitlab/", "https://git.example/gitlab"},
		{"gitea", "http://127.0.0.1:3000", "http://127.0.0.1:3000"},
		{"bitbucket", "https://api.bitbucket.org/2.0", "https://bitbucket.org"},
	} {
		if got, err := pipeline.CloneBase(c.provider, c.api); err != nil || got != c.want {
			t.Errorf("CloneBase(%s, %s) = %q, %v; want %q", c.provider, c.api, got, err, c.want)
		}
	}
	if _, err := pipeline.CloneBase("svn", "https://x"); err == nil {
		t.Error("an unknown provider has a clone base")
	}
}
