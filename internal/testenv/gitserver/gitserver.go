// Package gitserver serves real git repositories to tests: bare repositories created in a temp
// dir and served by `git http-backend` (through net/http/cgi) on 127.0.0.1, optionally behind
// basic auth, TLS, or an SSH endpoint. Tests commit files, branches and tags with the git CLI
// and read per-repository request counters, so they can assert how often code under test
// fetched ("one fetch per change, not one per app").
//
//	srv := gitserver.New(t, gitserver.WithBasicAuth("user", "secret"))
//	repo := srv.NewRepo("apps")
//	sha := repo.Commit("main", map[string]string{"guestbook/svc.yaml": svc}, "add guestbook")
//	... clone repo.URL() ...
//	if got := repo.Stats().UploadPacks; got != 1 { ... }
//
// Everything is removed when the test ends. The git binary must be on PATH.
package gitserver

import (
	"bytes"
	"crypto/subtle"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
)

// DefaultBranch is the branch a new repository's HEAD points at.
const DefaultBranch = "main"

// Author is the identity of the commits the helper makes.
const (
	AuthorName  = "Freshet Test"
	AuthorEmail = "test@freshet.invalid"
)

// Stats counts the git smart-HTTP requests one repository received.
type Stats struct {
	// InfoRefs counts ref advertisements for upload-pack (GET info/refs?service=git-upload-pack):
	// one per ls-remote, and one at the start of every fetch or clone.
	InfoRefs int
	// UploadPacks counts pack negotiations (POST git-upload-pack): one per fetch or clone that
	// transferred (or negotiated) objects. An up-to-date fetch makes none.
	UploadPacks int
	// ReceivePacks counts pushes (POST git-receive-pack).
	ReceivePacks int
	// Unauthorized counts requests refused for missing or wrong credentials.
	Unauthorized int
}

// Option configures a Server.
type Option func(*Server)

// WithBasicAuth makes the server require HTTP basic auth with these credentials on every
// request.
func WithBasicAuth(user, password string) Option {
	return func(s *Server) { s.user, s.password = user, password }
}

// WithTLS serves HTTPS with a self-signed certificate for 127.0.0.1; CACertPEM returns it.
func WithTLS() Option { return func(s *Server) { s.tls = true } }

// Server serves the bare repositories under one temp dir.
type Server struct {
	t        testing.TB
	git      string
	root     string // bare repositories: <root>/<name>.git
	work     string // working clones used to make commits
	home     string // HOME for the git CLI, so no user config leaks in
	user     string
	password string
	tls      bool
	http     *httptest.Server
	ssh      *sshServer

	mu    sync.Mutex
	stats map[string]*Stats // by repository name (without .git)
	repos map[string]*Repo
}

// New starts a server that is stopped, and its files removed, when the test ends.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("gitserver: the git binary is required: %v", err)
	}
	dir := t.TempDir()
	s := &Server{
		t: t, git: gitPath,
		root:  filepath.Join(dir, "repos"),
		work:  filepath.Join(dir, "work"),
		home:  filepath.Join(dir, "home"),
		stats: map[string]*Stats{},
		repos: map[string]*Repo{},
	}
	for _, o := range opts {
		o(s)
	}
	for _, d := range []string{s.root, s.work, s.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	backend := &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Env: append(s.gitEnv(),
			"GIT_PROJECT_ROOT="+s.root,
			"GIT_HTTP_EXPORT_ALL=1",
		),
		InheritEnv: []string{"PATH"},
		Stderr:     io.Discard, // "not a git repository" for tests of missing repositories
	}
	s.http = httptest.NewUnstartedServer(s.handler(backend))
	if s.tls {
		s.http.StartTLS()
	} else {
		s.http.Start()
	}
	if s.ssh != nil {
		s.startSSH()
	}
	t.Cleanup(s.close)
	return s
}

func (s *Server) close() {
	s.http.Close()
	if s.ssh != nil {
		s.ssh.close()
	}
}

// URL is the base URL of the server (http://127.0.0.1:PORT, or https:// with WithTLS).
func (s *Server) URL() string { return s.http.URL }

// CACertPEM returns the PEM certificate that signs the server's TLS certificate, for a client's
// CA bundle. It is nil without WithTLS.
func (s *Server) CACertPEM() []byte {
	if !s.tls {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.http.Certificate().Raw})
}

// Close stops the server now (tests of an unreachable repository); it is also done at cleanup.
func (s *Server) Close() { s.close() }

var repoPath = regexp.MustCompile(`^/([A-Za-z0-9._/-]+?)(?:\.git)?/(info/refs|git-upload-pack|git-receive-pack|HEAD|objects/.*)$`)

