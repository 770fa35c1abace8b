package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Provider names a git provider whose webhooks Freshet understands. The values are the path
// segment of the webhook endpoint.
type Provider string

// Providers.
const (
	GitHub    Provider = "github"
	GitLab    Provider = "gitlab"
	Gitea     Provider = "gitea"
	Bitbucket Provider = "bitbucket" // Bitbucket Cloud
)

// Providers lists the supported providers.
func Providers() []Provider { return []Provider{GitHub, GitLab, Gitea, Bitbucket} }

// ParseProvider returns the Provider named s (as in the webhook URL).
func ParseProvider(s string) (Provider, error) {
	switch p := Provider(s); p {
	case GitHub, GitLab, Gitea, Bitbucket:
		return p, nil
	}
	return "", errdefs.Invalid("provider", s, "is not a supported git provider: use github, gitlab, gitea or bitbucket")
}

// DefaultMaxBodyBytes bounds webhook bodies unless [MaxBodyBytes] says otherwise. Real pushes
// stay far below it; GitHub itself drops payloads over 25 MB.
const DefaultMaxBodyBytes = 5 << 20

// Errors of this package. Each wraps an errdefs kind, so the API edge maps them to a status code.
var (
	// ErrSignature: the delivery's signature or token is missing or wrong (401).
	ErrSignature = fmt.Errorf("webhook signature verification failed: %w", errdefs.ErrUnauthenticated)
	// ErrUnsupportedEvent: a well-formed delivery of an event Freshet does not build from (an
	// issue comment, a star, a push to refs/notes/…). It wraps errdefs.ErrInvalid, but handlers
	// should answer 202 Accepted with the message, so that providers do not show the delivery as
	// failed when a user subscribed to more events than Freshet needs.
	ErrUnsupportedEvent = fmt.Errorf("event is not supported: %w", errdefs.ErrInvalid)
	// ErrNoSecret: the trigger has no secret, so no delivery can be verified. It is a server-side
	// misconfiguration and deliberately wraps no client error kind (500).
	ErrNoSecret = errors.New("webhook secret is not configured: refusing unsigned deliveries (set a secret on the trigger and in the provider, or allow unsigned webhooks explicitly)")
)

// Option changes how [Parse] treats a delivery.
type Option func(*options)

type options struct {
	allowUnsigned bool
	maxBody       int64
}

// AllowUnsigned accepts deliveries without verifying them when the configured secret is empty.
// Anyone who can reach the endpoint can then start builds; use it only on trusted networks.
// With a non-empty secret deliveries are always verified.
func AllowUnsigned() Option { return func(o *options) { o.allowUnsigned = true } }

// MaxBodyBytes bounds the body Parse accepts (n > 0); the default is [DefaultMaxBodyBytes].
func MaxBodyBytes(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.maxBody = n
		}
	}
}

func buildOptions(opts []Option) options {
	o := options{maxBody: DefaultMaxBodyBytes}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// ReadBody reads a request body of at most max bytes (max <= 0 means [DefaultMaxBodyBytes]). A
// longer body is an errdefs.ErrTooLarge error; it reads at most max+1 bytes either way.
func ReadBody(r io.Reader, max int64) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxBodyBytes
	}
	body, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("read webhook body: %w: %w", errdefs.ErrInvalid, err)
	}
	if int64(len(body)) > max {
		return nil, tooLarge(max)
	}
	return body, nil
}

func tooLarge(max int64) error {
	return fmt.Errorf("webhook body is larger than %d bytes: %w", max, errdefs.ErrTooLarge)
}

// Kind is what happened, independent of the provider.
type Kind string

// Kinds.
const (
	KindPush        Kind = "push"        // commits pushed to (or a deletion of) a branch
	KindTag         Kind = "tag"         // a tag pushed or deleted
	KindPullRequest Kind = "pullrequest" // a pull (merge) request opened, updated, closed, …
	KindRelease     Kind = "release"     // a release published, edited, …
	KindPing        Kind = "ping"        // the provider checks that the endpoint answers
)

// Pull request actions in Event.Action, normalized across providers to GitHub's names. merged
// is a closed pull request whose changes were merged; closed is one closed without merging.
// Providers may send other actions (approved, labeled, …); they are passed through.
const (
	ActionOpened      = "opened"
	ActionClosed      = "closed"
	ActionMerged      = "merged"
	ActionReopened    = "reopened"
	ActionEdited      = "edited"
	ActionSynchronize = "synchronize" // new commits on the source branch
)

// Release actions in Event.Action. Only published starts builds for the "release" event.
const (
	ActionPublished = "published"
)

