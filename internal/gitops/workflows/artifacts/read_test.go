package artifacts_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/workflows/artifacts"
)

func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, data := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gz(t *testing.T, data string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestRead: an artifact read into memory is the file Load would write — an archive of one file
// is that file, gzip of something else stays as it is — and is bounded both as fetched and as
// unpacked; a directory (several entries, git) is refused.
func TestRead(t *testing.T) {
	const max = 4096
	big := strings.Repeat("x", max+1)
	bodies := map[string][]byte{
		"/plain":     []byte("kind: ConfigMap"),
		"/tgz":       tarGz(t, map[string]string{"cm.yaml": "kind: ConfigMap"}),
		"/zip":       zipOf(t, map[string]string{"cm.yaml": "kind: ConfigMap"}),
		"/gz":        gz(t, "kind: ConfigMap"),
		"/several":   tarGz(t, map[string]string{"a.yaml": "a", "b.yaml": "b"}),
		"/severzip":  zipOf(t, map[string]string{"a.yaml": "a", "b.yaml": "b"}),
		"/big":       []byte(big),
		"/bigtgz":    tarGz(t, map[string]string{"cm.yaml": big}),
		"/exact":     []byte(big[:max]),
		"/not-found": nil,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := bodies[r.URL.Path]
		if !ok || b == nil {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	m := &artifacts.Mover{Policy: loopback(t)}
	ctx := context.Background()
	at := func(p string) artifacts.Location {
		return artifacts.Location{HTTP: &artifacts.HTTP{URL: srv.URL + p}}
	}
	for _, tc := range []struct {
		path string
		want []byte
		err  string
		is   error
	}{
		{path: "/plain", want: []byte("kind: ConfigMap")},
		{path: "/tgz", want: []byte("kind: ConfigMap")},
		{path: "/zip", want: []byte("kind: ConfigMap")},
		{path: "/gz", want: bodies["/gz"]},
		{path: "/exact", want: []byte(big[:max])},
		{path: "/several", err: "archive of several entries"},
		{path: "/severzip", err: "zip of 2 files"},
		{path: "/big", err: "more than 4096 bytes", is: artifacts.ErrTooLarge},
		{path: "/bigtgz", err: "more than 4096 bytes unpacked", is: artifacts.ErrTooLarge},
		{path: "/not-found", is: artifacts.ErrNotFound},
	} {
		got, err := m.Read(ctx, at(tc.path), max)
		switch {
		case tc.err == "" && tc.is == nil:
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Errorf("%s: got %q, %v; want %q", tc.path, got, err, tc.want)
			}
		case err == nil || !strings.Contains(err.Error(), tc.err) || (tc.is != nil && !errors.Is(err, tc.is)):
			t.Errorf("%s: got %q, %v; want an error with %q (%v)", tc.path, got, err, tc.err, tc.is)
		}
	}
	if got, err := m.Read(ctx, artifacts.Location{Raw: &artifacts.Raw{Data: big}}, max); !errors.Is(err, artifacts.ErrTooLarge) {
		t.Errorf("raw: got %q, %v; want too large", got, err)
	}
	if _, err := m.Read(ctx, artifacts.Location{Git: &artifacts.Git{Repo: srv.URL + "/repo.git"}}, max); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("git: %v", err)
	}
}