func (s *Server) handler(backend http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := repoPath.FindStringSubmatch(r.URL.Path)
		name := ""
		if m != nil {
			name = m[1]
		}
		if s.user != "" || s.password != "" {
			u, p, ok := r.BasicAuth()
			if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(s.user)) != 1 ||
				subtle.ConstantTimeCompare([]byte(p), []byte(s.password)) != 1 {
				s.count(name, func(st *Stats) { st.Unauthorized++ })
				w.Header().Set("WWW-Authenticate", `Basic realm="gitserver"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
		}
		// Speak protocol v0/v1 to every client, so the counters mean the same for the git CLI
		// (which asks for v2, where ls-remote is a POST too) as for go-git.
		r.Header.Del("Git-Protocol")
		if m != nil {
			switch {
			case m[2] == "info/refs" && r.URL.Query().Get("service") == "git-upload-pack":
				s.count(name, func(st *Stats) { st.InfoRefs++ })
			case m[2] == "git-upload-pack" && r.Method == http.MethodPost:
				s.count(name, func(st *Stats) { st.UploadPacks++ })
			case m[2] == "git-receive-pack" && r.Method == http.MethodPost:
				s.count(name, func(st *Stats) { st.ReceivePacks++ })
			}
		}
		backend.ServeHTTP(w, r)
	})
}

func (s *Server) count(name string, f func(*Stats)) {
	if name == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats[name]
	if st == nil {
		st = &Stats{}
		s.stats[name] = st
	}
	f(st)
}

func (s *Server) gitEnv() []string {
	return []string{
		"HOME=" + s.home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=" + AuthorName,
		"GIT_AUTHOR_EMAIL=" + AuthorEmail,
		"GIT_COMMITTER_NAME=" + AuthorName,
		"GIT_COMMITTER_EMAIL=" + AuthorEmail,
		"LC_ALL=C",
	}
}

func lookPathEnv() string { return os.Getenv("PATH") }

// run runs git in dir and returns its trimmed stdout; a failure fails the test.
func (s *Server) run(dir string, args ...string) string {
	s.t.Helper()
	out, err := s.tryRun(dir, args...)
	if err != nil {
		s.t.Fatalf("gitserver: %v", err)
	}
	return out
}

func (s *Server) tryRun(dir string, args ...string) (string, error) {
	cmd := exec.Command(s.git, args...)
	cmd.Dir = dir
	cmd.Env = append(s.gitEnv(), "PATH="+lookPathEnv())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// Repo is one bare repository on the server.
type Repo struct {
	s    *Server
	name string
	bare string
	work string
	mu   sync.Mutex // serialises commits through the working clone
}

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*$`)

// NewRepo creates an empty bare repository served at URL()+"/"+name+".git". Its HEAD points at
// DefaultBranch. Names may contain slashes ("org/app").
func (s *Server) NewRepo(name string) *Repo {
	s.t.Helper()
	if !validName.MatchString(name) || strings.HasSuffix(name, ".git") {
		s.t.Fatalf("gitserver: invalid repository name %q", name)
	}
	s.mu.Lock()
	if _, ok := s.repos[name]; ok {
		s.mu.Unlock()
		s.t.Fatalf("gitserver: repository %q already exists", name)
	}
	r := &Repo{s: s, name: name, bare: filepath.Join(s.root, name+".git"), work: filepath.Join(s.work, name)}
	s.repos[name] = r
	s.stats[name] = &Stats{}
	s.mu.Unlock()

	if err := os.MkdirAll(filepath.Dir(r.bare), 0o755); err != nil {
		s.t.Fatal(err)
	}
	s.run(s.root, "init", "--bare", "--quiet", "--initial-branch="+DefaultBranch, r.bare)
	s.run(r.bare, "config", "http.receivepack", "true")
	s.run(r.bare, "config", "uploadpack.allowReachableSHA1InWant", "true")
	s.run(r.bare, "config", "receive.denyNonFastForwards", "true")
	if err := os.MkdirAll(r.work, 0o755); err != nil {
		s.t.Fatal(err)
	}
	s.run(r.work, "init", "--quiet", "--initial-branch="+DefaultBranch)
	s.run(r.work, "remote", "add", "origin", r.bare)
	return r
}

// Name is the repository's name as given to NewRepo.
func (r *Repo) Name() string { return r.name }

// URL is the repository's HTTP(S) URL, without credentials.
func (r *Repo) URL() string { return r.s.URL() + "/" + r.name + ".git" }

// Dir is the bare repository on disk (for file:// access or inspection with the git CLI).
func (r *Repo) Dir() string { return r.bare }

// Stats returns the repository's request counters so far.
func (r *Repo) Stats() Stats {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return *r.s.stats[r.name]
}

// ResetStats zeroes the repository's request counters.
func (r *Repo) ResetStats() {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	*r.s.stats[r.name] = Stats{}
}

// Commit writes files (path → content, slash-separated paths relative to the repository root)
// on branch, commits them with message and pushes; it returns the new commit's SHA. A branch
// that does not exist yet starts from DefaultBranch's tip (or as the first commit of an empty
// repository). Files not named keep their content.
func (r *Repo) Commit(branch string, files map[string]string, message string) string {
	r.s.t.Helper()
	return r.change(branch, message, func() {
		for _, p := range sortedKeys(files) {
			full := r.workPath(p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				r.s.t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(files[p]), 0o644); err != nil {
				r.s.t.Fatal(err)
			}
		}
	})
}

// Delete removes paths (files or directories) on branch, commits and pushes; it returns the new
// commit's SHA.
func (r *Repo) Delete(branch, message string, paths ...string) string {
	r.s.t.Helper()
	return r.change(branch, message, func() {
		for _, p := range paths {
			if err := os.RemoveAll(r.workPath(p)); err != nil {
				r.s.t.Fatal(err)
			}
		}
	})
}

func (r *Repo) workPath(p string) string {
	clean := filepath.Clean(filepath.FromSlash(p))
	if filepath.IsAbs(clean) || clean == "." || strings.HasPrefix(clean, "..") || strings.HasPrefix(clean, ".git") {
		r.s.t.Fatalf("gitserver: invalid path %q", p)
	}
	return filepath.Join(r.work, clean)
}

func (r *Repo) change(branch, message string, edit func()) string {
	r.s.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.s
	s.run(r.work, "fetch", "--quiet", "--prune", "origin", "+refs/heads/*:refs/remotes/origin/*")
	switch {
	case r.hasRef("refs/remotes/origin/" + branch):
		s.run(r.work, "checkout", "--quiet", "-B", branch, "origin/"+branch)
	case r.hasRef("refs/remotes/origin/" + DefaultBranch):
		s.run(r.work, "checkout", "--quiet", "-B", branch, "origin/"+DefaultBranch)
	default:
		s.run(r.work, "checkout", "--quiet", "--orphan", branch)
	}
	s.run(r.work, "reset", "--quiet", "--hard")
	s.run(r.work, "clean", "--quiet", "-fdx")
	edit()
	s.run(r.work, "add", "--all")
	s.run(r.work, "commit", "--quiet", "--allow-empty", "-m", message)
	s.run(r.work, "push", "--quiet", "origin", "HEAD:refs/heads/"+branch)
	return s.run(r.work, "rev-parse", "HEAD")
}

func (r *Repo) hasRef(ref string) bool {
	_, err := r.s.tryRun(r.work, "rev-parse", "--verify", "--quiet", ref)
	return err == nil
}

// Branch creates (or moves) branch to rev (a branch, tag or SHA).
func (r *Repo) Branch(name, rev string) {
	r.s.t.Helper()
	sha := r.RevParse(rev)
	r.s.run(r.bare, "update-ref", "refs/heads/"+name, sha)
}

// Tag creates a lightweight tag at rev (a branch, tag or SHA).
func (r *Repo) Tag(name, rev string) {
	r.s.t.Helper()
	sha := r.RevParse(rev)
	r.s.run(r.bare, "update-ref", "refs/tags/"+name, sha)
}

// AnnotatedTag creates an annotated tag at rev with message.
func (r *Repo) AnnotatedTag(name, rev, message string) {
	r.s.t.Helper()
	sha := r.RevParse(rev)
	r.s.run(r.bare, "tag", "-a", "-m", message, name, sha)
}

// SetHEAD points the repository's HEAD at branch.
func (r *Repo) SetHEAD(branch string) {
	r.s.t.Helper()
	r.s.run(r.bare, "symbolic-ref", "HEAD", "refs/heads/"+branch)
}

// RevParse resolves rev (branch, tag, SHA or HEAD) in the bare repository to a commit SHA.
func (r *Repo) RevParse(rev string) string {
	r.s.t.Helper()
	return r.s.run(r.bare, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
}

// ReadFile returns the content of path at rev, as the server has it.
func (r *Repo) ReadFile(rev, path string) (string, bool) {
	r.s.t.Helper()
	out, err := r.s.tryRun(r.bare, "show", rev+":"+path)
	if err != nil {
		return "", false
	}
	return out, true
}

// Log returns the subjects of the commits reachable from rev, newest first.
func (r *Repo) Log(rev string) []string {
	r.s.t.Helper()
	out := r.s.run(r.bare, "log", "--format=%s", rev)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Symlink commits a symbolic link at path pointing at target on branch and returns the SHA.
func (r *Repo) Symlink(branch, path, target, message string) string {
	r.s.t.Helper()
	return r.change(branch, message, func() {
		full := r.workPath(path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			r.s.t.Fatal(err)
		}
		_ = os.Remove(full)
		if err := os.Symlink(target, full); err != nil {
			r.s.t.Fatal(err)
		}
	})
}
