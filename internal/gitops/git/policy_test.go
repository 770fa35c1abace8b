package git_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/testenv/fakedns"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

func netPolicy(t *testing.T, o netpolicy.Options, deny ...string) *netpolicy.Policy {
	t.Helper()
	p, err := o.Policy(deny...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// listener counts the TCP connections made to it and closes them.
func listener(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), &n
}

func TestPolicyRefusesLoopbackRepositories(t *testing.T) {
	srv := gitserver.New(t)
	repo := srv.NewRepo("apps")
	repo.Commit("main", map[string]string{"a.yaml": "a: 1\n"}, "init")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL(), "http://"))
	dns := fakedns.Start(t, map[string][]string{"git.evil.test": {"127.0.0.1"}})
	c := newCache(t, git.Options{Policy: netPolicy(t, netpolicy.Options{Resolver: dns.Resolver()})})

	// Written as an address: refused before anything is sent, naming the field.
	_, err := c.Checkout(ctx(t), git.Repo{URL: repo.URL()}, "main")
	if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != "repoURL" || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("127.0.0.1: %v", err)
	}
	// A name that resolves to 127.0.0.1: refused when dialed.
	_, err = c.Checkout(ctx(t), git.Repo{URL: "http://git.evil.test:" + port + "/apps.git"}, "main")
	if !errors.Is(err, git.ErrNotAllowed) || !errors.Is(err, errdefs.ErrInvalid) || git.IsTemporary(err) || !strings.Contains(err.Error(), "resolves to 127.0.0.1") {
		t.Errorf("a name for 127.0.0.1: %v", err)
	}
	if st := repo.Stats(); st.InfoRefs+st.UploadPacks != 0 {
		t.Fatalf("the loopback server was reached: %+v", st)
	}
	// The operator allows loopback: the same repository is read.
	allowed := newCache(t, git.Options{Policy: netPolicy(t, netpolicy.Options{Resolver: dns.Resolver(), PrivateNetworks: []string{"loopback"}})})
	for _, u := range []string{repo.URL(), "http://git.evil.test:" + port + "/apps.git"} {
		snap, err := allowed.Checkout(ctx(t), git.Repo{URL: u}, "main")
		if err != nil {
			t.Fatalf("%s with loopback allowed: %v", u, err)
		}
		snap.Release()
	}
}

func TestPolicyRefusesRedirectsToRefusedAddresses(t *testing.T) {
	srv := gitserver.New(t)
	repo := srv.NewRepo("apps")
	repo.Commit("main", map[string]string{"a.yaml": "a: 1\n"}, "init")
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2: %v", err)
	}
	// An allowed server sends every request on to the loopback one.
	redirector := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.URL()+r.URL.RequestURI(), http.StatusFound)
	})}}
	redirector.Start()
	defer redirector.Close()
	c := newCache(t, git.Options{Policy: netPolicy(t, netpolicy.Options{PrivateNetworks: []string{"127.0.0.2"}})})
	_, err = c.Checkout(ctx(t), git.Repo{URL: redirector.URL + "/apps.git"}, "main")
	if !errors.Is(err, git.ErrNotAllowed) {
		t.Errorf("redirect to 127.0.0.1: %v", err)
	}
	if st := repo.Stats(); st.InfoRefs != 0 {
		t.Fatalf("the redirect reached the loopback server: %+v", st)
	}
}

// An answer that is not git — an internal service's page — never reaches the error's text.
func TestErrorsDoNotEchoRemoteBodies(t *testing.T) {
	const secret = "INTERNAL-ONLY-7d1f"
	for status, body := range map[int]string{
		http.StatusNotFound: "<html>" + secret + "</html>", http.StatusUnauthorized: secret, http.StatusForbidden: secret,
		http.StatusInternalServerError: secret, http.StatusOK: "001e# service=" + secret + "\n0000garbage " + secret,
		http.StatusTeapot: secret,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			fmt.Fprint(w, body)
		}))
		c := newCache(t, git.Options{Policy: netPolicy(t, netpolicy.Options{PrivateNetworks: []string{"loopback"}})})
		_, err := c.Checkout(ctx(t), git.Repo{URL: srv.URL + "/x.git"}, "main")
		srv.Close()
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("HTTP %d: %v", status, err)
		}
	}
}

func TestPolicyKeepsFileRepositoriesOutOfTheDataDir(t *testing.T) {
	srv := gitserver.New(t)
	mine := srv.NewRepo("mine")
	mine.Commit("main", map[string]string{"a.yaml": "mine\n"}, "init")
	theirs := srv.NewRepo("theirs")
	theirs.Commit("main", map[string]string{"a.yaml": "theirs\n"}, "init")
	data := filepath.Dir(mine.Dir()) // both bare repositories live here: the "data dir"
	elsewhere := t.TempDir()
	link := filepath.Join(elsewhere, "link.git")
	if err := os.Symlink(theirs.Dir(), link); err != nil {
		t.Fatal(err)
	}
	p := netPolicy(t, netpolicy.Options{FileRepoDirs: []string{"/"}}, data).WithOwnRepo(mine.Dir())
	c := newCache(t, git.Options{Policy: p})
	snap, err := c.Checkout(ctx(t), git.Repo{URL: "file://" + mine.Dir()}, "main")
	if err != nil {
		t.Fatalf("own repository: %v", err)
	}
	snap.Release()
	for _, u := range []string{"file://" + theirs.Dir(), theirs.Dir(), "file://" + link, "file://localhost" + theirs.Dir()} {
		_, err := c.Checkout(ctx(t), git.Repo{URL: u}, "main")
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != "repoURL" || strings.Contains(fmt.Sprint(err), "theirs\n") {
			t.Errorf("%s: %v", u, err)
		}
	}
	// Writing through a refused URL is refused as well.
	_, err = c.Commit(ctx(t), git.Repo{URL: "file://" + link}, git.CommitRequest{Message: "x", Author: git.Signature{Name: "x", Email: "x@x"},
		Changes: []git.FileChange{{Path: "b", Content: []byte("b")}}})
	if !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("commit through a symlink into the data dir: %v", err)
	}
}

func TestPolicyChecksGitAndSSHDials(t *testing.T) {
	addr, hits := listener(t)
	_, port, _ := net.SplitHostPort(addr)
	dns := fakedns.Start(t, map[string][]string{"evil.test": {"127.0.0.1"}})
	c := newCache(t, git.Options{Policy: netPolicy(t, netpolicy.Options{Resolver: dns.Resolver()})})
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	key := pem.EncodeToMemory(block)
	for _, r := range []git.Repo{
		{URL: "git://evil.test:" + port + "/x.git"},
		{URL: "ssh://git@evil.test:" + port + "/x.git", Credentials: git.Credentials{SSHPrivateKey: key, InsecureIgnoreHostKey: true}},
		{URL: "git://127.0.0.1:" + port + "/x.git"},
		{URL: "git@127.0.0.1:x.git", Credentials: git.Credentials{SSHPrivateKey: key, InsecureIgnoreHostKey: true}},
	} {
		_, err := c.Resolve(ctx(t), r, "main")
		if !errors.Is(err, errdefs.ErrInvalid) || git.IsTemporary(err) {
			t.Errorf("%s: %v", r.URL, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback listener saw %d connections", n)
	}
}
