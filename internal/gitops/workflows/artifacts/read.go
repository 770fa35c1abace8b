package artifacts

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
)

// ErrTooLarge means an artifact read into memory (Read) is larger than its bound.
var ErrTooLarge = errors.New("too large")

// Read fetches an artifact of one file into memory, as Load would put it at a path: a gzipped
// tar or a zip of a single file is that file. It reads at most max bytes of the object and of
// the file (ErrTooLarge beyond). A git artifact, or an archive of several entries, is a
// directory and is refused. The controller reads manifestFrom artifacts with it.
func (m *Mover) Read(ctx context.Context, l Location, max int64) ([]byte, error) {
	if l.Git != nil {
		return nil, fmt.Errorf("%s is a directory (a git checkout): give one file (s3, http or raw)", l)
	}
	if m.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.Timeout)
		defer cancel()
	}
	w := &limitWriter{max: max}
	err := m.fetch(ctx, l, w)
	if w.over { // whatever fetch made of the writer's error
		return nil, fmt.Errorf("%s: %w: more than %d bytes", l, ErrTooLarge, max)
	}
	if err != nil {
		return nil, err
	}
	data := w.buf.Bytes()
	switch {
	case bytes.HasPrefix(data, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return data, nil // as Load: not a gzipped tar, the file as it is
		}
		tr := tar.NewReader(zr)
		var out []byte
		found, first := false, true
		for {
			h, err := tr.Next()
			if err == io.EOF && first {
				return data, nil
			}
			if err == io.EOF {
				break
			}
			if err != nil && first {
				return data, nil // as Load: gzip of something else, the file as it is
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %v", l, err)
			}
			first = false
			if h.Typeflag == tar.TypeDir {
				continue
			}
			if found || h.Typeflag != tar.TypeReg {
				return nil, fmt.Errorf("%s is an archive of several entries (a directory): give one file", l)
			}
			found = true
			if out, err = limitedRead(l, tr, max); err != nil {
				return nil, err
			}
		}
		if !found {
			return nil, fmt.Errorf("%s is an archive of no file", l)
		}
		return out, nil
	case bytes.HasPrefix(data, []byte("PK\x03\x04")):
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", l, err)
		}
		var files []*zip.File
		for _, f := range zr.File {
			if !f.FileInfo().IsDir() {
				files = append(files, f)
			}
		}
		if len(files) != 1 {
			return nil, fmt.Errorf("%s is a zip of %d files: give one file", l, len(files))
		}
		rc, err := files[0].Open()
		if err != nil {
			return nil, fmt.Errorf("%s: %v", l, err)
		}
		defer rc.Close()
		return limitedRead(l, rc, max)
	}
	return data, nil
}

func limitedRead(l Location, r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", l, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w: more than %d bytes unpacked", l, ErrTooLarge, max)
	}
	return b, nil
}

// limitWriter keeps what is written, failing with ErrTooLarge past max bytes.
type limitWriter struct {
	buf  bytes.Buffer
	max  int64
	over bool
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if int64(w.buf.Len()+len(p)) > w.max {
		w.over = true
		return 0, ErrTooLarge
	}
	return w.buf.Write(p)
}
