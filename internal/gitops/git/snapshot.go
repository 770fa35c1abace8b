package git

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

var errEmptyRemote = transport.ErrEmptyRemoteRepository

type transportOpts struct {
	url      string
	auth     transport.AuthMethod
	caBundle []byte
	insecure bool
	// clientCert and clientKey: mutual TLS.
	clientCert, clientKey []byte
	proxy                 transport.ProxyOptions
}

func (c *Cache) transportOptions(ctx context.Context, repo Repo) (transportOpts, error) {
	u, err := parseRepoURL(repo.URL)
	if err != nil {
		return transportOpts{}, err
	}
	user := ""
	if u.User != nil {
		user = u.User.Username()
	}
	auth, err := c.authMethod(repo, u.Scheme, user)
	if err != nil {
		return transportOpts{}, err
	}
	tr := transportOpts{url: remoteURL(repo.URL), auth: auth, caBundle: repo.Credentials.CABundle, insecure: repo.Credentials.InsecureSkipTLSVerify,
		clientCert: repo.Credentials.TLSClientCert, clientKey: repo.Credentials.TLSClientKey}
	if err := c.pin(ctx, &tr, u); err != nil {
		return transportOpts{}, classifyRemote("connect", repo.URL, err)
	}
	return tr, nil
}

// remoteURL is the URL handed to go-git: as given, less trailing slashes (which make
// "repo.git//info/refs" requests that some servers refuse).
func remoteURL(raw string) string {
	s := strings.TrimSpace(raw)
	if strings.Contains(s, "://") {
		s = strings.TrimRight(s, "/")
	}
	return s
}

// CommitInfo describes one commit, for sync history and the UI.
type CommitInfo struct {
	SHA            string    `json:"sha"`
	Author         string    `json:"author"`
	AuthorEmail    string    `json:"authorEmail,omitempty"`
	AuthorTime     time.Time `json:"authorTime"`
	Committer      string    `json:"committer,omitempty"`
	CommitterEmail string    `json:"committerEmail,omitempty"`
	CommitTime     time.Time `json:"commitTime"`
	Message        string    `json:"message"`
	Parents        []string  `json:"parents,omitempty"`
}

// Subject is the first line of the message.
func (ci CommitInfo) Subject() string {
	s, _, _ := strings.Cut(ci.Message, "\n")
	return strings.TrimSpace(s)
}

func commitInfo(c *object.Commit) CommitInfo {
	ci := CommitInfo{
		SHA:    c.Hash.String(),
		Author: c.Author.Name, AuthorEmail: c.Author.Email, AuthorTime: c.Author.When,
		Committer: c.Committer.Name, CommitterEmail: c.Committer.Email, CommitTime: c.Committer.When,
		Message: c.Message,
	}
	for _, p := range c.ParentHashes {
		ci.Parents = append(ci.Parents, p.String())
	}
	return ci
}