// Event is one webhook delivery, normalized. Fields a provider does not send are empty.
type Event struct {
	Provider Provider `json:"provider"`
	// DeliveryID identifies the delivery; a redelivery of the same event carries the same id
	// (GitHub X-GitHub-Delivery, GitLab Idempotency-Key or X-Gitlab-Event-UUID, Gitea
	// X-Gitea-Delivery, Bitbucket X-Request-UUID). Bitbucket pushes of several refs yield one
	// Event per ref ([ParseAll]); the second and later get "#2", "#3", … appended.
	DeliveryID string `json:"deliveryId"`
	Kind       Kind   `json:"kind"`
	// Action is the pull request or release action (opened, synchronize, merged, published, …).
	Action string `json:"action,omitempty"`
	Repo   Repo   `json:"repo"`
	// Ref is the full ref to fetch: refs/heads/<branch>, refs/tags/<tag>, or for pull requests
	// the provider's pull request head ref (refs/pull/<n>/head on GitHub and Gitea,
	// refs/merge-requests/<iid>/head on GitLab; Bitbucket has none, so the source branch).
	Ref string `json:"ref,omitempty"`
	// Branch is the pushed branch, or the pull request's source branch.
	Branch string `json:"branch,omitempty"`
	// Tag is the pushed tag or the release's tag.
	Tag string `json:"tag,omitempty"`
	// SHA is the commit to build: the pushed commit (a tag's commit, not the tag object) or the
	// pull request's head commit.
	SHA string `json:"sha,omitempty"`
	// Before is the previous commit of the ref (all zeros when the ref was created).
	Before  string `json:"before,omitempty"`
	Created bool   `json:"created,omitempty"` // the push created the branch or tag
	Deleted bool   `json:"deleted,omitempty"` // the push deleted the branch or tag; never builds
	// Commits are the pushed commits as the provider lists them (providers cap the list).
	Commits []Commit `json:"commits,omitempty"`
	// ModifiedFiles is the sorted union of the commits' added, modified and removed files.
	ModifiedFiles []string `json:"modifiedFiles,omitempty"`
	// FilesIncomplete says ModifiedFiles may miss files: the provider capped the commit list,
	// or sends no file lists at all (Bitbucket pushes, every pull request event). A caller that
	// can ask the provider's API for the full list should fill ModifiedFiles and clear this.
	FilesIncomplete bool         `json:"filesIncomplete,omitempty"`
	HeadCommit      *Commit      `json:"headCommit,omitempty"`
	PullRequest     *PullRequest `json:"pullRequest,omitempty"`
	Sender          User         `json:"sender"`
}

// Repo is the repository the event happened in (for a pull request: the target repository).
type Repo struct {
	FullName      string `json:"fullName"` // owner/name; GitLab subgroups: group/sub/name
	Owner         string `json:"owner"`
	Name          string `json:"name"`
	CloneURL      string `json:"cloneUrl,omitempty"`
	SSHURL        string `json:"sshUrl,omitempty"`
	HTMLURL       string `json:"htmlUrl,omitempty"`
	DefaultBranch string `json:"defaultBranch,omitempty"` // empty when the provider does not say (Bitbucket)
}

// Commit is one commit of a push.
type Commit struct {
	ID       string   `json:"id"`
	Message  string   `json:"message,omitempty"`
	Author   User     `json:"author"`
	URL      string   `json:"url,omitempty"`
	Added    []string `json:"added,omitempty"`
	Modified []string `json:"modified,omitempty"`
	Removed  []string `json:"removed,omitempty"`
}

// PullRequest describes the pull (merge) request of a pull request event.
type PullRequest struct {
	Number       int    `json:"number"` // GitLab: the iid
	Title        string `json:"title,omitempty"`
	SourceBranch string `json:"sourceBranch"`
	TargetBranch string `json:"targetBranch"`
	HeadSHA      string `json:"headSha,omitempty"` // Bitbucket sends a 12-character short hash
	URL          string `json:"url,omitempty"`
	Merged       bool   `json:"merged,omitempty"`
	// SourceRepo is the full name of the repository the changes come from. Fork is true when it
	// differs from the target repository (or is gone); fork pull requests only build when the
	// trigger allows them.
	SourceRepo string `json:"sourceRepo,omitempty"`
	Fork       bool   `json:"fork,omitempty"`
}

// User is a person as the provider names them; any field may be empty.
type User struct {
	Login string `json:"login,omitempty"`
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
}

// CodefreshName names the event the way Codefresh git triggers do: push.heads, push.tags,
// pullrequest.<action> (pullrequest.merged for a merged one), release for a published release and
// release.<action> for other release actions. Pings have no name ("").
func (e Event) CodefreshName() string {
	switch e.Kind {
	case KindPush:
		return "push.heads"
	case KindTag:
		return "push.tags"
	case KindPullRequest:
		if e.Action == "" {
			return "pullrequest"
		}
		return "pullrequest." + e.Action
	case KindRelease:
		if e.Action == ActionPublished || e.Action == "" {
			return "release"
		}
		return "release." + e.Action
	}
	return ""
}

