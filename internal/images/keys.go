package images

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/repourl"
)

// Bounds of issue keys.
const (
	// MaxKeyLen bounds an issue key (a repository path and its number included).
	MaxKeyLen = 200
	// MaxKeys bounds the keys one image carries.
	MaxKeys = 100
	// maxProject bounds a Jira project key.
	maxProject = 32
	// maxNumber bounds an issue number's digits.
	maxNumber = 10
	// maxSegments bounds the segments of a repository path (GitLab's subgroups).
	maxSegments = 10
)

// Kinds of issue keys.
const (
	KeyJira   = "jira"   // PROJ-123
	KeyRepo   = "repo"   // owner/repo#123 (GitHub, GitLab)
	KeyNumber = "number" // #123, of the repository the commit is in
)

// KeyKind returns the kind of a well-formed issue key (see ParseKey), or "" for anything else.
func KeyKind(key string) string {
	k, err := ParseKey("issue", key)
	if err != nil {
		return ""
	}
	return k.Kind
}

// Key is an issue key taken apart.
type Key struct {
	Kind    string
	Project string // KeyJira: the project key
	Repo    string // KeyRepo: owner/repo (GitLab: group/subgroup/project)
	Number  int64
}

// String is the key's canonical form.
func (k Key) String() string {
	switch k.Kind {
	case KeyJira:
		return k.Project + "-" + strconv.FormatInt(k.Number, 10)
	case KeyRepo:
		return k.Repo + "#" + strconv.FormatInt(k.Number, 10)
	}
	return "#" + strconv.FormatInt(k.Number, 10)
}

// ParseKey reads one issue key given on its own (an API field, --issue): a Jira key
// (PROJ-123: an upper-case letter, then upper-case letters, digits or '_', '-', a number), a
// GitHub/GitLab key (owner/repo#123, group/subgroup/project#123) or a number in the commit's
// repository (#123). Numbers start with 1–9 and have at most 10 digits. Anything else is
// errdefs.ErrInvalid naming field.
func ParseKey(field, s string) (Key, error) {
	bad := func(why string) (Key, error) {
		return Key{}, errdefs.Invalid(field, s, why+": use a Jira key (PROJ-123), owner/repo#123 or #123")
	}
	if len(s) > MaxKeyLen {
		return bad(fmt.Sprintf("is longer than %d characters", MaxKeyLen))
	}
	if hash := strings.LastIndexByte(s, '#'); hash >= 0 {
		n, ok := number(s[hash+1:])
		if !ok {
			return bad("is not an issue key: '#' must be followed by an issue number")
		}
		if hash == 0 {
			return Key{Kind: KeyNumber, Number: n}, nil
		}
		if !validRepoPath(s[:hash]) {
			return bad("is not an issue key: " + strconv.Quote(s[:hash]) + " is not a repository path (owner/repo)")
		}
		return Key{Kind: KeyRepo, Repo: s[:hash], Number: n}, nil
	}
	dash := strings.LastIndexByte(s, '-')
	if dash < 0 {
		return bad("is not an issue key")
	}
	n, ok := number(s[dash+1:])
	if !ok || !validProject(s[:dash]) {
		return bad("is not an issue key")
	}
	return Key{Kind: KeyJira, Project: s[:dash], Number: n}, nil
}