// CommitInfo returns the metadata of a commit that is in the cache (after Fetch or Checkout).
func (c *Cache) CommitInfo(ctx context.Context, repo Repo, sha string) (CommitInfo, error) {
	e, err := c.entry(repo.URL)
	if err != nil {
		return CommitInfo{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r, err := e.open()
	if err != nil {
		return CommitInfo{}, err
	}
	commit, err := r.CommitObject(plumbing.NewHash(sha))
	if err != nil {
		return CommitInfo{}, &Error{Op: "log", URL: redactURL(repo.URL), Kind: ErrRevisionNotFound, Err: fmt.Errorf("commit %s: %w", sha, err)}
	}
	return commitInfo(commit), nil
}

// ReadFile returns the content of the file at path (slash-separated, relative to the
// repository root) in a commit that is in the cache, without a checkout.
func (c *Cache) ReadFile(ctx context.Context, repo Repo, sha, path string) ([]byte, error) {
	e, err := c.entry(repo.URL)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r, err := e.open()
	if err != nil {
		return nil, err
	}
	commit, err := r.CommitObject(plumbing.NewHash(sha))
	if err != nil {
		return nil, &Error{Op: "read", URL: redactURL(repo.URL), Kind: ErrRevisionNotFound, Err: fmt.Errorf("commit %s: %w", sha, err)}
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, &Error{Op: "read", URL: redactURL(repo.URL), Kind: ErrRevisionNotFound, Err: err}
	}
	f, err := tree.File(strings.TrimPrefix(path, "/"))
	if err != nil {
		return nil, &Error{Op: "read", URL: redactURL(repo.URL), Kind: ErrFileNotFound, Err: fmt.Errorf("%s at %s", path, sha)}
	}
	if f.Size > c.opts.MaxFileBytes {
		return nil, &Error{Op: "read", URL: redactURL(repo.URL), Kind: ErrTooLarge,
			Err: fmt.Errorf("%s is %d bytes; the limit is %d", path, f.Size, c.opts.MaxFileBytes)}
	}
	rd, err := f.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// Snapshot is a read-only checkout of one commit, shared by every caller that asked for it.
// Call Release when done; the cache may then remove it (see GC).
type Snapshot struct {
	Dir      string // the checkout; files are read-only
	RepoURL  string // normalized repository URL
	Revision string // the revision asked for
	Resolved
	Commit CommitInfo

	once  sync.Once
	entry *snapEntry
	cache *Cache
}

// Release says the caller no longer reads the snapshot. It is safe to call more than once.
func (s *Snapshot) Release() {
	s.once.Do(func() {
		s.cache.snapMu.Lock()
		s.entry.refs--
		s.entry.lastUsed = time.Now()
		s.cache.snapMu.Unlock()
	})
}

type snapEntry struct {
	repoKey  string
	dir      string
	commit   CommitInfo
	refs     int
	lastUsed time.Time
}

// Checkout resolves revision, fetches it if needed and returns a read-only snapshot of its
// tree. Snapshots are keyed by commit, so applications at the same commit share one.
// Submodules are not checked out; a symlink pointing outside the repository is an
// ErrUnsafePath error, as in Argo CD.
func (c *Cache) Checkout(ctx context.Context, repo Repo, revision string) (*Snapshot, error) {
	e, err := c.entry(repo.URL)
	if err != nil {
		return nil, err
	}
	r, err := c.fetchRevision(ctx, e, repo, revision)
	if err != nil {
		return nil, err
	}
	id := e.key + "/" + r.SHA
	// A snapshot is held (refs > 0) before it is handed out; one that GC removed between its
	// creation and our hold is made again.
	for range 3 {
		c.snapMu.Lock()
		if se := c.snaps[id]; se != nil {
			se.refs++
			se.lastUsed = time.Now()
			c.snapMu.Unlock()
			return &Snapshot{Dir: se.dir, RepoURL: e.normalized, Revision: revision, Resolved: r, Commit: se.commit, entry: se, cache: c}, nil
		}
		c.snapMu.Unlock()
		_, err := c.shared(ctx, "checkout:"+id, func(ctx context.Context) (any, error) {
			c.snapMu.Lock()
			se := c.snaps[id]
			c.snapMu.Unlock()
			if se != nil {
				return se, nil
			}
			se, err := c.materialize(e, r.SHA)
			if err != nil {
				return nil, err
			}
			c.snapMu.Lock()
			c.snaps[id] = se
			c.snapMu.Unlock()
			return se, nil
		})
		if err != nil {
			return nil, classify("checkout", repo.URL, err)
		}
	}
	return nil, &Error{Op: "checkout", URL: redactURL(repo.URL), Kind: ErrUnreachable, Err: errors.New("snapshot removed by GC while being checked out; retry")}
}

func (c *Cache) materialize(e *repoEntry, sha string) (*snapEntry, error) {
	c.checkouts.Add(1)
	// A fresh name per materialization: GC removing an old snapshot of the same commit can
	// never touch this one.
	var nonce [4]byte
	_, _ = rand.Read(nonce[:])
	final := filepath.Join(c.dir, "snapshots", e.key, sha+"-"+hex.EncodeToString(nonce[:]))
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Join(c.dir, "tmp"), "checkout-")
	if err != nil {
		return nil, err
	}
	defer removeAll(tmp)

	e.mu.Lock()
	commit, err := c.writeTree(e, sha, tmp)
	e.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := checkSymlinks(tmp); err != nil {
		return nil, err
	}
	if err := makeReadOnly(tmp); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, final); err != nil {
		return nil, err
	}
	return &snapEntry{repoKey: e.key, dir: final, commit: commit, lastUsed: time.Now()}, nil
}

// writeTree writes the commit's files under dir. The caller holds e.mu.
func (c *Cache) writeTree(e *repoEntry, sha, dir string) (CommitInfo, error) {
	r, err := e.open()
	if err != nil {
		return CommitInfo{}, err
	}
	commit, err := r.CommitObject(plumbing.NewHash(sha))
	if err != nil {
		return CommitInfo{}, &Error{Op: "checkout", Kind: ErrRevisionNotFound, Err: err}
	}
	tree, err := commit.Tree()
	if err != nil {
		return CommitInfo{}, err
	}
	var total int64
	err = tree.Files().ForEach(func(f *object.File) error {
		if !safeTreePath(f.Name) {
			return &Error{Op: "checkout", Kind: ErrUnsafePath, Err: fmt.Errorf("path %q", f.Name)}
		}
		total += f.Size
		if total > c.opts.MaxCheckoutBytes {
			return &Error{Op: "checkout", Kind: ErrTooLarge,
				Err: fmt.Errorf("commit %s holds more than %d bytes of files", sha, c.opts.MaxCheckoutBytes)}
		}
		full := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		switch f.Mode {
		case filemode.Symlink:
			target, err := f.Contents()
			if err != nil {
				return err
			}
			return os.Symlink(target, full)
		case filemode.Regular, filemode.Executable, filemode.Deprecated:
			perm := os.FileMode(0o644)
			if f.Mode == filemode.Executable {
				perm = 0o755
			}
			return writeBlob(f, full, perm)
		}
		return nil
	})
	if err != nil {
		return CommitInfo{}, err
	}
	return commitInfo(commit), nil
}

func writeBlob(f *object.File, path string, perm os.FileMode) error {
	rd, err := f.Reader()
	if err != nil {
		return err
	}
	defer rd.Close()
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, rd); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// safeTreePath refuses tree paths that could escape the checkout or touch git metadata.
func safeTreePath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || !filepath.IsLocal(filepath.FromSlash(p)) {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.EqualFold(seg, ".git") {
			return false
		}
	}
	return true
}