// RefName is the name trigger branch filters look at: the branch of a push or the source branch
// of a pull request, and the tag of a tag push or release (as Codefresh does).
func (e Event) RefName() string {
	if e.Kind == KindTag || e.Kind == KindRelease {
		return e.Tag
	}
	return e.Branch
}

// Parse verifies and decodes one webhook delivery from provider. h and body are the request's
// headers and raw body; secret is the trigger's webhook secret. The signature (or GitLab token)
// is checked before the body is decoded. A Bitbucket push of several refs returns the first;
// [ParseAll] returns them all.
func Parse(provider Provider, h http.Header, body []byte, secret string, opts ...Option) (Event, error) {
	evs, err := ParseAll(provider, h, body, secret, opts...)
	if err != nil {
		return Event{}, err
	}
	return evs[0], nil
}

// ParseAll is [Parse] for deliveries that describe several refs at once (Bitbucket pushes list
// one change per ref). It returns at least one event when err is nil.
func ParseAll(provider Provider, h http.Header, body []byte, secret string, opts ...Option) ([]Event, error) {
	o := buildOptions(opts)
	if _, err := ParseProvider(string(provider)); err != nil {
		return nil, err
	}
	if int64(len(body)) > o.maxBody {
		return nil, tooLarge(o.maxBody)
	}
	if secret == "" && !o.allowUnsigned {
		return nil, fmt.Errorf("%s webhook: %w", provider, ErrNoSecret)
	}
	if secret != "" {
		if err := verify(provider, h, body, secret); err != nil {
			return nil, err
		}
	}
	if err := checkContentType(provider, h); err != nil {
		return nil, err
	}
	var (
		evs []Event
		err error
	)
	switch provider {
	case GitHub:
		evs, err = parseGitHub(h, body)
	case GitLab:
		evs, err = parseGitLab(h, body)
	case Gitea:
		evs, err = parseGitea(h, body)
	case Bitbucket:
		evs, err = parseBitbucket(h, body)
	}
	if err != nil {
		return nil, err
	}
	for i := range evs {
		evs[i].Provider = provider
		evs[i].ModifiedFiles = modifiedFiles(evs[i].Commits)
	}
	return evs, nil
}

// Verify checks a delivery's signature (or GitLab token) against secret, as [Parse] does before
// it reads the body, for callers that keep the provider's payload as it is (the runtime's Argo
// Events git sources). An empty secret is [ErrNoSecret]; a failure wraps [ErrSignature].
func Verify(provider Provider, h http.Header, body []byte, secret string) error {
	if _, err := ParseProvider(string(provider)); err != nil {
		return err
	}
	if secret == "" {
		return fmt.Errorf("%s webhook: %w", provider, ErrNoSecret)
	}
	return verify(provider, h, body, secret)
}

// verify checks the delivery's signature or token against secret.
func verify(p Provider, h http.Header, body []byte, secret string) error {
	switch p {
	case GitHub:
		return verifyHMAC(h, body, secret, "X-Hub-Signature-256", "sha256=", "GitHub")
	case Bitbucket:
		return verifyHMAC(h, body, secret, "X-Hub-Signature", "sha256=", "Bitbucket")
	case Gitea:
		// Gitea signs in X-Gitea-Signature (Forgejo also in X-Forgejo-Signature); recent versions
		// add X-Hub-Signature-256. The first present is checked.
		switch {
		case h.Get("X-Gitea-Signature") != "":
			return verifyHMAC(h, body, secret, "X-Gitea-Signature", "", "Gitea")
		case h.Get("X-Forgejo-Signature") != "":
			return verifyHMAC(h, body, secret, "X-Forgejo-Signature", "", "Gitea")
		case h.Get("X-Hub-Signature-256") != "":
			return verifyHMAC(h, body, secret, "X-Hub-Signature-256", "sha256=", "Gitea")
		}
		return fmt.Errorf("missing X-Gitea-Signature header: set the secret in the Gitea webhook settings: %w", ErrSignature)
	case GitLab:
		got := h.Get("X-Gitlab-Token")
		if got == "" {
			return fmt.Errorf("missing X-Gitlab-Token header: set the secret token in the GitLab webhook settings: %w", ErrSignature)
		}
		// Hash both sides so the comparison takes the same time whatever the lengths.
		a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(secret))
		if subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
			return fmt.Errorf("X-Gitlab-Token does not match the trigger's secret: %w", ErrSignature)
		}
		return nil
	}
	return fmt.Errorf("provider %q: %w", p, errdefs.ErrInvalid)
}

