package spec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestInterpolate(t *testing.T) {
	vars := map[string]string{
		"CF_BRANCH":           "main",
		"CF_SHORT_REVISION":   "abc1234",
		"build-image.imageId": "sha256:1",
		"steps.build.result":  "success",
		"LOOP":                "${{CF_BRANCH}}",
		"EMPTY":               "",
	}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	tests := []struct{ in, want string }{
		{"${{CF_BRANCH}}-${{CF_SHORT_REVISION}}", "main-abc1234"},
		{"no references", "no references"},
		{"${{UNKNOWN}} stays", "${{UNKNOWN}} stays"},
		{"${{build-image.imageId}}", "sha256:1"},
		{"${{steps.build.result}}", "success"},
		{"${{LOOP}}", "${{CF_BRANCH}}"}, // single pass
		{"[${{EMPTY}}]", "[]"},
		{"${{ CF_BRANCH }}", "${{ CF_BRANCH }}"},
		{"${CF_BRANCH} $CF_BRANCH", "${CF_BRANCH} $CF_BRANCH"},
		{"$${{CF_BRANCH}}}", "$main}"},
	}
	for _, tt := range tests {
		if got := Interpolate(tt.in, lookup); got != tt.want {
			t.Errorf("Interpolate(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := Interpolate("${{CF_BRANCH}}", nil); got != "${{CF_BRANCH}}" {
		t.Errorf("nil vars: %q", got)
	}
	if got, want := References("a ${{X}} b ${{y.z}} ${{X}} ${{ bad }}"), []string{"X", "y.z", "X"}; !slices.Equal(got, want) {
		t.Errorf("References = %v, want %v", got, want)
	}
}

// TestBuiltinVariables checks the table holds the variables the runner must fill, and that
// docs/pipelines-spec.md documents every one of them.
func TestBuiltinVariables(t *testing.T) {
	m := BuiltinVariables()
	for _, name := range []string{"CF_BRANCH", "CF_BRANCH_TAG_NORMALIZED", "CF_REVISION", "CF_SHORT_REVISION",
		"CF_BUILD_ID", "CF_BUILD_URL", "CF_BUILD_TIMESTAMP", "CF_REPO_OWNER", "CF_REPO_NAME", "CF_COMMIT_MESSAGE",
		"CF_COMMIT_AUTHOR", "CF_COMMIT_URL", "CF_PULL_REQUEST_NUMBER", "CF_PULL_REQUEST_TARGET",
		"CF_PULL_REQUEST_ACTION", "CF_VOLUME_PATH", "CF_PIPELINE_NAME", "CF_PROJECT_NAME"} {
		if m[name] == "" {
			t.Errorf("%s is not a documented built-in variable", name)
		}
		if !IsBuiltin(name) {
			t.Errorf("IsBuiltin(%s) = false", name)
		}
	}
	if IsBuiltin("CF_NOPE") {
		t.Error("IsBuiltin(CF_NOPE) = true")
	}
	m["CF_BRANCH"] = "changed"
	if BuiltinVariables()["CF_BRANCH"] == "changed" {
		t.Error("BuiltinVariables returns a shared map")
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "pipelines-spec.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range Builtins() {
		if !strings.Contains(string(doc), "`"+v.Name+"`") {
			t.Errorf("docs/pipelines-spec.md does not document `%s`", v.Name)
		}
	}
}

func TestBranchTagNormalized(t *testing.T) {
	tests := []struct{ in, want string }{
		{"main", "main"},
		{"feature/login", "feature_login"},
		{"release-1.2", "release-1.2"},
		{".hidden", "_hidden"},
		{"-dash", "_dash"},
		{"ünïcode branch", "_n_code_branch"},
		{strings.Repeat("a", 200), strings.Repeat("a", 128)},
		{"", ""},
	}
	for _, tt := range tests {
		if got := BranchTagNormalized(tt.in); got != tt.want {
			t.Errorf("BranchTagNormalized(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCloneDirAndShortRevision(t *testing.T) {
	for in, want := range map[string]string{
		"acme/api":                             "api",
		"https://git.example.com/acme/api.git": "api",
		"git@github.com:acme/api.git":          "api",
		"https://host/acme/api/":               "api",
		"api":                                  "api",
		"..":                                   "repo",
	} {
		if got := CloneDir(in); got != want {
			t.Errorf("CloneDir(%q) = %q, want %q", in, got, want)
		}
	}
	if got := ShortRevision("0123456789abcdef"); got != "0123456" {
		t.Errorf("ShortRevision = %q", got)
	}
	if got := ShortRevision("abc"); got != "abc" {
		t.Errorf("ShortRevision(short) = %q", got)
	}
}
