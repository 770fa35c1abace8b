// Package render turns an application's source, checked out in a snapshot directory, into the
// Kubernetes objects it declares, as Argo CD's repo-server does: a plain directory of YAML,
// JSON and Jsonnet manifests (Jsonnet evaluated in-process with go-jsonnet), a Kustomize overlay (built in-process with sigs.k8s.io/kustomize/api, the
// app's kustomize overrides applied the way `kustomize edit` would) or a Helm chart (templated
// in-process with the Helm v3 SDK, like `helm template --include-crds`).
//
// Rendering is bounded: a Renderer runs at most Options.Concurrency renders at once, each
// under Options.Timeout, reading at most Options.MaxInputBytes (Options.MaxFileBytes per file)
// and producing at most Options.MaxOutputBytes and Options.MaxObjects. Renders never write to
// the snapshot and never reach the network: a Kustomize remote base or a Helm chart
// dependency that is not in the repository is an error naming it.
//
// Every object carries the file (relative to the repository root) and, for plain manifests,
// the line it came from. Errors are *Error values naming the file and line where known.
package render

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// Defaults for Options.
const (
	DefaultTimeout        = 90 * time.Second // as Argo CD's exec timeout for render tools
	DefaultMaxFileBytes   = 10 << 20
	DefaultMaxInputBytes  = 256 << 20
	DefaultMaxOutputBytes = 64 << 20
	DefaultMaxObjects     = 10_000
	// DefaultKubeVersion is the Kubernetes version Helm charts see (.Capabilities.KubeVersion)
	// when the destination's is not known.
	DefaultKubeVersion = "v1.34.0"
)

// Options configure a Renderer. Zero fields take the Default* values (Concurrency:
// the number of CPUs).
type Options struct {
	Concurrency    int
	Timeout        time.Duration
	MaxFileBytes   int64
	MaxInputBytes  int64
	MaxOutputBytes int64
	MaxObjects     int
	Logger         *slog.Logger
}

