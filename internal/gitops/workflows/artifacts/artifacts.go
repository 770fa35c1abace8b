// Package artifacts moves a workflow's artifacts: it loads an input artifact from its location
// (an S3-compatible bucket, a git repository, an HTTP URL, or raw data) to a path, and saves an
// output artifact from a path to its location (S3, or an HTTP PUT), archived as Argo Workflows
// archives them: tar and gzip by default, zip, or none (the file as it is). It also deletes S3
// objects (artifactGC).
//
// The emissary runs it inside a workflow step's pod (Spec is what the workflow controller gives
// it); the controller itself deletes (artifactGC) and reads a resource template's manifest
// (Read). Every connection goes through a netpolicy.Policy: tenant-given URLs reach only the
// addresses the runtime's operator allows. Credentials come from environment variables the
// pod's spec fills from Kubernetes Secrets (their names are in the Spec, never the values), or
// are set by the controller (Delete, Read).
package artifacts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// Archive strategies.
const (
	ArchiveTar  = "tar"  // tar and gzip: the default
	ArchiveNone = "none" // the file as it is (files only)
	ArchiveZip  = "zip"
)

// Spec is what the emissary moves for one step: its input artifacts before the command, its
// output artifacts after it.
type Spec struct {
	Inputs  []Input  `json:"inputs,omitempty"`
	Outputs []Output `json:"outputs,omitempty"`
	// PrivateNetworks are the refused ranges the artifacts' URLs may reach anyway
	// (netpolicy.Options.PrivateNetworks); a hybrid runtime's is "all".
	PrivateNetworks []string `json:"privateNetworks,omitempty"`
}

// Input is one input artifact: where it comes from and where it goes.
type Input struct {
	Name     string   `json:"name"`
	Path     string   `json:"path"`
	Mode     *int32   `json:"mode,omitempty"`
	Location Location `json:"location"`
}

// Output is one output artifact: the path it is read from and where it is stored.
type Output struct {
	Name     string   `json:"name"`
	Path     string   `json:"path"`
	Optional bool     `json:"optional,omitempty"`
	Archive  string   `json:"archive,omitempty"` // ArchiveTar (""), ArchiveNone or ArchiveZip
	Level    *int     `json:"level,omitempty"`   // gzip compression level
	Location Location `json:"location"`
}

// Location is where an artifact is: exactly one field is set.
type Location struct {
	S3   *S3   `json:"s3,omitempty"`
	Git  *Git  `json:"git,omitempty"`
	HTTP *HTTP `json:"http,omitempty"`
	Raw  *Raw  `json:"raw,omitempty"`
}

// S3 is an object in an S3-compatible bucket.
type S3 struct {
	Endpoint string `json:"endpoint"` // host[:port]
	Bucket   string `json:"bucket"`
	Region   string `json:"region,omitempty"`
	Key      string `json:"key"`
	Insecure bool   `json:"insecure,omitempty"` // plain HTTP
	// AccessKeyEnv and SecretKeyEnv name the environment variables holding the credentials
	// (inside a pod); AccessKey and SecretKey are the credentials themselves (the controller).
	AccessKeyEnv string `json:"accessKeyEnv,omitempty"`
	SecretKeyEnv string `json:"secretKeyEnv,omitempty"`
	AccessKey    string `json:"-"`
	SecretKey    string `json:"-"`
}

// Git is a git repository checked out at a revision.
type Git struct {
	Repo     string `json:"repo"`
	Revision string `json:"revision,omitempty"`
	Depth    int    `json:"depth,omitempty"`
	// UsernameEnv and PasswordEnv name the environment variables holding HTTP credentials.
	UsernameEnv string `json:"usernameEnv,omitempty"`
	PasswordEnv string `json:"passwordEnv,omitempty"`
	// DisableSubmodules is accepted; submodules are never fetched.
	DisableSubmodules bool `json:"disableSubmodules,omitempty"`
}

// HTTP is a URL: GET for an input, PUT for an output.
type HTTP struct {
	URL     string   `json:"url"`
	Headers []Header `json:"headers,omitempty"`
}

// Header is an HTTP header sent with the request.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Raw is an input artifact's content, given in the workflow.
type Raw struct {
	Data string `json:"data"`
}

// Kind names the location's kind ("s3", "git", "http", "raw"; "" for none).
func (l Location) Kind() string {
	switch {
	case l.S3 != nil:
		return "s3"
	case l.Git != nil:
		return "git"
	case l.HTTP != nil:
		return "http"
	case l.Raw != nil:
		return "raw"
	}
	return ""
}

