package git

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"sort"
	"strings"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// FileChange is one file written or deleted by Commit.
type FileChange struct {
	Path    string // slash-separated, relative to the repository root
	Content []byte // the new content (not used with Delete)
	Delete  bool   // remove the file; it must exist
	Create  bool   // the file must not exist yet: creating something that exists is ErrConflict
}

// Signature is a commit's author (also used as committer).
type Signature struct {
	Name  string
	Email string
}

// CommitRequest is one commit to make and push.
type CommitRequest struct {
	// Branch to commit on; empty means the branch the remote HEAD points at ("main" in an
	// empty repository). A branch that does not exist yet is created from the remote HEAD.
	Branch  string
	Message string
	Author  Signature
	Changes []FileChange
}

// PushResult says what Commit did.
type PushResult struct {
	Commit    CommitInfo // the new commit, or the branch tip when nothing changed
	Branch    string
	Unchanged bool // every change was already in place: nothing was committed or pushed
	Attempts  int  // pushes tried (more than one when someone else pushed first)
}

// Validate checks the request before any network work.
func (r CommitRequest) Validate() error {
	if strings.TrimSpace(r.Message) == "" {
		return errdefs.Invalid("message", "", "is required")
	}
	if r.Author.Name == "" || r.Author.Email == "" {
		return errdefs.Invalid("author", r.Author.Name+" <"+r.Author.Email+">", "needs a name and an email")
	}
	if r.Branch != "" && (strings.HasPrefix(r.Branch, "refs/") || !plumbing.ReferenceName("refs/heads/"+r.Branch).IsBranch() ||
		strings.ContainsAny(r.Branch, " ~^:?*[\\") || strings.Contains(r.Branch, "..")) {
		return errdefs.Invalid("branch", r.Branch, "is not a valid branch name (give the short name, e.g. main)")
	}
	if len(r.Changes) == 0 {
		return errdefs.Invalid("changes", "", "at least one file change is required")
	}
	seen := map[string]bool{}
	for i, ch := range r.Changes {
		field := fmt.Sprintf("changes[%d].path", i)
		if !safeTreePath(ch.Path) {
			return errdefs.Invalid(field, ch.Path, "must be a relative slash-separated path inside the repository, not under .git")
		}
		if seen[ch.Path] {
			return errdefs.Invalid(field, ch.Path, "is changed twice in one commit")
		}
		seen[ch.Path] = true
		if ch.Delete && ch.Create {
			return errdefs.Invalid(fmt.Sprintf("changes[%d]", i), ch.Path, "cannot both create and delete")
		}
	}
	return nil
}

// Commit applies req.Changes on top of the branch's current tip, commits and pushes. When the
// push is rejected because the branch moved, it fetches the new tip, re-applies the changes
// (preconditions are checked again) and retries, up to Options.PushAttempts times, with a
// short jittered backoff. Identical content is not committed (PushResult.Unchanged).
func (c *Cache) Commit(ctx context.Context, repo Repo, req CommitRequest) (PushResult, error) {
	if err := req.Validate(); err != nil {
		return PushResult{}, err
	}
	e, err := c.entry(repo.URL)
	if err != nil {
		return PushResult{}, err
	}
	tr, err := c.transportOptions(ctx, repo)
	if err != nil {
		return PushResult{}, err
	}
	var lastErr error
	for attempt := 1; attempt <= c.opts.PushAttempts; attempt++ {
		if attempt > 1 {
			backoff := time.Duration(attempt*attempt)*20*time.Millisecond + rand.N(20*time.Millisecond)
			select {
			case <-ctx.Done():
				return PushResult{}, classify("push", repo.URL, ctx.Err())
			case <-time.After(backoff):
			}
		}
		res, err := c.commitOnce(ctx, e, repo, tr, req)
		res.Attempts = attempt
		if err == nil {
			return res, nil
		}
		if !errors.Is(err, errPushRejected) {
			return res, err
		}
		lastErr = err
		c.log.Info("git push rejected; retrying on the new tip", logKeyRepo, redactURL(repo.URL), "attempt", attempt)
	}
	return PushResult{Attempts: c.opts.PushAttempts}, &Error{Op: "push", URL: redactURL(repo.URL), Kind: ErrConflict,
		Err: fmt.Errorf("rejected %d times, the branch keeps moving: %w", c.opts.PushAttempts, lastErr)}
}

var errPushRejected = errors.New("push rejected")

