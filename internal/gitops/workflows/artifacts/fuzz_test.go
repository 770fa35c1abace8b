package artifacts

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzUnpack: an input artifact's bytes (whatever an S3 object or an HTTP URL holds) are
// unpacked or written at the artifact's path and nowhere else: nothing appears beside it.
func FuzzUnpack(f *testing.F) {
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	for _, e := range []struct{ name, body string }{{"a/", ""}, {"a/b.txt", "b"}, {"a/../../x", "x"}, {"/abs", "y"}} {
		typ := byte(tar.TypeReg)
		if strings.HasSuffix(e.name, "/") {
			typ = tar.TypeDir
		}
		_ = tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: typ})
		_, _ = tw.Write([]byte(e.body))
	}
	_ = tw.WriteHeader(&tar.Header{Name: "a/link", Linkname: "../../etc", Typeflag: tar.TypeSymlink})
	tw.Close()
	gz.Close()
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	w, _ := zw.Create("z/../q.txt")
	_, _ = w.Write([]byte("q"))
	w, _ = zw.Create("z/ok.txt")
	_, _ = w.Write([]byte("ok"))
	zw.Close()
	f.Add(tgz.Bytes())
	f.Add(zb.Bytes())
	f.Add([]byte("plain text"))
	f.Add([]byte{0x1f, 0x8b, 0, 0})
	f.Add([]byte("PK\x03\x04garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		src := filepath.Join(root, "download")
		if err := os.WriteFile(src, data, 0o600); err != nil {
			t.Fatal(err)
		}
		dest := filepath.Join(root, "in", "artifact")
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			t.Fatal(err)
		}
		_ = unpack(src, dest)
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if e.Name() != "in" && e.Name() != "download" {
				t.Fatalf("%s written beside the artifact", e.Name())
			}
		}
		in, _ := os.ReadDir(filepath.Join(root, "in"))
		for _, e := range in {
			if e.Name() != "artifact" && !strings.HasPrefix(e.Name(), ".unpack") && !strings.HasPrefix(e.Name(), ".unpacked") {
				t.Fatalf("in/%s written beside the artifact", e.Name())
			}
		}
	})
}

// FuzzRead: an artifact read into memory for the controller (a resource template's
// manifestFrom) is never more than its bound, whatever the object holds (archives that unpack
// to more included), and reading it does not panic.
func FuzzRead(f *testing.F) {
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	big := strings.Repeat("x", 5000)
	_ = tw.WriteHeader(&tar.Header{Name: "cm.yaml", Mode: 0o644, Size: int64(len(big)), Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte(big))
	tw.Close()
	gz.Close()
	f.Add(tgz.Bytes())
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap"))
	f.Add([]byte{0x1f, 0x8b, 0, 0})
	f.Add([]byte("PK\x03\x04garbage"))
	const max = 4096
	f.Fuzz(func(t *testing.T, data []byte) {
		m := &Mover{}
		out, err := m.Read(t.Context(), Location{Raw: &Raw{Data: string(data)}}, max)
		if err == nil && len(out) > max {
			t.Fatalf("read %d bytes, bound %d", len(out), max)
		}
		if err != nil && out != nil {
			t.Fatalf("an error (%v) with content", err)
		}
	})
}
