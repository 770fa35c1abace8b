package hub

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
)

// Layout of a catalogue directory (Argo Hub's): <name>/versions/<version>/ holds the version's
// WorkflowTemplate and its README.
const (
	VersionsDir  = "versions"
	ManifestFile = "workflowTemplate.yaml"
	ReadmeFile   = "README.md"
)

// Annotations of a WorkflowTemplate the catalogue reads (Argo Hub's keys, plus tags).
const (
	AnnVersion     = "argo-hub/version"
	AnnDescription = "argo-hub/description"
	AnnCategories  = "argo-hub/categories"
	AnnTags        = "argo-hub/tags"
	AnnLicense     = "argo-hub/license"
	AnnOwner       = "argo-hub/owner_name"
	// AnnTemplateDescription describes one of the WorkflowTemplate's templates.
	AnnTemplateDescription = "argo-hub-template/description"
)

// Bounds of what a catalogue may hold.
const (
	MaxManifestBytes = 1 << 20
	MaxReadmeBytes   = 256 << 10
	MaxTemplates     = 500
	MaxVersions      = 50
	maxLabel         = 63
)

var (
	nameRe    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	versionRe = regexp.MustCompile(`^v?(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})(-[0-9A-Za-z.-]{1,64})?$`)
)

// Parameter is a parameter of a WorkflowTemplate: a workflow argument, or an input or output
// of one of its templates.
type Parameter struct {
	Name        string
	Description string
	Default     string // the value given in the template (empty with Required)
	Required    bool   // no value or default: the caller must give one
	Enum        []string
}

// Entry is one of a WorkflowTemplate's templates, as a templateRef names it.
type Entry struct {
	Name        string
	Description string
	Inputs      []Parameter
	Outputs     []Parameter
}

// Version is one version of a catalogue template.
type Version struct {
	Version     string
	Description string
	Categories  []string
	Tags        []string
	License     string
	Owner       string
	Entrypoint  string
	Parameters  []Parameter // spec.arguments.parameters
	Templates   []Entry
	README      string // Markdown, as the repository has it
	Manifest    string // the WorkflowTemplate's YAML, as the repository has it
	File        string // where it was read, relative to the catalogue's root
}

// Template is a catalogue entry: its versions, newest first, and what the newest says of it.
type Template struct {
	Name        string
	Description string
	Categories  []string
	Tags        []string
	Source      string // BuiltinSource or the name of the account's hub source
	Versions    []Version
}

// Latest is the newest version.
func (t Template) Latest() Version { return t.Versions[0] }

// Version returns version v ("" or "latest": the newest).
func (t Template) Version(v string) (Version, bool) {
	if v == "" || v == "latest" {
		return t.Versions[0], true
	}
	for _, x := range t.Versions {
		if x.Version == v || strings.TrimPrefix(x.Version, "v") == strings.TrimPrefix(v, "v") {
			return x, true
		}
	}
	return Version{}, false
}

// LoadError is what is wrong with one file of a catalogue: the file, and the field, value and
// reason when it is about one field.
type LoadError struct {
	File string
	errdefs.FieldError
}

func (e *LoadError) Error() string {
	if e.Field == "" {
		return e.File + ": " + e.Reason
	}
	return e.File + ": " + e.FieldError.Error()
}

func loadError(file string, err error) *LoadError {
	var fe *errdefs.FieldError
	if errors.As(err, &fe) {
		return &LoadError{File: file, FieldError: *fe}
	}
	return &LoadError{File: file, FieldError: errdefs.FieldError{Reason: err.Error()}}
}

