package spec

import (
	"regexp"
	"strings"
)

// varRef matches one ${{NAME}} reference. Names are letters, digits, _, - and . (so that
// ${{steps.build.imageId}} and ${{my-clone}} work); no spaces inside the braces.
var varRef = regexp.MustCompile(`\$\{\{([A-Za-z0-9_][A-Za-z0-9_.\-]*)\}\}`)

// Interpolate replaces every ${{NAME}} in s with vars(NAME). A reference whose variable is
// unknown (vars returns false) stays as written, as in Codefresh, so `${{MY_VAR}}` can be
// tested for presence. Substitution is a single pass: a value that itself contains ${{X}} is
// not expanded again. A nil vars leaves s unchanged. Values become part of the text: for shell
// commands use InterpolateShell, which keeps them out of it.
func Interpolate(s string, vars func(name string) (string, bool)) string {
	if vars == nil || !strings.Contains(s, "${{") {
		return s
	}
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[3 : len(ref)-2]
		if v, ok := vars(name); ok {
			return v
		}
		return ref
	})
}

// References returns the names of the variables s refers to with ${{NAME}}, in order, with
// repeats.
func References(s string) []string {
	if !strings.Contains(s, "${{") {
		return nil
	}
	var names []string
	for _, m := range varRef.FindAllStringSubmatch(s, -1) {
		names = append(names, m[1])
	}
	return names
}

// Variable describes one built-in variable.
type Variable struct {
	Name string
	// Scope is "build" (same value for every step of a build) or "step" (set per step run).
	Scope       string
	Description string
}

// builtins is the table of built-in variables; docs/pipelines-spec.md mirrors it (a test
// checks that every name is documented).
var builtins = []Variable{
	{"CF_BRANCH", "build", "The branch (or tag) the build runs for, e.g. main or feature/login."},
	{"CF_BRANCH_TAG_NORMALIZED", "build", "CF_BRANCH made a valid Docker tag (see BranchTagNormalized), e.g. feature_login."},
	{"CF_BRANCH_TAG_NORMALIZED_LOWER_CASE", "build", "CF_BRANCH_TAG_NORMALIZED in lower case."},
	{"CF_REVISION", "build", "The full commit SHA the build runs for."},
	{"CF_SHORT_REVISION", "build", "The first 7 characters of CF_REVISION."},
	{"CF_BUILD_ID", "build", "The build's ID."},
	{"CF_BUILD_URL", "build", "The URL of the build in the Freshet UI."},
	{"CF_BUILD_TIMESTAMP", "build", "When the build was created, in Unix milliseconds."},
	{"CF_BUILD_TRIGGER", "build", "How the build started: build (manual), webhook or cron."},
	{"CF_BUILD_INITIATOR", "build", "The user who started (or restarted) the build; the webhook's sender for git events."},
	{"CF_REPO_OWNER", "build", "The owner (user, organisation or group path) of the triggering repository."},
	{"CF_REPO_NAME", "build", "The name of the triggering repository."},
	{"CF_COMMIT_MESSAGE", "build", "The commit message of CF_REVISION (unescaped)."},
	{"CF_COMMIT_AUTHOR", "build", "The author of CF_REVISION."},
	{"CF_COMMIT_URL", "build", "The URL of CF_REVISION at the git provider."},
	{"CF_PULL_REQUEST_NUMBER", "build", "The pull request number, for builds triggered by a pull request event."},
	{"CF_PULL_REQUEST_ID", "build", "The provider's ID of the pull request (the number on GitHub; the change ID on Gerrit)."},
	{"CF_PULL_REQUEST_TITLE", "build", "The pull request's title."},
	{"CF_PULL_REQUEST_TARGET", "build", "The branch the pull request targets."},
	{"CF_PULL_REQUEST_ACTION", "build", "The pull request event's action: opened, closed, merged, reopened, edited, synchronize, …"},
	{"CF_VOLUME_PATH", "build", "The absolute path of the build's shared workspace volume, visible to every step."},
	{"CF_PIPELINE_NAME", "build", "The pipeline's full name, project/pipeline."},
	{"CF_PROJECT_NAME", "build", "The project's name."},
	{"CF_STEP_NAME", "step", "The name of the running step."},
	{"CF_CURRENT_ATTEMPT", "step", "The run of the step in progress: 1 for the first run, 2 for the first retry, …"},
	{"CF_MAX_ATTEMPTS", "step", "The largest number of runs of the step (Retry.Runs())."},
	{"CI", "build", "Always true."},
}

// BuiltinVariables returns the built-in variables a runner provides, name → meaning. The map
// is a fresh copy.
func BuiltinVariables() map[string]string {
	m := make(map[string]string, len(builtins))
	for _, v := range builtins {
		m[v.Name] = v.Description
	}
	return m
}

// Builtins returns the built-in variables in documentation order.
func Builtins() []Variable { return append([]Variable(nil), builtins...) }

// IsBuiltin reports whether name is a built-in variable.
func IsBuiltin(name string) bool {
	for _, v := range builtins {
		if v.Name == name {
			return true
		}
	}
	return false
}

// maxTagLen is the longest Docker tag.
const maxTagLen = 128

// BranchTagNormalized turns a branch name into a valid Docker tag, the value of
// CF_BRANCH_TAG_NORMALIZED: every character other than a letter, digit, '_', '.' or '-'
// becomes '_', a leading '.' or '-' becomes '_', and the result is cut to 128 characters.
// "feature/login" → "feature_login".
func BranchTagNormalized(branch string) string {
	var b strings.Builder
	for _, r := range branch {
		if b.Len() >= maxTagLen {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		case r == '.' || r == '-':
			if b.Len() == 0 {
				b.WriteByte('_')
			} else {
				b.WriteRune(r)
			}
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// ShortRevision returns the value of CF_SHORT_REVISION for a revision.
func ShortRevision(rev string) string {
	if len(rev) > 7 {
		return rev[:7]
	}
	return rev
}

// CloneDir returns the directory name a git-clone step clones repo into, under its
// working directory: the last path element of the repository without ".git"
// ("https://host/acme/api.git" → "api", "acme/api" → "api"). Interpolate repo first.
func CloneDir(repo string) string {
	r := strings.TrimRight(repo, "/")
	if i := strings.LastIndexAny(r, "/:"); i >= 0 {
		r = r[i+1:]
	}
	r = strings.TrimSuffix(r, ".git")
	if r == "" || r == "." || r == ".." {
		return "repo"
	}
	return r
}