// String is a short description for messages (never credentials).
func (l Location) String() string {
	switch {
	case l.S3 != nil:
		return fmt.Sprintf("s3://%s/%s (at %s)", l.S3.Bucket, l.S3.Key, l.S3.Endpoint)
	case l.Git != nil:
		return fmt.Sprintf("git %s at %s", l.Git.Repo, orDefault(l.Git.Revision, "HEAD"))
	case l.HTTP != nil:
		return l.HTTP.URL
	case l.Raw != nil:
		return "raw data"
	}
	return "no location"
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// ErrNotFound means an input artifact's object, URL or revision does not exist.
var ErrNotFound = errors.New("not found")

// Mover moves artifacts through one network policy.
type Mover struct {
	Policy *netpolicy.Policy
	// Getenv reads the credentials' environment variables (os.Getenv when nil).
	Getenv func(string) string
	// Timeout bounds each transfer (none when 0).
	Timeout time.Duration
}

func (m *Mover) getenv(k string) string {
	if k == "" {
		return ""
	}
	if m.Getenv != nil {
		return m.Getenv(k)
	}
	return os.Getenv(k)
}

func (m *Mover) httpClient() *http.Client {
	if m.Policy == nil {
		return &http.Client{Timeout: m.Timeout}
	}
	return m.Policy.HTTPClient(m.Timeout)
}

// s3Client returns a client for the location's endpoint, its credentials resolved.
func (m *Mover) s3Client(l *S3) (*minio.Client, error) {
	ak, sk := l.AccessKey, l.SecretKey
	if ak == "" {
		ak = m.getenv(l.AccessKeyEnv)
	}
	if sk == "" {
		sk = m.getenv(l.SecretKeyEnv)
	}
	var creds *credentials.Credentials
	if ak != "" || sk != "" {
		creds = credentials.NewStaticV4(ak, sk, "")
	} else {
		creds = credentials.NewStatic("", "", "", credentials.SignatureAnonymous)
	}
	return minio.New(l.Endpoint, &minio.Options{Creds: creds, Secure: !l.Insecure, Region: l.Region,
		Transport: m.httpClient().Transport, BucketLookup: minio.BucketLookupPath})
}

// Delete deletes an S3 object; one that is gone already is not an error.
func (m *Mover) Delete(ctx context.Context, l *S3) error {
	c, err := m.s3Client(l)
	if err != nil {
		return err
	}
	err = c.RemoveObject(ctx, l.Bucket, l.Key, minio.RemoveObjectOptions{})
	if err != nil && minio.ToErrorResponse(err).Code != "NoSuchKey" {
		return fmt.Errorf("delete s3://%s/%s: %w", l.Bucket, l.Key, err)
	}
	return nil
}

// Stat reports whether an S3 object exists.
func (m *Mover) Stat(ctx context.Context, l *S3) (bool, error) {
	c, err := m.s3Client(l)
	if err != nil {
		return false, err
	}
	_, err = c.StatObject(ctx, l.Bucket, l.Key, minio.StatObjectOptions{})
	if err != nil {
		if r := minio.ToErrorResponse(err); r.Code == "NoSuchKey" || r.StatusCode == http.StatusNotFound {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// Load fetches an input artifact and puts it at in.Path: an archive (tar+gzip or zip) is
// unpacked there (a single top-level entry becomes the path itself, as Argo does), anything else
// is written as the file. Mode, when set, is applied to what was written.
func (m *Mover) Load(ctx context.Context, in Input) error {
	if in.Path == "" || !filepath.IsAbs(in.Path) {
		return fmt.Errorf("path %q must be absolute", in.Path)
	}
	if m.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.Timeout)
		defer cancel()
	}
	if err := os.MkdirAll(filepath.Dir(in.Path), 0o755); err != nil {
		return err
	}
	if in.Location.Git != nil {
		if err := m.loadGit(ctx, in.Location.Git, in.Path); err != nil {
			return err
		}
		return chmod(in.Path, in.Mode)
	}
	tmp, err := os.CreateTemp(filepath.Dir(in.Path), ".artifact-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	err = m.fetch(ctx, in.Location, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := unpack(tmp.Name(), in.Path); err != nil {
		return err
	}
	return chmod(in.Path, in.Mode)
}

func (m *Mover) fetch(ctx context.Context, l Location, w io.Writer) error {
	switch {
	case l.Raw != nil:
		_, err := io.WriteString(w, l.Raw.Data)
		return err
	case l.HTTP != nil:
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.HTTP.URL, nil)
		if err != nil {
			return err
		}
		for _, h := range l.HTTP.Headers {
			req.Header.Add(h.Name, h.Value)
		}
		resp, err := m.httpClient().Do(req)
		if err != nil {
			return fmt.Errorf("GET %s: %s", l.HTTP.URL, netpolicy.Describe(err))
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("GET %s: %w (HTTP 404)", l.HTTP.URL, ErrNotFound)
		}
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("GET %s: HTTP %d", l.HTTP.URL, resp.StatusCode)
		}
		_, err = io.Copy(w, resp.Body)
		return err
	case l.S3 != nil:
		c, err := m.s3Client(l.S3)
		if err != nil {
			return err
		}
		obj, err := c.GetObject(ctx, l.S3.Bucket, l.S3.Key, minio.GetObjectOptions{})
		if err != nil {
			return s3Err(l.S3, err)
		}
		defer obj.Close()
		if _, err := io.Copy(w, obj); err != nil {
			return s3Err(l.S3, err)
		}
		return nil
	}
	return errors.New("the artifact has no location")
}