// DecodeVersion decodes version of template name from its WorkflowTemplate manifest (YAML or
// JSON) and README, and validates the manifest as the runtime's workflow engine does (`argo
// lint`). An error is a *errdefs.FieldError naming the field, the value and what is valid.
func DecodeVersion(name, version string, manifest, readme []byte) (Version, error) {
	if !nameRe.MatchString(name) || len(name) > maxLabel {
		return Version{}, errdefs.Invalid("name", name, "is not a template name: 1-63 lowercase letters, digits and '-' (the WorkflowTemplate's metadata.name)")
	}
	if !versionRe.MatchString(version) {
		return Version{}, errdefs.Invalid("version", version, "is not a version: MAJOR.MINOR.PATCH, as 1.2.0 or v0.3.1-rc.1 (the directory under versions/)")
	}
	if len(manifest) > MaxManifestBytes {
		return Version{}, errdefs.Invalid(ManifestFile, fmt.Sprintf("%d bytes", len(manifest)), fmt.Sprintf("is larger than %d bytes", MaxManifestBytes))
	}
	if len(readme) > MaxReadmeBytes {
		return Version{}, errdefs.Invalid(ReadmeFile, fmt.Sprintf("%d bytes", len(readme)), fmt.Sprintf("is larger than %d bytes", MaxReadmeBytes))
	}
	if !utf8.Valid(readme) {
		return Version{}, errdefs.Invalid(ReadmeFile, "", "is not UTF-8 text")
	}
	if len(bytes.TrimSpace(manifest)) == 0 {
		return Version{}, errdefs.Invalid(ManifestFile, "", "is empty: it holds the version's WorkflowTemplate")
	}
	data, err := yaml.YAMLToJSON(manifest)
	if err != nil {
		return Version{}, errdefs.Invalid(ManifestFile, "", "is not YAML: "+err.Error())
	}
	if len(data) == 0 || data[0] != '{' {
		return Version{}, errdefs.Invalid(ManifestFile, "", "is not a WorkflowTemplate object")
	}
	wt, err := workflows.DecodeTemplate(data, "WorkflowTemplate")
	if err != nil {
		return Version{}, err
	}
	if wt.Name != name {
		return Version{}, errdefs.Invalid("metadata.name", wt.Name, fmt.Sprintf("must be the template's directory name %q", name))
	}
	ann := wt.Annotations
	if v := ann[AnnVersion]; v != "" && strings.TrimPrefix(v, "v") != strings.TrimPrefix(version, "v") {
		return Version{}, errdefs.Invalid("metadata.annotations."+AnnVersion, v, fmt.Sprintf("must be the version's directory name %q", version))
	}
	desc := strings.TrimSpace(ann[AnnDescription])
	if desc == "" {
		return Version{}, errdefs.Invalid("metadata.annotations."+AnnDescription, "", "is required: one line that says what the template does")
	}
	if len(desc) > 1000 {
		return Version{}, errdefs.Invalid("metadata.annotations."+AnnDescription, desc, "is longer than 1000 characters")
	}
	v := Version{Version: version, Description: desc, Categories: splitList(ann[AnnCategories]), Tags: splitList(ann[AnnTags]),
		License: ann[AnnLicense], Owner: ann[AnnOwner], Entrypoint: wt.Spec.Entrypoint, README: string(readme), Manifest: string(manifest)}
	for _, f := range []struct {
		field string
		list  []string
	}{{AnnCategories, v.Categories}, {AnnTags, v.Tags}} {
		if len(f.list) > 20 {
			return Version{}, errdefs.Invalid("metadata.annotations."+f.field, ann[f.field], "lists more than 20 words")
		}
		for _, w := range f.list {
			if len(w) > 40 {
				return Version{}, errdefs.Invalid("metadata.annotations."+f.field, w, "is longer than 40 characters (a comma-separated list of words)")
			}
		}
	}
	v.Parameters = params(wt.Spec.Arguments.Parameters)
	for _, t := range wt.Spec.Templates {
		v.Templates = append(v.Templates, Entry{Name: t.Name, Description: t.Metadata.Annotations[AnnTemplateDescription],
			Inputs: params(t.Inputs.Parameters), Outputs: params(t.Outputs.Parameters)})
	}
	return v, nil
}