func verifyHMAC(h http.Header, body []byte, secret, header, prefix, providerName string) error {
	v := strings.TrimSpace(h.Get(header))
	if v == "" {
		return fmt.Errorf("missing %s header: set the secret in the %s webhook settings: %w", header, providerName, ErrSignature)
	}
	hexSig, ok := strings.CutPrefix(v, prefix)
	if !ok {
		return fmt.Errorf("%s header is not of the form %q: %w", header, prefix+"<hex HMAC-SHA256>", ErrSignature)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("%s header is not of the form %q: %w", header, prefix+"<hex HMAC-SHA256>", ErrSignature)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return fmt.Errorf("%s does not match the body signed with the trigger's secret: %w", header, ErrSignature)
	}
	return nil
}

// checkContentType refuses form-encoded deliveries (GitHub and Gitea can send them) with a hint,
// rather than failing later with a JSON syntax error.
func checkContentType(p Provider, h http.Header) error {
	ct := h.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return errdefs.Invalid("Content-Type", ct, fmt.Sprintf("is not supported: set the content type of the %s webhook to application/json", p))
}

// header returns the first non-empty value of names, or an error naming the first.
func header(h http.Header, what string, names ...string) (string, error) {
	for _, n := range names {
		if v := strings.TrimSpace(h.Get(n)); v != "" {
			return v, nil
		}
	}
	return "", errdefs.Invalid(names[0], "", fmt.Sprintf("header is missing: a %s webhook delivery carries it", what))
}

// decode unmarshals a JSON object body into v.
func decode(p Provider, event string, body []byte, v any) error {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return errdefs.Invalid("body", "", fmt.Sprintf("is empty: a %s %s delivery is a JSON object", p, event))
	}
	if trimmed[0] != '{' {
		return errdefs.Invalid("body", "", fmt.Sprintf("is not a JSON object: a %s %s delivery is one", p, event))
	}
	if err := json.Unmarshal(body, v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return errdefs.Invalid("body", "", fmt.Sprintf("is not valid JSON at byte %d: %v", syn.Offset, syn))
		case errors.As(err, &typ):
			return errdefs.Invalid("body."+typ.Field, typ.Value, fmt.Sprintf("has the wrong type for a %s %s payload: want %s", p, event, typ.Type))
		}
		return errdefs.Invalid("body", "", fmt.Sprintf("is not a %s %s payload: %v", p, event, err))
	}
	return nil
}

// missing reports a field a payload must have.
func missing(p Provider, event, field string) error {
	return errdefs.Invalid("body."+field, "", fmt.Sprintf("is missing: a %s %s payload has it", p, event))
}

func unsupported(p Provider, event string) error {
	return fmt.Errorf("%s event %q: %w", p, event, ErrUnsupportedEvent)
}

// modifiedFiles is the sorted union of the commits' files.
func modifiedFiles(commits []Commit) []string {
	seen := map[string]bool{}
	for _, c := range commits {
		for _, list := range [][]string{c.Added, c.Modified, c.Removed} {
			for _, f := range list {
				if f != "" {
					seen[f] = true
				}
			}
		}
	}
	if len(seen) == 0 {
		return nil
	}
	out := make([]string, 0, len(seen))
	for f := range seen {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// isZeroSHA reports whether s is git's null object id (a ref's before when created, after when
// deleted), in SHA-1 or SHA-256 repositories.
func isZeroSHA(s string) bool {
	if len(s) < 40 {
		return false
	}
	return strings.Trim(s, "0") == ""
}

// refParts splits a full ref into a branch or a tag. ok is false for other refs.
func refParts(ref string) (branch, tag string, ok bool) {
	if b, found := strings.CutPrefix(ref, "refs/heads/"); found && b != "" {
		return b, "", true
	}
	if t, found := strings.CutPrefix(ref, "refs/tags/"); found && t != "" {
		return "", t, true
	}
	return "", "", false
}

// splitFullName splits owner/name at the last slash (GitLab owners may be group/subgroup).
func splitFullName(full string) (owner, name string) {
	i := strings.LastIndex(full, "/")
	if i < 0 {
		return "", full
	}
	return full[:i], full[i+1:]
}

// pushEvent fills the ref-derived fields of a push. It fails for refs that are neither branches
// nor tags.
func pushEvent(p Provider, ev *Event, ref, event string) error {
	branch, tag, ok := refParts(ref)
	if !ok {
		return fmt.Errorf("%s %s to ref %q, which is neither a branch nor a tag: %w", p, event, ref, ErrUnsupportedEvent)
	}
	ev.Ref = ref
	if tag != "" {
		ev.Kind, ev.Tag = KindTag, tag
	} else {
		ev.Kind, ev.Branch = KindPush, branch
	}
	return nil
}