func (c *Cache) commitOnce(ctx context.Context, e *repoEntry, repo Repo, tr transportOpts, req CommitRequest) (PushResult, error) {
	e.refsMu.Lock()
	e.refs = nil
	e.refsMu.Unlock()
	adv, err := c.advertise(ctx, e, repo)
	if err != nil {
		return PushResult{}, err
	}
	branch := req.Branch
	if branch == "" {
		branch = strings.TrimPrefix(adv.head, "refs/heads/")
		if branch == "" {
			branch = "main"
		}
	}
	tip := adv.refs["refs/heads/"+branch]
	if tip == "" {
		tip = adv.refs["HEAD"] // a new branch starts at the remote HEAD
	}
	if tip != "" && !e.hasCommit(tip) {
		if err := c.fetch(ctx, e, repo); err != nil {
			return PushResult{}, err
		}
	}

	pctx, cancel := context.WithTimeout(c.policyContext(ctx), c.opts.Timeout)
	defer cancel()
	e.mu.Lock()
	defer e.mu.Unlock()
	r, err := e.open()
	if err != nil {
		return PushResult{}, err
	}
	var (
		base    *object.Tree
		parents []plumbing.Hash
	)
	if tip != "" {
		commit, err := r.CommitObject(plumbing.NewHash(tip))
		if err != nil {
			return PushResult{}, &Error{Op: "push", URL: redactURL(repo.URL), Kind: ErrRevisionNotFound, Err: err}
		}
		if base, err = commit.Tree(); err != nil {
			return PushResult{}, err
		}
		parents = []plumbing.Hash{commit.Hash}
	}
	treeHash, err := applyChanges(r.Storer, base, req.Changes)
	if err != nil {
		var fe *Error
		if errors.As(err, &fe) {
			fe.URL = redactURL(repo.URL)
		}
		return PushResult{}, err
	}
	if base != nil && treeHash == base.Hash {
		commit, _ := r.CommitObject(parents[0])
		return PushResult{Commit: commitInfo(commit), Branch: branch, Unchanged: true}, nil
	}
	now := time.Now()
	sig := object.Signature{Name: req.Author.Name, Email: req.Author.Email, When: now}
	commit := &object.Commit{Author: sig, Committer: sig, Message: req.Message, TreeHash: treeHash, ParentHashes: parents}
	obj := r.Storer.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		return PushResult{}, err
	}
	h, err := r.Storer.SetEncodedObject(obj)
	if err != nil {
		return PushResult{}, err
	}
	commit.Hash = h
	local := plumbing.ReferenceName("refs/freshet/push/" + branch)
	if err := r.Storer.SetReference(plumbing.NewHashReference(local, h)); err != nil {
		return PushResult{}, err
	}
	c.pushes.Add(1)
	if c.beforePush != nil {
		c.beforePush()
	}
	start := time.Now()
	remote := gogit.NewRemote(r.Storer, &config.RemoteConfig{Name: "origin", URLs: []string{tr.url}})
	err = remote.PushContext(pctx, &gogit.PushOptions{
		RefSpecs: []config.RefSpec{config.RefSpec(local.String() + ":refs/heads/" + branch)},
		Auth:     tr.auth, CABundle: tr.caBundle, InsecureSkipTLS: tr.insecure, ProxyOptions: tr.proxy,
		ClientCert: tr.clientCert, ClientKey: tr.clientKey,
	})
	c.log.Debug("git push", logKeyRepo, redactURL(repo.URL), logKeySHA, h.String(), logKeyDuration, time.Since(start), "error", err)
	if err != nil {
		k := kindOf(err)
		if k == ErrAuthentication || k == ErrRepositoryNotFound || k == ErrTLS || k == ErrHostKey || k == ErrInvalidRepository || k == ErrNotAllowed {
			return PushResult{}, classifyRemote("push", repo.URL, err)
		}
		return PushResult{}, fmt.Errorf("%w: %s", errPushRejected, causeText(repo.URL, err))
	}
	_ = r.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName("refs/remotes/origin/"+branch), h))
	e.refsMu.Lock()
	e.refs = nil
	e.refsMu.Unlock()
	return PushResult{Commit: commitInfo(commit), Branch: branch}, nil
}

type flatEntry struct {
	mode filemode.FileMode
	hash plumbing.Hash
}

