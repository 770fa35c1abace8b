// Package git is the GitOps engine's access to git: the sources of truth that applications are
// rendered from, and the installation repository that applications themselves live in.
//
// One Cache holds every repository the runtime reads, on disk, keyed by the normalized repository
// URL, so a thousand applications on one repository share one clone and one fetch per change:
//
//   - Resolve answers which commit a revision (branch, tag, full or short SHA, HEAD or a full
//     ref name) names now, with one cheap ref advertisement (ls-remote) shared by all callers
//     within Options.RefsTTL.
//   - Fetch brings that commit into the cache only if it is not there yet; concurrent callers for
//     one repository share one fetch.
//   - Checkout materializes a commit's tree into a read-only snapshot directory, shared by every
//     caller that asks for the same commit, for rendering; CommitInfo gives author, message and
//     time for sync history; ReadFile reads one file without a checkout.
//   - Commit writes a set of file changes as one commit on a branch and pushes it, re-applying the
//     changes on the new tip and retrying when someone else pushed first.
//
// Errors are *Error values whose Kind is one of the sentinels below; IsTemporary tells a
// network failure, worth retrying with backoff, from a permanent one (authentication, a missing
// repository or revision, a bad certificate) that needs a person.
//
// Transports: https and http (basic auth or a token, an extra CA bundle, optional TLS
// verification skip), ssh (private key, known_hosts), and file:// or an absolute path for a
// local repository (under `freshet up` the installation repository lives in the data dir); the
// file transport runs the git binary's upload-pack and receive-pack, or, without a git binary
// on PATH (the freshet image), go-git's in-process server.
//
// With Options.Policy set (the control plane and hosted runtimes set the operator's), every
// URL is checked before anything is read, and every connection when it is made (redirects,
// names resolving to refused addresses); local paths are handed to git with their symlinks
// resolved, as checked. An Error's text then keeps only what this process knows about a
// network failure — its kind, an HTTP status, a refused or timed-out connection — never what
// the server sent, which may be an internal service's page.
package git
