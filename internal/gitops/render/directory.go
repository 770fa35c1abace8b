package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gobwas/glob"

	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// directory renders a plain directory of manifests, as Argo CD does: files ending in .yaml,
// .yml, .json or .jsonnet (in subdirectories too with recurse), filtered by the include and exclude
// globs (matched against the path relative to the app directory). Directories starting with
// "." are skipped. A file that does not parse and does not look like a manifest (no
// apiVersion, kind and metadata) is skipped, as is a YAML file none of whose documents is a
// Kubernetes object; otherwise a bad document is an error naming the file and line.
// A .jsonnet file is evaluated (see jsonnetFile); .libsonnet files are only imported.
func (j *job) directory(ctx context.Context) (*Result, error) {
	opts := j.req.Source.Directory
	if opts == nil {
		opts = &app.DirectorySource{}
	}
	var include, exclude glob.Glob
	var err error
	if opts.Include != "" {
		if include, err = glob.Compile(opts.Include); err != nil {
			return nil, newError(ErrInvalidManifest, "", 0, "spec.source.directory.include %q is not a valid glob: %v", opts.Include, err)
		}
	}
	if opts.Exclude != "" {
		if exclude, err = glob.Compile(opts.Exclude); err != nil {
			return nil, newError(ErrInvalidManifest, "", 0, "spec.source.directory.exclude %q is not a valid glob: %v", opts.Exclude, err)
		}
	}
	out := &output{j: j}
	res := &Result{}
	err = filepath.WalkDir(j.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		relApp, _ := filepath.Rel(j.dir, p)
		relApp = filepath.ToSlash(relApp)
		if d.IsDir() {
			if p != j.dir && (!opts.Recurse || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		ext := strings.ToLower(filepath.Ext(d.Name()))
		switch ext {
		case ".yaml", ".yml", ".json", ".jsonnet":
		default:
			return nil
		}
		if exclude != nil && exclude.Match(relApp) {
			return nil
		}
		if include != nil && !include.Match(relApp) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if fi, err := os.Stat(p); err != nil || fi.IsDir() {
				return nil // a dangling symlink, or one to a directory: not a manifest
			}
		}
		file := j.rel(p)
		if ext == ".jsonnet" {
			return j.jsonnetFile(file, out)
		}
		data, err := j.readFile(p)
		if err != nil {
			return err
		}
		return j.directoryFile(file, data, out)
	})
	if err != nil {
		var re *Error
		if errors.As(err, &re) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, newError(ErrNotFound, j.srcPath, 0, "reading the app directory: %v", err)
	}
	res.Objects = out.objs
	return res, nil
}

func (j *job) directoryFile(file string, data []byte, out *output) error {
	if strings.HasSuffix(strings.ToLower(file), ".json") {
		if err := checkJSON(file, data); err != nil {
			if !looksLikeManifest(data) {
				return nil
			}
			return err
		}
	}
	docs, err := parseManifests(file, data)
	if err != nil {
		if !looksLikeManifest(data) {
			return nil
		}
		return err
	}
	objects := 0
	for _, d := range docs {
		if d.obj != nil && d.obj["kind"] != nil && d.obj["apiVersion"] != nil {
			objects++
		}
	}
	if objects == 0 && !looksLikeManifest(data) {
		return nil // values.yaml, a config file: not manifests
	}
	return toObjects(file, docs, out, true)
}

// checkJSON rejects what YAML would accept but JSON does not (trailing commas, comments),
// naming the line.
func checkJSON(file string, data []byte) error {
	var v any
	err := json.Unmarshal(trimBOM(data), &v)
	if err == nil {
		return nil
	}
	line := 0
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line = bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n")) + 1
	}
	return newError(ErrInvalidManifest, file, line, "invalid JSON: %v", err)
}
