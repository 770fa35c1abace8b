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