func s3Err(l *S3, err error) error {
	r := minio.ToErrorResponse(err)
	switch {
	case r.Code == "NoSuchKey":
		return fmt.Errorf("s3://%s/%s: %w (no such key)", l.Bucket, l.Key, ErrNotFound)
	case r.Code == "NoSuchBucket":
		return fmt.Errorf("s3://%s/%s: %w (no such bucket)", l.Bucket, l.Key, ErrNotFound)
	case r.Code != "":
		return fmt.Errorf("s3://%s/%s at %s: %s: %s", l.Bucket, l.Key, l.Endpoint, r.Code, r.Message)
	}
	return fmt.Errorf("s3://%s/%s at %s: %s", l.Bucket, l.Key, l.Endpoint, netpolicy.Describe(err))
}

// ErrMissing means an output artifact's path does not exist.
var ErrMissing = errors.New("no such file or directory")

// Save archives out.Path as out.Archive says and stores it at out.Location (S3: PUT object;
// HTTP: PUT to the URL). It returns the size stored.
func (m *Mover) Save(ctx context.Context, out Output) (int64, error) {
	st, err := os.Stat(out.Path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("%s: %w", out.Path, ErrMissing)
	}
	if err != nil {
		return 0, err
	}
	if m.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.Timeout)
		defer cancel()
	}
	tmp, err := os.CreateTemp("", ".artifact-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	switch out.Archive {
	case "", ArchiveTar:
		err = writeTarGz(tmp, out.Path, out.Level)
	case ArchiveZip:
		err = writeZip(tmp, out.Path)
	case ArchiveNone:
		if st.IsDir() {
			return 0, fmt.Errorf("%s is a directory: archive none stores one file; use tar or zip", out.Path)
		}
		var f *os.File
		if f, err = os.Open(out.Path); err == nil {
			_, err = io.Copy(tmp, f)
			f.Close()
		}
	default:
		return 0, fmt.Errorf("archive %q: must be tar, zip or none", out.Archive)
	}
	if err != nil {
		return 0, fmt.Errorf("archive %s: %w", out.Path, err)
	}
	size, err := tmp.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	l := out.Location
	switch {
	case l.S3 != nil:
		c, err := m.s3Client(l.S3)
		if err != nil {
			return 0, err
		}
		if _, err := c.PutObject(ctx, l.S3.Bucket, l.S3.Key, tmp, size, minio.PutObjectOptions{ContentType: contentType(out.Archive)}); err != nil {
			return 0, s3Err(l.S3, err)
		}
	case l.HTTP != nil:
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, l.HTTP.URL, tmp)
		if err != nil {
			return 0, err
		}
		req.ContentLength = size
		for _, h := range l.HTTP.Headers {
			req.Header.Add(h.Name, h.Value)
		}
		resp, err := m.httpClient().Do(req)
		if err != nil {
			return 0, fmt.Errorf("PUT %s: %s", l.HTTP.URL, netpolicy.Describe(err))
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return 0, fmt.Errorf("PUT %s: HTTP %d", l.HTTP.URL, resp.StatusCode)
		}
	default:
		return 0, fmt.Errorf("an output artifact is stored in s3 or http, not %s", orDefault(l.Kind(), "nowhere"))
	}
	return size, nil
}

func contentType(archive string) string {
	switch archive {
	case "", ArchiveTar:
		return "application/gzip"
	case ArchiveZip:
		return "application/zip"
	}
	return "application/octet-stream"
}

func chmod(path string, mode *int32) error {
	if mode == nil {
		return nil
	}
	m := os.FileMode(*mode) & os.ModePerm
	return filepath.Walk(path, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		return os.Chmod(p, m)
	})
}

// safeJoin joins an archive entry's name under dir, refusing names that leave it.
func safeJoin(dir, name string) (string, error) {
	n := strings.ReplaceAll(name, "\\", "/")
	for _, part := range strings.Split(n, "/") {
		if part == ".." {
			return "", fmt.Errorf("archive entry %q leaves the artifact's directory", name)
		}
	}
	return filepath.Join(dir, filepath.Clean("/"+n)), nil
}