func splitList(s string) []string {
	var out []string
	for _, w := range strings.Split(s, ",") {
		if w = strings.ToLower(strings.TrimSpace(w)); w != "" && !contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func params(ps []workflows.Parameter) []Parameter {
	out := make([]Parameter, 0, len(ps))
	for _, p := range ps {
		q := Parameter{Name: p.Name, Description: p.Description}
		switch {
		case p.Value != nil:
			q.Default = string(*p.Value)
		case p.Default != nil:
			q.Default = string(*p.Default)
		case p.ValueFrom != nil:
		default:
			q.Required = true
		}
		for _, e := range p.Enum {
			q.Enum = append(q.Enum, string(e))
		}
		out = append(out, q)
	}
	return out
}

// Load reads the catalogue under root of fsys: every directory is a template, every
// directory of its versions/ a version. What does not decode is left out and returned as
// LoadErrors naming the file (relative to root) and the field; the rest is returned by name.
func Load(fsys fs.FS, root string) ([]Template, []*LoadError) {
	var errs []*LoadError
	root = path.Clean(root)
	entries, err := fs.ReadDir(fsys, root)
	if err != nil {
		return nil, []*LoadError{{File: root, FieldError: errdefs.FieldError{Field: "path", Value: root, Reason: "is not a directory of the repository: " + pathErr(err)}}}
	}
	var out []Template
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if len(out) >= MaxTemplates {
			errs = append(errs, &LoadError{File: e.Name(), FieldError: errdefs.FieldError{Reason: fmt.Sprintf("left out: a catalogue holds at most %d templates", MaxTemplates)}})
			break
		}
		t, terrs := loadTemplate(fsys, root, e.Name())
		errs = append(errs, terrs...)
		if len(t.Versions) > 0 {
			out = append(out, t)
		}
	}
	return out, errs
}

func pathErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func loadTemplate(fsys fs.FS, root, name string) (Template, []*LoadError) {
	t := Template{Name: name}
	if !nameRe.MatchString(name) || len(name) > maxLabel {
		return t, []*LoadError{{File: name, FieldError: errdefs.FieldError{Field: "name", Value: name, Reason: "is not a template name: 1-63 lowercase letters, digits and '-' (the WorkflowTemplate's metadata.name)"}}}
	}
	vdir := path.Join(root, name, VersionsDir)
	entries, err := fs.ReadDir(fsys, vdir)
	if err != nil {
		return t, []*LoadError{{File: name + "/" + VersionsDir, FieldError: errdefs.FieldError{Reason: "is missing: a template's versions are " + name + "/" + VersionsDir + "/<version>/" + ManifestFile}}}
	}
	var errs []*LoadError
	shared, _ := fs.ReadFile(fsys, path.Join(root, name, ReadmeFile))
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		rel := name + "/" + VersionsDir + "/" + e.Name() + "/" + ManifestFile
		if len(t.Versions) >= MaxVersions {
			errs = append(errs, &LoadError{File: rel, FieldError: errdefs.FieldError{Reason: fmt.Sprintf("left out: a template has at most %d versions", MaxVersions)}})
			break
		}
		manifest, err := readBounded(fsys, path.Join(vdir, e.Name(), ManifestFile), MaxManifestBytes)
		if err != nil {
			errs = append(errs, &LoadError{File: rel, FieldError: errdefs.FieldError{Reason: err.Error()}})
			continue
		}
		readme, err := readBounded(fsys, path.Join(vdir, e.Name(), ReadmeFile), MaxReadmeBytes)
		if errors.Is(err, fs.ErrNotExist) {
			readme, err = shared, nil
		}
		if err != nil {
			errs = append(errs, &LoadError{File: name + "/" + VersionsDir + "/" + e.Name() + "/" + ReadmeFile, FieldError: errdefs.FieldError{Reason: err.Error()}})
			continue
		}
		v, err := DecodeVersion(name, e.Name(), manifest, readme)
		if err != nil {
			errs = append(errs, loadError(rel, err))
			continue
		}
		v.File = rel
		t.Versions = append(t.Versions, v)
	}
	if len(t.Versions) == 0 {
		if len(errs) == 0 {
			errs = append(errs, &LoadError{File: name + "/" + VersionsDir, FieldError: errdefs.FieldError{Reason: "holds no version: add " + VersionsDir + "/<version>/" + ManifestFile}})
		}
		return t, errs
	}
	sort.SliceStable(t.Versions, func(i, j int) bool { return compareVersions(t.Versions[i].Version, t.Versions[j].Version) > 0 })
	l := t.Versions[0]
	t.Description, t.Categories, t.Tags = l.Description, l.Categories, l.Tags
	return t, errs
}

func readBounded(fsys fs.FS, name string, max int) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("is missing: %w", fs.ErrNotExist)
		}
		return nil, errors.New(pathErr(err))
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		return nil, errors.New("is not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, errors.New(pathErr(err))
	}
	if len(data) > max {
		return nil, fmt.Errorf("is larger than %d bytes", max)
	}
	return data, nil
}

// compareVersions orders MAJOR.MINOR.PATCH[-PRE] versions: a release after its pre-releases,
// pre-releases by their text.
func compareVersions(a, b string) int {
	ma, mb := versionRe.FindStringSubmatch(a), versionRe.FindStringSubmatch(b)
	if ma == nil || mb == nil {
		return strings.Compare(a, b)
	}
	for i := 1; i <= 3; i++ {
		x, _ := strconv.Atoi(ma[i])
		y, _ := strconv.Atoi(mb[i])
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch {
	case ma[4] == mb[4]:
		return 0
	case ma[4] == "":
		return 1
	case mb[4] == "":
		return -1
	}
	return strings.Compare(ma[4], mb[4])
}

// manifestJSON is a version's manifest as JSON.
func manifestJSON(v Version) (map[string]any, error) {
	data, err := yaml.YAMLToJSON([]byte(v.Manifest))
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(data, &m)
}
