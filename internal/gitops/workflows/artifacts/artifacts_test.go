package artifacts_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/freshet-dev/freshet/internal/gitops/workflows/artifacts"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
	"github.com/freshet-dev/freshet/internal/testenv/s3env"
)

func loopback(t *testing.T) *netpolicy.Policy {
	t.Helper()
	p, err := netpolicy.Options{PrivateNetworks: []string{"loopback"}}.Policy()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestS3 saves and loads artifacts through a real S3-compatible server (MinIO's), in every
// archive strategy, a file and a directory, and deletes them.
func TestS3(t *testing.T) {
	srv := s3env.Start(t, s3env.Options{})
	srv.Bucket(t, "art")
	ctx := context.Background()
	env := map[string]string{"AK": srv.AccessKey, "SK": srv.SecretKey}
	m := &artifacts.Mover{Policy: loopback(t), Getenv: func(k string) string { return env[k] }}
	loc := func(key string) artifacts.Location {
		return artifacts.Location{S3: &artifacts.S3{Endpoint: srv.Endpoint, Bucket: "art", Key: key, Insecure: true, AccessKeyEnv: "AK", SecretKeyEnv: "SK"}}
	}
	dir := t.TempDir()
	write(t, dir+"/out/file.txt", "hello artifact\n")
	write(t, dir+"/out/tree/a.txt", "A")
	write(t, dir+"/out/tree/sub/b.txt", "B")

	for _, archive := range []string{"", artifacts.ArchiveZip, artifacts.ArchiveNone} {
		t.Run("file "+archive, func(t *testing.T) {
			key := "wf/pod/file-" + archive
			size, err := m.Save(ctx, artifacts.Output{Name: "f", Path: dir + "/out/file.txt", Archive: archive, Location: loc(key)})
			if err != nil || size == 0 {
				t.Fatalf("save: %d %v", size, err)
			}
			// What is stored is the archive Argo would store.
			obj, err := srv.Client(t).GetObject(ctx, "art", key, minio.GetObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(obj)
			obj.Close()
			switch archive {
			case "":
				if !bytes.HasPrefix(raw, []byte{0x1f, 0x8b}) {
					t.Fatalf("not gzip: %q", raw[:4])
				}
			case artifacts.ArchiveZip:
				if !bytes.HasPrefix(raw, []byte("PK")) {
					t.Fatalf("not zip: %q", raw[:4])
				}
			case artifacts.ArchiveNone:
				if string(raw) != "hello artifact\n" {
					t.Fatalf("stored %q", raw)
				}
			}
			mode := int32(0o600)
			dest := filepath.Join(t.TempDir(), "in", "file.txt")
			if err := m.Load(ctx, artifacts.Input{Name: "f", Path: dest, Mode: &mode, Location: loc(key)}); err != nil {
				t.Fatal(err)
			}
			if got := read(t, dest); got != "hello artifact\n" {
				t.Fatalf("loaded %q", got)
			}
			if st, _ := os.Stat(dest); st.Mode().Perm() != 0o600 {
				t.Fatalf("mode %v", st.Mode())
			}
		})
	}
	for _, archive := range []string{"", artifacts.ArchiveZip} {
		t.Run("directory "+archive, func(t *testing.T) {
			key := "wf/pod/tree-" + archive
			if _, err := m.Save(ctx, artifacts.Output{Name: "t", Path: dir + "/out/tree", Archive: archive, Location: loc(key)}); err != nil {
				t.Fatal(err)
			}
			dest := filepath.Join(t.TempDir(), "somewhere")
			if err := m.Load(ctx, artifacts.Input{Name: "t", Path: dest, Location: loc(key)}); err != nil {
				t.Fatal(err)
			}
			if read(t, dest+"/a.txt") != "A" || read(t, dest+"/sub/b.txt") != "B" {
				t.Fatal("directory not restored")
			}
		})
	}
	t.Run("a directory is not stored unarchived", func(t *testing.T) {
		_, err := m.Save(ctx, artifacts.Output{Name: "t", Path: dir + "/out/tree", Archive: artifacts.ArchiveNone, Location: loc("x")})
		if err == nil || !strings.Contains(err.Error(), "archive none stores one file") {
			t.Fatal(err)
		}
	})
	t.Run("missing path", func(t *testing.T) {
		_, err := m.Save(ctx, artifacts.Output{Name: "t", Path: dir + "/nope", Location: loc("x")})
		if !errors.Is(err, artifacts.ErrMissing) {
			t.Fatal(err)
		}
	})
	t.Run("missing key", func(t *testing.T) {
		err := m.Load(ctx, artifacts.Input{Name: "x", Path: t.TempDir() + "/x", Location: loc("no/such/key")})
		if !errors.Is(err, artifacts.ErrNotFound) || !strings.Contains(err.Error(), "s3://art/no/such/key") {
			t.Fatal(err)
		}
	})
	t.Run("wrong credentials", func(t *testing.T) {
		bad := &artifacts.Mover{Policy: loopback(t), Getenv: func(k string) string { return map[string]string{"AK": srv.AccessKey, "SK": "wrong"}[k] }}
		err := bad.Load(ctx, artifacts.Input{Name: "x", Path: t.TempDir() + "/x", Location: loc("wf/pod/file-")})
		if err == nil || !strings.Contains(err.Error(), "SignatureDoesNotMatch") {
			t.Fatal(err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		l := loc("wf/pod/file-").S3
		l.AccessKey, l.SecretKey = srv.AccessKey, srv.SecretKey
		if ok, err := m.Stat(ctx, l); !ok || err != nil {
			t.Fatalf("before: %v %v", ok, err)
		}
		if err := m.Delete(ctx, l); err != nil {
			t.Fatal(err)
		}
		if ok, err := m.Stat(ctx, l); ok || err != nil {
			t.Fatalf("after: %v %v", ok, err)
		}
		if err := m.Delete(ctx, l); err != nil {
			t.Fatalf("deleting again: %v", err)
		}
	})
	t.Run("the network policy refuses loopback", func(t *testing.T) {
		strict, err := netpolicy.Options{}.Policy()
		if err != nil {
			t.Fatal(err)
		}
		m := &artifacts.Mover{Policy: strict, Getenv: m.Getenv}
		err = m.Load(ctx, artifacts.Input{Name: "x", Path: t.TempDir() + "/x", Location: loc("wf/pod/tree-")})
		if err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Fatal(err)
		}
	})
}

// TestHTTPAndRaw loads an input over HTTP (with a header) and raw data, and stores an output
// with PUT.
func TestHTTPAndRaw(t *testing.T) {
	var mu sync.Mutex
	stored := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t0ken" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch r.Method {
		case http.MethodPut:
			stored[r.URL.Path], _ = io.ReadAll(r.Body)
		case http.MethodGet:
			b, ok := stored[r.URL.Path]
			if !ok {
				http.NotFound(w, r)
				return
			}
			_, _ = w.Write(b)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	m := &artifacts.Mover{Policy: loopback(t)}
	hdr := []artifacts.Header{{Name: "Authorization", Value: "Bearer t0ken"}}
	dir := t.TempDir()
	write(t, dir+"/report.txt", "report")
	if _, err := m.Save(ctx, artifacts.Output{Name: "r", Path: dir + "/report.txt", Location: artifacts.Location{HTTP: &artifacts.HTTP{URL: srv.URL + "/r.tgz", Headers: hdr}}}); err != nil {
		t.Fatal(err)
	}
	dest := dir + "/got/report.txt"
	if err := m.Load(ctx, artifacts.Input{Name: "r", Path: dest, Location: artifacts.Location{HTTP: &artifacts.HTTP{URL: srv.URL + "/r.tgz", Headers: hdr}}}); err != nil {
		t.Fatal(err)
	}
	if read(t, dest) != "report" {
		t.Fatal(read(t, dest))
	}
	err := m.Load(ctx, artifacts.Input{Name: "r", Path: dir + "/x", Location: artifacts.Location{HTTP: &artifacts.HTTP{URL: srv.URL + "/none", Headers: hdr}}})
	if !errors.Is(err, artifacts.ErrNotFound) {
		t.Fatal(err)
	}
	err = m.Load(ctx, artifacts.Input{Name: "r", Path: dir + "/x", Location: artifacts.Location{HTTP: &artifacts.HTTP{URL: srv.URL + "/r.tgz"}}})
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatal(err)
	}
	if err := m.Load(ctx, artifacts.Input{Name: "raw", Path: dir + "/raw.txt", Location: artifacts.Location{Raw: &artifacts.Raw{Data: "raw data"}}}); err != nil || read(t, dir+"/raw.txt") != "raw data" {
		t.Fatal(err)
	}
}

// TestGit checks a real repository out over HTTP at a branch, a tag and a commit.
func TestGit(t *testing.T) {
	srv := gitserver.New(t, gitserver.WithBasicAuth("u", "p"))
	repo := srv.NewRepo("src")
	first := repo.Commit("main", map[string]string{"README": "one"}, "one")
	repo.Tag("v1", first)
	repo.Commit("main", map[string]string{"README": "two"}, "two")
	repo.Branch("dev", first)
	ctx := context.Background()
	env := map[string]string{"GU": "u", "GP": "p"}
	m := &artifacts.Mover{Policy: loopback(t), Getenv: func(k string) string { return env[k] }}
	for rev, want := range map[string]string{"": "two", "main": "two", "dev": "one", "v1": "one", first: "one"} {
		dest := filepath.Join(t.TempDir(), "src")
		err := m.Load(ctx, artifacts.Input{Name: "src", Path: dest, Location: artifacts.Location{Git: &artifacts.Git{Repo: repo.URL(), Revision: rev, UsernameEnv: "GU", PasswordEnv: "GP"}}})
		if err != nil {
			t.Fatalf("revision %q: %v", rev, err)
		}
		if got := read(t, dest+"/README"); got != want {
			t.Fatalf("revision %q: README %q, want %q", rev, got, want)
		}
	}
	err := m.Load(ctx, artifacts.Input{Name: "src", Path: t.TempDir() + "/x", Location: artifacts.Location{Git: &artifacts.Git{Repo: repo.URL(), Revision: "nope", UsernameEnv: "GU", PasswordEnv: "GP"}}})
	if !errors.Is(err, artifacts.ErrNotFound) {
		t.Fatal(err)
	}
}

// TestUnpackRefusesEscapes: an archive entry that leaves the artifact's directory is refused.
func TestUnpackRefusesEscapes(t *testing.T) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range []string{"ok/a", "ok/../../evil"} {
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte("x"))
	}
	tw.Close()
	gz.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(buf.Bytes()) }))
	defer srv.Close()
	dir := t.TempDir()
	err := (&artifacts.Mover{Policy: loopback(t)}).Load(context.Background(), artifacts.Input{Name: "x", Path: dir + "/in/x", Location: artifacts.Location{HTTP: &artifacts.HTTP{URL: srv.URL}}})
	if err == nil || !strings.Contains(err.Error(), "leaves the artifact's directory") {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir + "/evil"); err == nil {
		t.Fatal("escaped")
	}
}
