package render

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// errReadOnly is returned by every write to a rootFS.
var errReadOnly = errors.New("the checkout is read-only")

// rootFS is the file system Kustomize sees: the checkout, read-only, confined to the
// repository root (a path or symlink leading outside does not exist), with reads charged to the
// render's budget, and with some files replaced by in-memory content (the app's kustomization
// with Argo CD's overrides applied).
type rootFS struct {
	j       *job
	overlay map[string][]byte // absolute path → content
}

var _ filesys.FileSystem = (*rootFS)(nil)

// resolve makes p absolute (relative paths are relative to the repository root) and checks
// that it, and whatever symlinks it crosses, stay inside the root.
func (r *rootFS) resolve(p string) (string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(r.j.root, p)
	}
	p = filepath.Clean(p)
	if !within(r.j.root, p) {
		return "", &fs.PathError{Op: "open", Path: p, Err: fmt.Errorf("outside the repository: %w", fs.ErrNotExist)}
	}
	if _, ok := r.overlay[p]; ok {
		return p, nil
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return p, nil // does not exist (yet): callers report not-exist
	}
	if !within(r.j.root, real) {
		return "", &fs.PathError{Op: "open", Path: p, Err: fmt.Errorf("symlink leads outside the repository: %w", fs.ErrNotExist)}
	}
	return real, nil
}

func (r *rootFS) Create(string) (filesys.File, error) { return nil, errReadOnly }
func (r *rootFS) Mkdir(string) error                  { return errReadOnly }
func (r *rootFS) MkdirAll(string) error               { return errReadOnly }
func (r *rootFS) RemoveAll(string) error              { return errReadOnly }
func (r *rootFS) WriteFile(string, []byte) error      { return errReadOnly }

func (r *rootFS) Open(p string) (filesys.File, error) {
	data, err := r.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return &memFile{name: p, Reader: bytes.NewReader(data), size: int64(len(data))}, nil
}

func (r *rootFS) IsDir(p string) bool {
	real, err := r.resolve(p)
	if err != nil {
		return false
	}
	if _, ok := r.overlay[real]; ok {
		return false
	}
	fi, err := os.Stat(real)
	return err == nil && fi.IsDir()
}

func (r *rootFS) ReadDir(p string) ([]string, error) {
	real, err := r.resolve(p)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(real)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, nil
}

func (r *rootFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	real, err := r.resolve(p)
	if err != nil {
		return "", "", err
	}
	if _, ok := r.overlay[real]; ok {
		return filesys.ConfirmedDir(filepath.Dir(real)), filepath.Base(real), nil
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", "", err
	}
	if fi.IsDir() {
		return filesys.ConfirmedDir(real), "", nil
	}
	return filesys.ConfirmedDir(filepath.Dir(real)), filepath.Base(real), nil
}

func (r *rootFS) Exists(p string) bool {
	real, err := r.resolve(p)
	if err != nil {
		return false
	}
	if _, ok := r.overlay[real]; ok {
		return true
	}
	_, err = os.Stat(real)
	return err == nil
}

func (r *rootFS) Glob(pattern string) ([]string, error) {
	if !filepath.IsAbs(pattern) {
		pattern = filepath.Join(r.j.root, pattern)
	}
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	out := matches[:0]
	for _, m := range matches {
		if _, err := r.resolve(m); err == nil {
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (r *rootFS) ReadFile(p string) ([]byte, error) {
	real, err := r.resolve(p)
	if err != nil {
		return nil, err
	}
	if data, ok := r.overlay[real]; ok {
		return data, nil
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: p, Err: errors.New("is a directory")}
	}
	if err := r.j.budget.take(r.j.rel(real), fi.Size()); err != nil {
		return nil, err
	}
	return os.ReadFile(real)
}

func (r *rootFS) Walk(p string, walkFn filepath.WalkFunc) error {
	real, err := r.resolve(p)
	if err != nil {
		return walkFn(p, nil, err)
	}
	return filepath.Walk(real, walkFn)
}

// memFile is a read-only filesys.File over bytes.
type memFile struct {
	*bytes.Reader
	name string
	size int64
}

func (f *memFile) Write([]byte) (int, error)  { return 0, errReadOnly }
func (f *memFile) Close() error               { return nil }
func (f *memFile) Stat() (os.FileInfo, error) { return memInfo{f}, nil }

type memInfo struct{ f *memFile }

func (i memInfo) Name() string       { return filepath.Base(i.f.name) }
func (i memInfo) Size() int64        { return i.f.size }
func (i memInfo) Mode() os.FileMode  { return 0o444 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
