package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
)

// TestPipelineLintMatchesAPI lints every pipeline fixture of the spec package with
// `freshet pipeline lint` and posts the same file to POST /api/v1/pipelines/lint over plain
// HTTP: the CLI's exit code and JSON must be the API's verdict and issues, and the verdict must
// be what the fixture's name says (valid_*, invalid_*, bad_*).
//
// The server's step catalogue is the spec package's testdata/catalog, committed to a real git
// repository served over HTTP, so typed plugin steps are checked as a deployment checks them.
func TestPipelineLintMatchesAPI(t *testing.T) {
	catalog := gitserver.New(t).NewRepo("steps")
	files := map[string]string{}
	root := "../pipeline/spec/testdata/catalog"
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("catalogue: %d files, %v", len(files), err)
	}
	catalog.Commit("main", files, "the test catalogue")
	s := servertest.StartWith(t, store.SQLite, servertest.Config{Edit: func(o *server.Options) { o.StepCatalogURL = catalog.URL() }})
	key, err := s.Admin.CreateAPIKey(context.Background(), client.CreateAPIKeyRequest{Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	fixtures, _ := filepath.Glob("../pipeline/spec/testdata/steps/*/*.yml")
	more, _ := filepath.Glob("../pipeline/spec/testdata/*.yml")
	fixtures = append(fixtures, more...)
	if len(fixtures) < 60 {
		t.Fatalf("%d fixtures found, want the spec package's (60 or more)", len(fixtures))
	}
	valid, invalid := 0, 0
	for _, f := range fixtures {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		api := postLint(t, s.URL, key.Token, string(data))
		code, out, errs := runIn(t, s.URL, key.Token, "", "pipeline", "lint", "-f", f, "-o", "json")
		var got []lintedFile
		if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 {
			t.Fatalf("%s: exit %d, output not one JSON result (%v):\n%s%s", f, code, err, out, errs)
		}
		wantCode := 0
		if !api.Valid {
			wantCode = 1
		}
		if code != wantCode || got[0].Valid != api.Valid || got[0].File != f {
			t.Errorf("%s: CLI exit %d valid %v, API valid %v", f, code, got[0].Valid, api.Valid)
		}
		a, _ := json.Marshal(api.Issues)
		b, _ := json.Marshal(got[0].Issues)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: CLI issues differ from the API's:\n%s\n%s", f, b, a)
		}
		base := filepath.Base(f)
		switch {
		case strings.HasPrefix(base, "valid_"):
			valid++
			if !api.Valid {
				t.Errorf("%s: invalid, want valid: %s", f, a)
			}
		case strings.HasPrefix(base, "invalid_"), strings.HasPrefix(base, "bad_"):
			invalid++
			if api.Valid {
				t.Errorf("%s: valid, want invalid", f)
			}
		}
	}
	if valid < 12 || invalid < 30 {
		t.Errorf("%d valid and %d invalid fixtures checked", valid, invalid)
	}

	// Text output: FILE:LINE:COLUMN: severity: FIELD: message, and the verdict.
	bad := "../pipeline/spec/testdata/steps/build/invalid_tag_float.yml"
	code, out, errs := runIn(t, s.URL, key.Token, "", "pipeline", "lint", "-f", bad)
	if code != 1 || !strings.Contains(out, bad+`:9:10: error: steps.build.tag: "1.0" is a number, not a string: quote it ('1.0')`) ||
		!strings.Contains(errs, "1 of 1 pipeline file is invalid") {
		t.Errorf("lint %s: exit %d\n%s%s", bad, code, out, errs)
	}
	// A directory: every file under it; stdin with -.
	code, out, errs = runIn(t, s.URL, key.Token, "", "pipeline", "lint", "-f", "../pipeline/spec/testdata/steps/push")
	if code != 1 || !strings.Contains(errs, "4 of 6 pipeline files are invalid") || !strings.Contains(out, "invalid_provider.yml:8:15: error: steps.push.provider") {
		t.Errorf("lint a directory: exit %d\n%s%s", code, out, errs)
	}
	dir := t.TempDir()
	for _, f := range []string{"push/valid_ecr.yml", "build/valid_doc_usage.yml"} {
		data, _ := os.ReadFile("../pipeline/spec/testdata/steps/" + f)
		if err := os.WriteFile(filepath.Join(dir, strings.ReplaceAll(f, "/", "_")), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs = runIn(t, s.URL, key.Token, "version: '1.0'\nsteps:\n  a: {image: alpine, commands: [true]}\n", "pipeline", "lint", "-f", dir, "-f", "-")
	if code != 0 || !strings.Contains(out, "3 pipeline files are valid (") || !strings.Contains(out, "warning: steps.push.accessKeyId: is not used by Freshet") {
		t.Errorf("lint valid files: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := runIn(t, s.URL, key.Token, "", "pipeline", "lint"); code != 2 || !strings.Contains(errs, "-f") {
		t.Errorf("lint without -f: exit %d, %s", code, errs)
	}
}

// postLint asks the API directly, without the client package.
func postLint(t *testing.T, url, token, spec string) client.LintResult {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"spec": spec})
	req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/pipelines/lint", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v1/pipelines/lint: %s", resp.Status)
	}
	var r client.LintResult
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r
}