// number reads an issue number: 1–9 then digits, at most maxNumber of them.
func number(s string) (int64, bool) {
	if s == "" || len(s) > maxNumber || s[0] < '1' || s[0] > '9' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isWord(c byte) bool  { return isUpper(c) || isDigit(c) || c >= 'a' && c <= 'z' || c == '_' }

// validProject reports whether s is a Jira project key.
func validProject(s string) bool {
	if len(s) < 2 || len(s) > maxProject || !isUpper(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isUpper(s[i]) && !isDigit(s[i]) && s[i] != '_' {
			return false
		}
	}
	return true
}

// validRepoPath reports whether s is owner/repo or group/…/project: 2 to maxSegments segments
// of letters, digits, '_', '-' and '.', none empty or starting with '.'.
func validRepoPath(s string) bool {
	segs := strings.Split(s, "/")
	if len(segs) < 2 || len(segs) > maxSegments {
		return false
	}
	for _, seg := range segs {
		if seg == "" || seg[0] == '.' || len(seg) > 100 {
			return false
		}
		for i := 0; i < len(seg); i++ {
			if c := seg[i]; !isWord(c) && c != '-' && c != '.' {
				return false
			}
		}
	}
	return true
}

// isPathByte reports whether c may be part of a repository path.
func isPathByte(c byte) bool { return isWord(c) || c == '-' || c == '.' || c == '/' }

// ParseKeys returns the issue keys in text (a commit message), in the order they first appear,
// each once, at most MaxKeys:
//
//   - Jira keys, PROJ-123, not inside a word (xPROJ-1 and PROJ-1x are not keys);
//   - owner/repo#123 and group/subgroup/project#123;
//   - #123 after a space, a line start or punctuation (not page#12, not &#123;).
//
// Upper-case words with a number (SHA-256, UTF-16) look like Jira keys and are taken as such:
// a tracker that does not know them answers so, and they are shown without a title.
func ParseKeys(text string) []string {
	var out []string
	add := func(k string) {
		for _, have := range out {
			if have == k {
				return
			}
		}
		if len(out) < MaxKeys {
			out = append(out, k)
		}
	}
	for i := 0; i < len(text) && len(out) < MaxKeys; i++ {
		c := text[i]
		switch {
		case c == '#':
			j := i + 1
			for j < len(text) && isDigit(text[j]) {
				j++
			}
			n, ok := number(text[i+1 : j])
			if !ok || j < len(text) && isWord(text[j]) {
				continue
			}
			// The repository path before '#', if any.
			s := i
			for s > 0 && isPathByte(text[s-1]) && i-s < MaxKeyLen {
				s--
			}
			path := text[s:i]
			switch {
			case path == "":
				if s > 0 && (text[s-1] == '&' || text[s-1] == ':') {
					continue
				}
				add(Key{Kind: KeyNumber, Number: n}.String())
			case s > 0 && (text[s-1] == ':' || text[s-1] == '@'):
				// part of a URL or an address, not a reference
			case validRepoPath(path):
				add(Key{Kind: KeyRepo, Repo: path, Number: n}.String())
			}
			i = j - 1
		case isUpper(c) && (i == 0 || !isWord(text[i-1]) && text[i-1] != '-' && text[i-1] != '.'):
			j := i + 1
			for j < len(text) && j-i <= maxProject && (isUpper(text[j]) || isDigit(text[j]) || text[j] == '_') {
				j++
			}
			if j >= len(text) || text[j] != '-' || !validProject(text[i:j]) {
				i = j - 1
				continue
			}
			k := j + 1
			for k < len(text) && isDigit(text[k]) {
				k++
			}
			n, ok := number(text[j+1 : k])
			if ok && (k == len(text) || !isWord(text[k])) {
				add(Key{Kind: KeyJira, Project: text[i:j], Number: n}.String())
			}
			i = k - 1
		}
	}
	return out
}

// BranchKeys returns the issue keys in a branch name: its Jira keys (feature/PROJ-123-login),
// and the issue number GitLab names branches after (123-fix-login, fix/123-login: the last
// segment starts with the number and '-').
func BranchKeys(branch string) []string {
	out := ParseKeys(strings.ReplaceAll(branch, "#", " "))
	last := branch[strings.LastIndexByte(branch, '/')+1:]
	if dash := strings.IndexByte(last, '-'); dash > 0 {
		if n, ok := number(last[:dash]); ok {
			k := Key{Kind: KeyNumber, Number: n}.String()
			found := false
			for _, have := range out {
				found = found || have == k
			}
			if !found && len(out) < MaxKeys {
				out = append(out, k)
			}
		}
	}
	return out
}

// Resolve turns #123 keys into owner/repo#123 with the repository path of repoURL (a git
// URL); without one they stay as they are. Other keys are returned unchanged.
func Resolve(keys []string, repoURL string) []string {
	path := RepoPath(repoURL)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if path != "" && strings.HasPrefix(k, "#") {
			k = path + k
		}
		dup := false
		for _, have := range out {
			dup = dup || have == k
		}
		if !dup {
			out = append(out, k)
		}
	}
	return out
}

// RepoPath returns the repository path (owner/repo, group/subgroup/project) of a git URL
// (https://host/owner/repo.git, git@host:owner/repo.git), or "" when it has none.
func RepoPath(repoURL string) string {
	if repoURL == "" {
		return ""
	}
	u, err := repourl.Parse(repoURL)
	if err != nil || u.Scheme == "file" {
		return ""
	}
	p := strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git")
	if !validRepoPath(p) {
		return ""
	}
	return p
}