// checkSymlinks fails if any symlink under root resolves outside it.
func checkSymlinks(root string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		outside := filepath.IsAbs(target) || !filepath.IsLocal(filepath.Join(filepath.Dir(rel), target))
		if !outside {
			if resolved, err := filepath.EvalSymlinks(p); err == nil {
				inside, _ := filepath.Rel(realRoot, resolved)
				outside = !filepath.IsLocal(inside) && inside != "."
			}
		}
		if outside {
			return &Error{Op: "checkout", Kind: ErrUnsafePath,
				Err: fmt.Errorf("symlink %s points outside the repository (%s)", filepath.ToSlash(rel), target)}
		}
		return nil
	})
}

func makeReadOnly(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, p)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			return os.Chmod(p, info.Mode().Perm()&^0o222)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Deepest first, so a read-only parent never blocks a child's chmod.
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		if err := os.Chmod(d, 0o555); err != nil {
			return err
		}
	}
	return nil
}

// removeAll removes a tree that may hold read-only directories.
func removeAll(root string) error {
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	return os.RemoveAll(root)
}

// GC removes snapshots nobody holds, keeping the keep most recently used ones of each
// repository (so the next refresh of an unchanged application needs no checkout). It returns
// how many it removed.
func (c *Cache) GC(keep int) (int, error) {
	c.snapMu.Lock()
	byRepo := map[string][]string{}
	for id, se := range c.snaps {
		byRepo[se.repoKey] = append(byRepo[se.repoKey], id)
	}
	var victims []*snapEntry
	for _, ids := range byRepo {
		sort.Slice(ids, func(i, j int) bool { return c.snaps[ids[i]].lastUsed.After(c.snaps[ids[j]].lastUsed) })
		for i, id := range ids {
			se := c.snaps[id]
			if i < keep || se.refs > 0 {
				continue
			}
			delete(c.snaps, id)
			victims = append(victims, se)
		}
	}
	c.snapMu.Unlock()
	var errs []error
	for _, se := range victims {
		if err := removeAll(se.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return len(victims), errors.Join(errs...)
}
