package git_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

func newCache(t *testing.T, opts git.Options) *git.Cache {
	t.Helper()
	c, err := git.NewCache(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestResolveRevisions(t *testing.T) {
	srv := gitserver.New(t)
	repo := srv.NewRepo("apps")
	first := repo.Commit("main", map[string]string{"a.yaml": "a: 1\n"}, "first")
	second := repo.Commit("main", map[string]string{"a.yaml": "a: 2\n"}, "second")
	repo.Tag("v1.0.0", first)
	repo.AnnotatedTag("v2.0.0", second, "annotated")
	dev := repo.Commit("dev", map[string]string{"b.yaml": "b: 1\n"}, "on dev")
	c := newCache(t, git.Options{})
	r := git.Repo{URL: repo.URL()}

	for _, tc := range []struct {
		rev, sha, ref string
	}{
		{"", second, "refs/heads/main"},
		{"HEAD", second, "refs/heads/main"},
		{"main", second, "refs/heads/main"},
		{"dev", dev, "refs/heads/dev"},
		{"refs/heads/dev", dev, "refs/heads/dev"},
		{"v1.0.0", first, "refs/tags/v1.0.0"},
		{"v2.0.0", second, "refs/tags/v2.0.0"}, // annotated: peeled to the commit
		{first, first, ""},
		{strings.ToUpper(first), first, ""},
		{first[:7], first, ""},
	} {
		got, err := c.Resolve(ctx(t), r, tc.rev)
		if err != nil {
			t.Errorf("Resolve(%q): %v", tc.rev, err)
			continue
		}
		if got.SHA != tc.sha || got.Ref != tc.ref {
			t.Errorf("Resolve(%q) = %+v, want %s %s", tc.rev, got, tc.sha, tc.ref)
		}
	}

	_, err := c.Resolve(ctx(t), r, "nope")
	if !errors.Is(err, git.ErrRevisionNotFound) || !errors.Is(err, errdefs.ErrNotFound) || git.IsTemporary(err) {
		t.Fatalf("unknown revision: err = %v, want a permanent ErrRevisionNotFound", err)
	}
	for _, want := range []string{`"nope"`, "branches: dev, main", "tags: v1.0.0, v2.0.0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestCheckoutSnapshot(t *testing.T) {
	srv := gitserver.New(t)
	repo := srv.NewRepo("apps")
	sha := repo.Commit("main", map[string]string{
		"guestbook/deploy.yaml": "kind: Deployment\n",
		"guestbook/svc.yaml":    "kind: Service\n",
		"README.md":             "# apps\n",
	}, "add guestbook\n\nwith a body")
	repo.Symlink("main", "guestbook/link.yaml", "svc.yaml", "a symlink inside")
	sha2 := repo.RevParse("main")
	c := newCache(t, git.Options{})
	r := git.Repo{URL: repo.URL()}

	snap, err := c.Checkout(ctx(t), r, "main")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	if snap.SHA != sha2 || snap.Ref != "refs/heads/main" || snap.Commit.Subject() != "a symlink inside" {
		t.Errorf("snapshot = %+v", snap)
	}
	if snap.Commit.Author != gitserver.AuthorName || snap.Commit.AuthorEmail != gitserver.AuthorEmail ||
		snap.Commit.AuthorTime.IsZero() || len(snap.Commit.Parents) != 1 || snap.Commit.Parents[0] != sha {
		t.Errorf("commit info = %+v", snap.Commit)
	}
	b, err := os.ReadFile(filepath.Join(snap.Dir, "guestbook/link.yaml"))
	if err != nil || string(b) != "kind: Service\n" {
		t.Errorf("read through symlink: %q %v", b, err)
	}
	info, err := os.Stat(filepath.Join(snap.Dir, "guestbook/deploy.yaml"))
	if err != nil || info.Mode().Perm()&0o222 != 0 {
		t.Errorf("snapshot file mode = %v (%v), want read-only", info.Mode(), err)
	}
	if info, err := os.Stat(filepath.Join(snap.Dir, "guestbook")); err != nil || info.Mode().Perm()&0o222 != 0 {
		t.Errorf("snapshot dir mode = %v (%v), want read-only", info.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(snap.Dir, ".git")); !os.IsNotExist(err) {
		t.Errorf("snapshot has a .git: %v", err)
	}

	// The older commit by SHA, its metadata, and a file without a checkout.
	old, err := c.Checkout(ctx(t), r, sha)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Release()
	if _, err := os.Lstat(filepath.Join(old.Dir, "guestbook/link.yaml")); !os.IsNotExist(err) {
		t.Errorf("old snapshot has the later symlink")
	}
	ci, err := c.CommitInfo(ctx(t), r, sha)
	if err != nil || ci.Subject() != "add guestbook" || !strings.Contains(ci.Message, "with a body") {
		t.Errorf("CommitInfo = %+v, %v", ci, err)
	}
	content, err := c.ReadFile(ctx(t), r, sha, "guestbook/svc.yaml")
	if err != nil || string(content) != "kind: Service\n" {
		t.Errorf("ReadFile = %q, %v", content, err)
	}
	if _, err := c.ReadFile(ctx(t), r, sha, "missing.yaml"); !errors.Is(err, git.ErrFileNotFound) {
		t.Errorf("ReadFile(missing) err = %v", err)
	}

	// Snapshots are shared per commit; GC removes released ones beyond the kept count.
	again, err := c.Checkout(ctx(t), r, sha2)
	if err != nil {
		t.Fatal(err)
	}
	if again.Dir != snap.Dir {
		t.Errorf("second checkout of the same commit made a new snapshot: %s vs %s", again.Dir, snap.Dir)
	}
	if st := c.Stats(); st.Checkouts != 2 {
		t.Errorf("checkouts = %d, want 2 (one per commit)", st.Checkouts)
	}
	again.Release()
	if n, err := c.GC(0); err != nil || n != 0 {
		t.Errorf("GC with every snapshot held removed %d (%v)", n, err)
	}
	old.Release()
	snap.Release()
	snap.Release() // idempotent
	if n, err := c.GC(1); err != nil || n != 1 {
		t.Errorf("GC(1) removed %d (%v), want 1", n, err)
	}
	if _, err := os.Stat(old.Dir); !os.IsNotExist(err) {
		t.Errorf("the least recently used snapshot survived GC: %v", err)
	}
	if _, err := os.Stat(snap.Dir); err != nil {
		t.Errorf("the kept snapshot was removed: %v", err)
	}
}

// N applications on one repository: one ref advertisement and one fetch per change, however
// many callers ask at once.
func TestOneFetchPerChange(t *testing.T) {
	srv := gitserver.New(t)
	repo := srv.NewRepo("apps")
	repo.Commit("main", map[string]string{"a.yaml": "a: 1\n"}, "first")
	c := newCache(t, git.Options{RefsTTL: time.Minute})
	// Different spellings of one repository share the cache entry.
	urls := []string{repo.URL(), strings.TrimSuffix(repo.URL(), ".git"), repo.URL() + "/", strings.Replace(repo.URL(), "http://", "HTTP://", 1)}

	checkoutAll := func(n int) []*git.Snapshot {
		t.Helper()
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			snaps []*git.Snapshot
			errs  []error
		)
		for i := range n {
			wg.Go(func() {
				s, err := c.Checkout(ctx(t), git.Repo{URL: urls[i%len(urls)]}, "main")
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				snaps = append(snaps, s)
			})
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Fatalf("%d checkouts failed: %v", len(errs), errs[0])
		}
		return snaps
	}

	snaps := checkoutAll(20)
	if st := repo.Stats(); st.UploadPacks != 1 || st.InfoRefs != 2 {
		t.Errorf("20 concurrent checkouts: server saw %+v, want one ls-remote + one fetch (2 advertisements, 1 pack)", st)
	}
	for _, s := range snaps[1:] {
		if s.Dir != snaps[0].Dir {
			t.Fatalf("snapshots differ: %s %s", s.Dir, snaps[0].Dir)
		}
	}

	// Unchanged repository, advertisement still fresh: no network at all.
	repo.ResetStats()
	checkoutAll(10)
	if st := repo.Stats(); st != (gitserver.Stats{}) {
		t.Errorf("unchanged repository within RefsTTL: server saw %+v, want nothing", st)
	}

	// A push, then a webhook-style Invalidate: one ls-remote and one fetch for everyone.
	sha := repo.Commit("main", map[string]string{"a.yaml": "a: 2\n"}, "second")
	c.Invalidate(urls[1])
	repo.ResetStats()
	snaps = checkoutAll(20)
	if st := repo.Stats(); st.UploadPacks != 1 || st.InfoRefs != 2 {
		t.Errorf("after a change: server saw %+v, want 2 advertisements and 1 pack; cache %+v; sha %s want %s", st, c.Stats(), snaps[0].SHA, sha)
	}
	if snaps[0].SHA != sha {
		t.Errorf("checked out %s, want the new commit %s", snaps[0].SHA, sha)
	}

	// Without a change, asking again costs one ls-remote and no fetch.
	c.Invalidate(repo.URL())
	repo.ResetStats()
	checkoutAll(5)
	if st := repo.Stats(); st.UploadPacks != 0 || st.InfoRefs != 1 {
		t.Errorf("unchanged after invalidate: server saw %+v, want one advertisement and no pack", st)
	}
}

func TestAuthentication(t *testing.T) {
	srv := gitserver.New(t, gitserver.WithBasicAuth("alice", "tok3n"))
	repo := srv.NewRepo("private")
	repo.Commit("main", map[string]string{"a.yaml": "a\n"}, "init")
	c := newCache(t, git.Options{})

	for name, cr := range map[string]git.Credentials{
		"none":  {},
		"wrong": {Username: "alice", Password: "nope"},
	} {
		_, err := c.Checkout(ctx(t), git.Repo{URL: repo.URL(), Credentials: cr}, "main")
		if !errors.Is(err, git.ErrAuthentication) || git.IsTemporary(err) {
			t.Errorf("%s credentials: err = %v, want a permanent ErrAuthentication", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "nope") {
			t.Errorf("error leaks the password: %v", err)
		}
	}
	for name, cr := range map[string]git.Credentials{
		"basic": {Username: "alice", Password: "tok3n"},
		"token": {Username: "alice", Token: "tok3n"},
	} {
		if _, err := c.Checkout(ctx(t), git.Repo{URL: repo.URL(), Credentials: cr}, "main"); err != nil {
			t.Errorf("%s credentials: %v", name, err)
		}
	}
	if s := fmt.Sprintf("%v %#v", git.Credentials{Token: "secret"}, git.Credentials{Password: "secret"}); strings.Contains(s, "secret") {
		t.Errorf("credentials print their secret: %s", s)
	}
}

func TestErrorsTemporaryOrPermanent(t *testing.T) {
	srv := gitserver.New(t)
	repo := srv.NewRepo("apps")
	repo.Commit("main", map[string]string{"a": "a"}, "init")
	c := newCache(t, git.Options{Timeout: 10 * time.Second})

	_, err := c.Checkout(ctx(t), git.Repo{URL: srv.URL() + "/missing.git"}, "main")
	if !errors.Is(err, git.ErrRepositoryNotFound) || git.IsTemporary(err) {
		t.Errorf("missing repository: err = %v, want a permanent ErrRepositoryNotFound", err)
	}
	_, err = c.Checkout(ctx(t), git.Repo{URL: "ftp://example.invalid/x.git"}, "main")
	if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != "repoURL" {
		t.Errorf("unsupported scheme: err = %v, want an invalid repoURL", err)
	}

	srv.Close()
	_, err = c.Checkout(ctx(t), git.Repo{URL: repo.URL()}, "main")
	if !errors.Is(err, git.ErrUnreachable) || !git.IsTemporary(err) || !errors.Is(err, errdefs.ErrUnavailable) {
		t.Errorf("stopped server: err = %v, want a temporary ErrUnreachable", err)
	}
	if !strings.Contains(err.Error(), repo.URL()) {
		t.Errorf("error %q does not name the repository", err)
	}
}

func TestCustomCA(t *testing.T) {
	srv := gitserver.New(t, gitserver.WithTLS())
	repo := srv.NewRepo("tls")
	repo.Commit("main", map[string]string{"a": "a"}, "init")
	c := newCache(t, git.Options{})

	_, err := c.Checkout(ctx(t), git.Repo{URL: repo.URL()}, "main")
	if !errors.Is(err, git.ErrTLS) || git.IsTemporary(err) {
		t.Errorf("self-signed server without a CA bundle: err = %v, want a permanent ErrTLS", err)
	}
	if _, err := c.Checkout(ctx(t), git.Repo{URL: repo.URL(), Credentials: git.Credentials{CABundle: srv.CACertPEM()}}, "main"); err != nil {
		t.Errorf("with the CA bundle: %v", err)
	}
	c.Invalidate(repo.URL())
	if _, err := c.Resolve(ctx(t), git.Repo{URL: repo.URL(), Credentials: git.Credentials{InsecureSkipTLSVerify: true}}, "main"); err != nil {
		t.Errorf("with verification off: %v", err)
	}
}

func TestSSH(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := pem.EncodeToMemory(block)
	srv := gitserver.New(t, gitserver.WithSSH(sshPub))
	repo := srv.NewRepo("org/apps")
	sha := repo.Commit("main", map[string]string{"a.yaml": "a\n"}, "init")
	c := newCache(t, git.Options{Timeout: 20 * time.Second})

	good := git.Credentials{SSHPrivateKey: keyPEM, SSHKnownHosts: srv.SSHKnownHosts()}
	snap, err := c.Checkout(ctx(t), git.Repo{URL: repo.SSHURL(), Credentials: good}, "main")
	if err != nil {
		t.Fatalf("ssh checkout: %v", err)
	}
	snap.Release()
	if snap.SHA != sha {
		t.Errorf("ssh checkout at %s, want %s", snap.SHA, sha)
	}

	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	otherBlock, _ := ssh.MarshalPrivateKey(otherPriv, "")
	otherSigner, _ := ssh.NewSignerFromKey(otherPriv)
	wrongHosts := []byte(strings.Fields(string(srv.SSHKnownHosts()))[0] + " " + string(ssh.MarshalAuthorizedKey(otherSigner.PublicKey())))

	for name, tc := range map[string]struct {
		cr   git.Credentials
		want error
	}{
		"unauthorized key": {git.Credentials{SSHPrivateKey: pem.EncodeToMemory(otherBlock), SSHKnownHosts: srv.SSHKnownHosts()}, git.ErrAuthentication},
		"wrong host key":   {git.Credentials{SSHPrivateKey: keyPEM, SSHKnownHosts: wrongHosts}, git.ErrHostKey},
		"no key":           {git.Credentials{}, errdefs.ErrInvalid},
		"garbage key":      {git.Credentials{SSHPrivateKey: []byte("not a key")}, errdefs.ErrInvalid},
	} {
		c := newCache(t, git.Options{Timeout: 20 * time.Second})
		_, err := c.Resolve(ctx(t), git.Repo{URL: repo.SSHURL(), Credentials: tc.cr}, "main")
		if !errors.Is(err, tc.want) || git.IsTemporary(err) {
			t.Errorf("%s: err = %v, want permanent %v", name, err, tc.want)
		}
	}
	// scp-style addresses normalize to the same cache entry as ssh:// ones.
	n1, _ := git.NormalizeURL(repo.SSHURL())
	if !strings.HasPrefix(n1, "ssh://git@127.0.0.1:") {
		t.Errorf("normalized ssh URL = %s", n1)
	}
}

func TestFileRepository(t *testing.T) {
	srv := gitserver.New(t)
	repo := srv.NewRepo("local")
	sha := repo.Commit("main", map[string]string{"a.yaml": "a\n"}, "init")
	c := newCache(t, git.Options{})
	for _, u := range []string{repo.Dir(), "file://" + repo.Dir()} {
		snap, err := c.Checkout(ctx(t), git.Repo{URL: u}, "main")
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		snap.Release()
		if snap.SHA != sha {
			t.Errorf("%s: sha %s want %s", u, snap.SHA, sha)
		}
	}
	if st := repo.Stats(); st != (gitserver.Stats{}) {
		t.Errorf("a file repository went over HTTP: %+v", st)
	}
}

func TestUnsafeSymlinkAndSizeLimit(t *testing.T) {
	srv := gitserver.New(t)
	repo := srv.NewRepo("bad")
	repo.Commit("main", map[string]string{"a.yaml": strings.Repeat("x", 4096)}, "init")
	repo.Symlink("escape", "app/passwd", "../../../etc/passwd", "escape")

	c := newCache(t, git.Options{MaxCheckoutBytes: 1024})
	_, err := c.Checkout(ctx(t), git.Repo{URL: repo.URL()}, "main")
	if !errors.Is(err, git.ErrTooLarge) || !errors.Is(err, errdefs.ErrTooLarge) {
		t.Errorf("over the checkout limit: err = %v, want ErrTooLarge", err)
	}
	c = newCache(t, git.Options{})
	_, err = c.Checkout(ctx(t), git.Repo{URL: repo.URL()}, "escape")
	if !errors.Is(err, git.ErrUnsafePath) || !strings.Contains(err.Error(), "app/passwd") {
		t.Errorf("symlink out of the repository: err = %v, want ErrUnsafePath naming app/passwd", err)
	}
	entries, _ := os.ReadDir(filepath.Join(c.Dir(), "tmp"))
	if len(entries) != 0 {
		t.Errorf("failed checkouts left %d temp dirs", len(entries))
	}
}

func TestNormalizeURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://github.com/argoproj/argocd-example-apps.git":   "https://github.com/argoproj/argocd-example-apps",
		"https://GitHub.com/argoproj/argocd-example-apps/":      "https://github.com/argoproj/argocd-example-apps",
		"https://user:token@github.com:443/org/repo.git":        "https://github.com/org/repo",
		"http://gitea.local:3000/org/repo":                      "http://gitea.local:3000/org/repo",
		"git@github.com:argoproj/argocd-example-apps.git":       "ssh://git@github.com/argoproj/argocd-example-apps",
		"ssh://git@github.com:22/argoproj/argocd-example-apps":  "ssh://git@github.com/argoproj/argocd-example-apps",
		"ssh://git@gitlab.example.com:2222/group/sub/repo.git/": "ssh://git@gitlab.example.com:2222/group/sub/repo",
		"/var/lib/freshet/install.git":                          "file:///var/lib/freshet/install",
		"file:///var/lib/freshet/install.git":                   "file:///var/lib/freshet/install",
	} {
		got, err := git.NormalizeURL(in)
		if err != nil || got != want {
			t.Errorf("NormalizeURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "not a url", "ftp://host/x", "https:///nohost"} {
		if _, err := git.NormalizeURL(in); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("NormalizeURL(%q) err = %v, want invalid", in, err)
		}
	}
}
