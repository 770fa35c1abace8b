package artifacts

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// writeTarGz writes path (a file or a directory) as a gzipped tar whose entries are under
// path's base name, as Argo writes them.
func writeTarGz(w io.Writer, path string, level *int) error {
	lvl := gzip.DefaultCompression
	if level != nil {
		lvl = *level
	}
	gz, err := gzip.NewWriterLevel(w, lvl)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	base := filepath.Base(path)
	err = filepath.Walk(path, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(path, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(filepath.Join(base, rel))
		link := ""
		if info.Mode()&os.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = name
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uname, hdr.Gname = "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// writeZip writes path (a file or a directory) as a zip whose entries are under path's base name.
func writeZip(w io.Writer, path string) error {
	zw := zip.NewWriter(w)
	base := filepath.Base(path)
	err := filepath.Walk(path, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() && !info.IsDir() {
			return nil // zip holds files and directories only
		}
		rel, err := filepath.Rel(path, p)
		if err != nil {
			return err
		}
		hdr, err := zip.FileInfoHeader(info)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(filepath.Join(base, rel))
		if info.IsDir() {
			hdr.Name += "/"
		} else {
			hdr.Method = zip.Deflate
		}
		fw, err := zw.CreateHeader(hdr)
		if err != nil || info.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(fw, f)
		return err
	})
	if err != nil {
		return err
	}
	return zw.Close()
}

// unpack puts the downloaded file src at dest: a gzipped tar or a zip is unpacked (a single
// top-level entry becomes dest itself, several go into dest as a directory); anything else is
// moved there as it is.
func unpack(src, dest string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	head := make([]byte, 4)
	n, _ := io.ReadFull(f, head)
	f.Close()
	head = head[:n]
	var extract func(dir string) error
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		extract = func(dir string) error { return untarGz(src, dir) }
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		extract = func(dir string) error { return unzip(src, dir) }
	default:
		return replace(src, dest)
	}
	dir, err := os.MkdirTemp(filepath.Dir(dest), ".unpack-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := extract(dir); err != nil {
		if errors.Is(err, errNotTar) {
			return replace(src, dest) // gzip of something else: keep the file as it is
		}
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) == 1 {
		return replace(filepath.Join(dir, entries[0].Name()), dest)
	}
	keep, err := os.MkdirTemp(filepath.Dir(dest), ".unpacked-*")
	if err != nil {
		return err
	}
	if err := os.Rename(dir, keep+"/x"); err != nil {
		os.RemoveAll(keep)
		return err
	}
	defer os.RemoveAll(keep)
	return replace(keep+"/x", dest)
}

// replace moves src to dest, removing what dest was.
func replace(src, dest string) error {
	if err := os.RemoveAll(dest); err != nil {
		return err
	}
	if err := os.Rename(src, dest); err != nil {
		return copyFile(src, dest)
	}
	return nil
}

func copyFile(src, dest string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dest, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

var errNotTar = errors.New("not a tar archive")

func untarGz(src, dir string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return errNotTar
	}
	tr := tar.NewReader(gz)
	first := true
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			if first {
				return errNotTar
			}
			return nil
		}
		if err != nil {
			if first {
				return errNotTar
			}
			return fmt.Errorf("read tar: %w", err)
		}
		first = false
		p, err := safeJoin(dir, hdr.Name)
		if err != nil {
			return err
		}
		mode := os.FileMode(hdr.Mode) & os.ModePerm
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, mode|0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeEntry(p, mode, tr); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if filepath.IsAbs(hdr.Linkname) || strings.Contains(hdr.Linkname, "..") {
				return fmt.Errorf("archive entry %q links to %q, outside the artifact", hdr.Name, hdr.Linkname)
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(hdr.Linkname, p); err != nil {
				return err
			}
		default:
			// hard links, devices, FIFOs: skipped
		}
	}
}

func writeEntry(p string, mode os.FileMode, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if mode == 0 {
		mode = 0o644
	}
	out, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func unzip(src, dir string) error {
	zr, err := zip.OpenReader(src)
	if err != nil {
		return fmt.Errorf("read zip: %w", err)
	}
	defer zr.Close()
	for _, zf := range zr.File {
		p, err := safeJoin(dir, zf.Name)
		if err != nil {
			return err
		}
		if strings.HasSuffix(zf.Name, "/") || zf.FileInfo().IsDir() {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
			continue
		}
		if !zf.Mode().IsRegular() {
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			return err
		}
		err = writeEntry(p, zf.Mode()&os.ModePerm, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