// Validate rejects negative limits.
func (o Options) Validate() error {
	for name, v := range map[string]int64{"concurrency": int64(o.Concurrency), "timeout": int64(o.Timeout),
		"maxFileBytes": o.MaxFileBytes, "maxInputBytes": o.MaxInputBytes, "maxOutputBytes": o.MaxOutputBytes, "maxObjects": int64(o.MaxObjects)} {
		if v < 0 {
			return errdefs.Invalid(name, fmt.Sprint(v), "must not be negative (zero means the default)")
		}
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Concurrency == 0 {
		o.Concurrency = runtime.NumCPU()
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxFileBytes == 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.MaxInputBytes == 0 {
		o.MaxInputBytes = DefaultMaxInputBytes
	}
	if o.MaxOutputBytes == 0 {
		o.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if o.MaxObjects == 0 {
		o.MaxObjects = DefaultMaxObjects
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Renderer renders application sources under the configured bounds. It is safe for
// concurrent use.
type Renderer struct {
	opts     Options
	sem      *semaphore.Weighted
	inflight sync.WaitGroup
}

// New returns a Renderer.
func New(opts Options) (*Renderer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	return &Renderer{opts: opts, sem: semaphore.NewWeighted(int64(opts.Concurrency))}, nil
}

// Wait blocks until every render has finished, including ones whose caller already got a
// timeout (Helm and Kustomize cannot be interrupted; their slot is held until they end).
func (r *Renderer) Wait() { r.inflight.Wait() }

// Request is one render.
type Request struct {
	// Root is the checkout of the repository (a git.Snapshot's Dir). It is only read. For a
	// source naming a chart (Source.Chart, a chart from a chart repository) it is the
	// directory the fetched chart is unpacked in, holding it in the subdirectory Source.Chart
	// (a helmrepo.Chart's Dir); Source.Path is not used.
	Root string
	// Source is the application's source; Source.Path is relative to Root.
	Source app.Source
	// AppName is the application's name: the default Helm release name, and
	// ARGOCD_APP_NAME for commonAnnotationsEnvsubst.
	AppName string
	// Namespace is the destination namespace (Helm's .Release.Namespace).
	Namespace string
	// Revision is the commit being rendered (ARGOCD_APP_REVISION).
	Revision string
	// KubeVersion and APIVersions describe the destination cluster to Helm's .Capabilities;
	// empty means DefaultKubeVersion and the API versions client-go knows.
	KubeVersion string
	APIVersions []string
	// Refs are the checkouts of a multi-source application's ref sources, by ref name: Helm
	// value files written $ref/path are read from them.
	Refs map[string]string
	// Charts fetches Helm chart dependencies from chart repositories and OCI registries
	// (Chart.yaml dependencies not vendored in charts/); nil: such dependencies are
	// ErrRemoteDependency.
	Charts ChartFetcher
}

// ChartFetcher fetches a chart a Helm chart depends on.
type ChartFetcher interface {
	// FetchDependency returns the directory holding chart name, unpacked, at the version
	// (an exact version or a semver range) from repository, as Chart.yaml's dependencies
	// write it: https://…, oci://…, or a repository's name written @name or alias:name. The
	// directory is only read.
	FetchDependency(ctx context.Context, repository, name, version string) (dir string, err error)
}

// Object is one rendered Kubernetes object and where it came from.
type Object struct {
	Object *unstructured.Unstructured
	Source Location
}

// Location is a place in the repository.
type Location struct {
	File string `json:"file,omitempty"` // slash-separated, relative to the repository root ("" when unknown)
	Line int    `json:"line,omitempty"` // 1-based line of the document in File; 0 when unknown (Helm, Kustomize)
}

func (l Location) String() string {
	switch {
	case l.File == "":
		return "(unknown file)"
	case l.Line > 0:
		return fmt.Sprintf("%s:%d", l.File, l.Line)
	}
	return l.File
}

// Result is a render's output.
type Result struct {
	Type     app.SourceType
	Objects  []Object
	Warnings []string // e.g. a missing values file ignored by ignoreMissingValueFiles
}

// Kinds of render failure, found with errors.Is.
var (
	// ErrInvalidManifest: a file or a rendered document is not valid YAML/JSON or not a
	// Kubernetes object.
	ErrInvalidManifest = kind("invalid manifest", errdefs.ErrInvalid)
	// ErrNotFound: the source path, a values file or a referenced file is not in the
	// repository.
	ErrNotFound = kind("not found", errdefs.ErrNotFound)
	// ErrTooLarge: an input or the output exceeds a limit.
	ErrTooLarge = kind("too large", errdefs.ErrTooLarge)
	// ErrTimeout: the render did not finish within Options.Timeout.
	ErrTimeout = kind("render timed out", errdefs.ErrUnavailable)
	// ErrRemoteDependency: a Kustomize remote base or a Helm chart dependency would have to
	// be fetched from the network.
	ErrRemoteDependency = kind("remote dependency not fetched", errdefs.ErrInvalid)
	// ErrUnsupported: a feature Freshet does not implement (config management plugins, OCI charts).
	ErrUnsupported = kind("not supported", errdefs.ErrInvalid)
	// ErrTool: Kustomize or Helm failed (a template error, a bad kustomization).
	ErrTool = kind("render failed", errdefs.ErrInvalid)
)

type errKind struct {
	msg  string
	base error
}

func (k *errKind) Error() string { return k.msg }
func (k *errKind) Unwrap() error { return k.base }

func kind(msg string, base error) error { return &errKind{msg, base} }

// Error is a failed render, naming the file and line when known.
type Error struct {
	Kind error    // one of the Err* kinds
	At   Location // where, when known
	Msg  string   // what is wrong
	Err  error    // the underlying cause, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Kind.Error())
	if e.At.File != "" {
		b.WriteString(": ")
		b.WriteString(e.At.String())
	}
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	return b.String()
}

// Unwrap lets errors.Is find the kind and the cause.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

func newError(k error, file string, line int, format string, args ...any) *Error {
	return &Error{Kind: k, At: Location{File: file, Line: line}, Msg: fmt.Sprintf(format, args...)}
}

// Render renders req's source. It waits for a free slot (or ctx), then renders under the
// timeout. The returned objects are fresh copies the caller owns.
func (r *Renderer) Render(ctx context.Context, req Request) (*Result, error) {
	job, err := r.prepare(req)
	if err != nil {
		return nil, err
	}
	// Waiting for a slot is bounded by the caller's context only; the timeout starts with the
	// render.
	if err := r.sem.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, r.opts.Timeout, errRenderTimeout)
	defer cancel()
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	r.inflight.Add(1)
	go func() {
		defer r.inflight.Done()
		defer r.sem.Release(1)
		var o outcome
		func() {
			defer func() {
				if p := recover(); p != nil {
					o = outcome{nil, newError(ErrTool, job.srcPath, 0, "renderer panicked: %v", p)}
				}
			}()
			o.res, o.err = job.run(ctx)
		}()
		done <- o
	}()
	select {
	case o := <-done:
		if o.err != nil {
			if ctx.Err() != nil {
				return nil, r.ctxError(ctx, ctx.Err())
			}
			return nil, o.err
		}
		return o.res, nil
	case <-ctx.Done():
		return nil, r.ctxError(ctx, ctx.Err())
	}
}

var errRenderTimeout = errors.New("render timeout")

func (r *Renderer) ctxError(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errRenderTimeout) {
		return &Error{Kind: ErrTimeout, Msg: fmt.Sprintf("did not finish within %s", r.opts.Timeout), Err: context.DeadlineExceeded}
	}
	return err
}

// job is one validated render.
type job struct {
	r       *Renderer
	req     Request
	root    string // absolute, symlinks resolved
	dir     string // absolute source directory
	srcPath string // Source.Path cleaned, slash-separated, "" for the root
	typ     app.SourceType
	budget  *budget
	jsonnet *jsonnetImporter // a directory render's, made at its first .jsonnet file
}

func (r *Renderer) prepare(req Request) (*job, error) {
	src := req.Source
	switch {
	case src.Chart != "":
		return r.prepareChart(req)
	case src.Ref != "":
		return nil, newError(ErrUnsupported, "", 0, "spec.source.ref: $ref sources need multiple sources, which are not supported yet")
	}
	if req.Root == "" {
		return nil, errdefs.Invalid("root", "", "is required: the checkout to render")
	}
	root, err := filepath.EvalSymlinks(req.Root)
	if err != nil {
		return nil, newError(ErrNotFound, "", 0, "checkout %s: %v", req.Root, err)
	}
	root, _ = filepath.Abs(root)
	p := path.Clean("/" + strings.TrimSpace(filepath.ToSlash(src.Path)))[1:]
	if strings.HasPrefix(path.Clean(src.Path), "..") {
		return nil, newError(ErrNotFound, src.Path, 0, "spec.source.path must be inside the repository")
	}
	dir := filepath.Join(root, filepath.FromSlash(p))
	real, err := filepath.EvalSymlinks(dir)
	if err != nil || !within(root, real) {
		return nil, newError(ErrNotFound, p, 0, "app path does not exist in the repository at this revision")
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return nil, newError(ErrNotFound, p, 0, "app path is not a directory")
	}
	j := &job{r: r, req: req, root: root, dir: real, srcPath: p,
		budget: &budget{maxFile: r.opts.MaxFileBytes, maxTotal: r.opts.MaxInputBytes}}
	j.typ = src.ExplicitType()
	if j.typ == "" {
		j.typ = detect(real)
	}
	return j, nil
}

// detect picks the source type from the files, as Argo CD does: a Chart.yaml makes a Helm
// chart, a kustomization file a Kustomize overlay, anything else a directory.
func detect(dir string) app.SourceType {
	if exists(filepath.Join(dir, "Chart.yaml")) {
		return app.SourceTypeHelm
	}
	if kustomizationFile(dir) != "" {
		return app.SourceTypeKustomize
	}
	return app.SourceTypeDirectory
}

// kustomizationFileNames are the names kustomize looks for, in its order.
var kustomizationFileNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

func kustomizationFile(dir string) string {
	for _, n := range kustomizationFileNames {
		if fi, err := os.Stat(filepath.Join(dir, n)); err == nil && fi.Mode().IsRegular() {
			return filepath.Join(dir, n)
		}
	}
	return ""
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// within reports whether p is root or inside it (both absolute and clean).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// rel returns p relative to the repository root, slash-separated.
func (j *job) rel(p string) string {
	r, err := filepath.Rel(j.root, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(r)
}

func (j *job) run(ctx context.Context) (*Result, error) {
	var (
		res *Result
		err error
	)
	switch j.typ {
	case app.SourceTypeHelm:
		res, err = j.helm(ctx)
	case app.SourceTypeKustomize:
		res, err = j.kustomize(ctx)
	default:
		res, err = j.directory(ctx)
	}
	if err != nil {
		return nil, err
	}
	res.Type = j.typ
	return res, nil
}

// budget accounts for the bytes a render reads.
type budget struct {
	mu       sync.Mutex
	maxFile  int64
	maxTotal int64
	total    int64
}

// take charges n bytes read from file (a repository-relative name for errors).
func (b *budget) take(file string, n int64) error {
	if n > b.maxFile {
		return newError(ErrTooLarge, file, 0, "file is %d bytes; the limit is %d", n, b.maxFile)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += n
	if b.total > b.maxTotal {
		return newError(ErrTooLarge, file, 0, "the render reads more than %d bytes of input", b.maxTotal)
	}
	return nil
}

// readFile reads a file inside the repository under the budget.
func (j *job) readFile(p string) ([]byte, error) { return j.readFileIn(j.root, p, j.rel(p)) }

// readFileIn reads p, which must stay inside root (symlinks resolved), under the render's
// input budget; name is how errors show it.
func (j *job) readFileIn(root, p, name string) ([]byte, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, newError(ErrNotFound, name, 0, "no such file in the repository")
	}
	if !within(root, real) {
		return nil, newError(ErrNotFound, name, 0, "points outside the repository")
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, newError(ErrNotFound, name, 0, "%v", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, newError(ErrNotFound, name, 0, "is not a regular file")
	}
	if err := j.budget.take(name, fi.Size()); err != nil {
		return nil, err
	}
	return os.ReadFile(real)
}

// output collects rendered objects under the output limits.
type output struct {
	j     *job
	bytes int64
	objs  []Object
}

func (o *output) add(obj *unstructured.Unstructured, at Location, size int) error {
	o.bytes += int64(size)
	if o.bytes > o.j.r.opts.MaxOutputBytes {
		return newError(ErrTooLarge, at.File, at.Line, "the rendered manifests exceed %d bytes", o.j.r.opts.MaxOutputBytes)
	}
	if len(o.objs) >= o.j.r.opts.MaxObjects {
		return newError(ErrTooLarge, at.File, at.Line, "the render produces more than %d objects", o.j.r.opts.MaxObjects)
	}
	o.objs = append(o.objs, Object{Object: obj, Source: at})
	return nil
}