// applyChanges returns the hash of base's tree with changes applied (written to s).
func applyChanges(s storer.EncodedObjectStorer, base *object.Tree, changes []FileChange) (plumbing.Hash, error) {
	files := map[string]flatEntry{}
	if base != nil {
		w := object.NewTreeWalker(base, true, nil)
		defer w.Close()
		for {
			name, entry, err := w.Next()
			if err != nil {
				break
			}
			if entry.Mode == filemode.Dir {
				continue
			}
			files[name] = flatEntry{entry.Mode, entry.Hash}
		}
	}
	conflict := func(p, why string) error {
		return &Error{Op: "commit", Kind: ErrConflict, Err: fmt.Errorf("%s %s", p, why)}
	}
	for _, ch := range changes {
		_, exists := files[ch.Path]
		switch {
		case ch.Delete:
			if !exists {
				return plumbing.ZeroHash, &Error{Op: "commit", Kind: ErrFileNotFound, Err: fmt.Errorf("%s does not exist, so it cannot be deleted", ch.Path)}
			}
			delete(files, ch.Path)
			continue
		case ch.Create && exists:
			return plumbing.ZeroHash, conflict(ch.Path, "already exists")
		}
		for dir := path.Dir(ch.Path); dir != "."; dir = path.Dir(dir) {
			if _, ok := files[dir]; ok {
				return plumbing.ZeroHash, conflict(ch.Path, "cannot be written: "+dir+" is a file")
			}
		}
		for p := range files {
			if strings.HasPrefix(p, ch.Path+"/") {
				return plumbing.ZeroHash, conflict(ch.Path, "cannot be written: it is a directory")
			}
		}
		h, err := writeObject(s, plumbing.BlobObject, ch.Content)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		mode := filemode.Regular
		if old, ok := files[ch.Path]; ok && old.mode == filemode.Executable {
			mode = filemode.Executable
		}
		files[ch.Path] = flatEntry{mode, h}
	}
	return writeTrees(s, files)
}

func writeObject(s storer.EncodedObjectStorer, t plumbing.ObjectType, content []byte) (plumbing.Hash, error) {
	obj := s.NewEncodedObject()
	obj.SetType(t)
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(content); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.SetEncodedObject(obj)
}

// writeTrees writes the tree objects for a flat path → entry map and returns the root's hash.
func writeTrees(s storer.EncodedObjectStorer, files map[string]flatEntry) (plumbing.Hash, error) {
	children := map[string]map[string]object.TreeEntry{"": {}} // dir → name → entry
	var dirs []string
	for p, fe := range files {
		dir, name := path.Split(p)
		dir = strings.TrimSuffix(dir, "/")
		if children[dir] == nil {
			children[dir] = map[string]object.TreeEntry{}
		}
		children[dir][name] = object.TreeEntry{Name: name, Mode: fe.mode, Hash: fe.hash}
		for d := dir; d != ""; d = parentDir(d) {
			if children[d] == nil {
				children[d] = map[string]object.TreeEntry{}
			}
		}
	}
	for d := range children {
		dirs = append(dirs, d)
	}
	// Deepest first, so each directory's subtrees exist before it is written.
	depth := func(d string) int {
		if d == "" {
			return -1
		}
		return strings.Count(d, "/")
	}
	sort.Slice(dirs, func(i, j int) bool { return depth(dirs[i]) > depth(dirs[j]) })
	hashes := map[string]plumbing.Hash{}
	for _, d := range dirs {
		entries := make([]object.TreeEntry, 0, len(children[d]))
		for _, te := range children[d] {
			entries = append(entries, te)
		}
		for sub, h := range hashes {
			if sub != "" && parentDir(sub) == d {
				entries = append(entries, object.TreeEntry{Name: path.Base(sub), Mode: filemode.Dir, Hash: h})
			}
		}
		sort.Slice(entries, func(i, j int) bool { return treeSortKey(entries[i]) < treeSortKey(entries[j]) })
		t := &object.Tree{Entries: entries}
		obj := s.NewEncodedObject()
		if err := t.Encode(obj); err != nil {
			return plumbing.ZeroHash, err
		}
		h, err := s.SetEncodedObject(obj)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		hashes[d] = h
	}
	return hashes[""], nil
}

func parentDir(d string) string {
	if i := strings.LastIndex(d, "/"); i >= 0 {
		return d[:i]
	}
	return ""
}

// treeSortKey orders tree entries as git does: directories compare as if named "name/".
func treeSortKey(te object.TreeEntry) string {
	if te.Mode == filemode.Dir {
		return te.Name + "/"
	}
	return te.Name
}
