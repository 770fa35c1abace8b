package appset

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/gobwas/glob"
	"gopkg.in/yaml.v3"

	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// maxCombineDepth bounds how deeply matrix and merge generators nest (Argo CD allows a
// matrix or merge inside a matrix or merge, not deeper).
const maxCombineDepth = 2

// Decode decodes and validates one ApplicationSet document. Every problem is reported (up to
// 20), each naming the field path and line (app.Errors).
func Decode(data []byte) (*ApplicationSet, error) {
	s := &ApplicationSet{}
	d, err := app.DecodeOne(data, app.KindApplicationSet, s)
	if err != nil {
		return nil, err
	}
	return s.finish(d)
}

// DecodeNode decodes an ApplicationSet document of a multi-document file (app.Document's
// ApplicationSet node); line is where the document starts.
func DecodeNode(n *yaml.Node, line int) (*ApplicationSet, error) {
	s := &ApplicationSet{}
	return s.finish(app.DecodeNode(n, line, s))
}

func (s *ApplicationSet) finish(d *app.Decoded) (*ApplicationSet, error) {
	s.validate(d)
	if err := d.Err(); err != nil {
		return nil, err
	}
	s.Warnings = d.Warnings()
	return s, nil
}

func (s *ApplicationSet) validate(d *app.Decoded) {
	if s.APIVersion != app.APIVersion {
		d.Fail("apiVersion", s.APIVersion, "want "+app.APIVersion)
	}
	if s.Kind != app.KindApplicationSet {
		d.Fail("kind", s.Kind, "want "+app.KindApplicationSet)
	}
	d.ValidateMeta(s.Metadata)
	if s.Status != nil {
		d.Warn("status is runtime state; ignored")
	}
	sp := &s.Spec
	for i, o := range sp.GoTemplateOptions {
		if !validTemplateOption(o) {
			d.Fail(fmt.Sprintf("spec.goTemplateOptions[%d]", i), o, "is not a Go template option; valid: missingkey=default, missingkey=zero, missingkey=error")
		}
	}
	if len(sp.GoTemplateOptions) > 0 && !sp.GoTemplate {
		d.Fail("spec.goTemplateOptions", "", "needs goTemplate: true")
	}
	if sp.TemplatePatch != "" && !sp.GoTemplate {
		d.Fail("spec.templatePatch", "", "needs goTemplate: true (as in Argo CD, only Go templates can patch)")
	}
	if len(sp.Generators) == 0 {
		d.Fail("spec.generators", "", "is required: at least one generator")
	}
	for i := range sp.Generators {
		validateGenerator(d, fmt.Sprintf("spec.generators[%d]", i), &sp.Generators[i], 0)
	}
	if p := sp.SyncPolicy; p != nil && p.ApplicationsSync != "" {
		switch p.ApplicationsSync {
		case PolicySync, PolicyCreateOnly, PolicyCreateUpdate, PolicyCreateDelete:
		default:
			d.Fail("spec.syncPolicy.applicationsSync", p.ApplicationsSync, "want one of create-only, create-update, create-delete, sync")
		}
	}
	if sp.PreservedFields != nil {
		d.Warn("spec.preservedFields is ignored: Freshet's generated applications are only changed by their ApplicationSet")
	}
	if sp.IgnoreApplicationDifferences != nil {
		d.Warn("spec.ignoreApplicationDifferences is ignored: Freshet's generated applications are only changed by their ApplicationSet")
	}
	if st := sp.Strategy; st != nil {
		switch st.Type {
		case "", StrategyAllAtOnce:
			if st.RollingSync != nil {
				d.Fail("spec.strategy.rollingSync", "", "needs type: RollingSync")
			}
		case StrategyRollingSync:
			if st.RollingSync == nil || len(st.RollingSync.Steps) == 0 {
				d.Fail("spec.strategy.rollingSync.steps", "", "is required with type RollingSync: at least one step")
				break
			}
			for i, step := range st.RollingSync.Steps {
				p := fmt.Sprintf("spec.strategy.rollingSync.steps[%d]", i)
				validateRequirements(d, p+".matchExpressions", step.MatchExpressions)
				if _, _, err := parseMaxUpdate(step.MaxUpdate); err != nil {
					d.Fail(p+".maxUpdate", fmt.Sprint(step.MaxUpdate), err.Error())
				}
			}
		default:
			d.Fail("spec.strategy.type", st.Type, "want AllAtOnce or RollingSync")
		}
		if st.DeletionOrder != "" && st.DeletionOrder != "AllAtOnce" {
			d.Warn("spec.strategy.deletionOrder " + strconv.Quote(st.DeletionOrder) + " is ignored: applications are deleted all at once")
		}
	}
}

func validTemplateOption(o string) bool {
	switch o {
	case "missingkey=default", "missingkey=invalid", "missingkey=zero", "missingkey=error":
		return true
	}
	return false
}

func validateRequirements(d *app.Decoded, p string, reqs []Requirement) {
	for j, r := range reqs {
		rp := fmt.Sprintf("%s[%d]", p, j)
		if r.Key == "" {
			d.Fail(rp+".key", "", "is required")
		}
		switch r.Operator {
		case "In", "NotIn":
			if len(r.Values) == 0 {
				d.Fail(rp+".values", "", "is required with operator "+r.Operator)
			}
		case "Exists", "DoesNotExist":
			if len(r.Values) > 0 {
				d.Fail(rp+".values", "", "must be empty with operator "+r.Operator)
			}
		default:
			d.Fail(rp+".operator", r.Operator, "want In, NotIn, Exists or DoesNotExist")
		}
	}
}

// parseMaxUpdate reads a step's maxUpdate: an integer ≥ 0 or a percentage; nil is 100%.
func parseMaxUpdate(v any) (n int, percent bool, err error) {
	switch x := v.(type) {
	case nil:
		return 100, true, nil
	case int:
		if x < 0 {
			return 0, false, fmt.Errorf("is negative; want an integer ≥ 0 or a percentage such as 25%%")
		}
		return x, false, nil
	case int64:
		if x < 0 || x > 1<<31 {
			return 0, false, fmt.Errorf("is out of range; want an integer ≥ 0 or a percentage such as 25%%")
		}
		return int(x), false, nil
	case string:
		if p, ok := strings.CutSuffix(x, "%"); ok {
			if i, err := strconv.Atoi(p); err == nil && i >= 0 && i <= 100 {
				return i, true, nil
			}
		}
	}
	return 0, false, fmt.Errorf("want an integer ≥ 0 or a percentage from 0%% to 100%%")
}

func validateGenerator(d *app.Decoded, p string, g *Generator, depth int) {
	for _, u := range []struct {
		name string
		v    any
	}{{"scmProvider", g.SCMProvider}, {"pullRequest", g.PullRequest}, {"clusterDecisionResource", g.ClusterDecisionResource}, {"plugin", g.Plugin}} {
		if u.v != nil {
			d.Unsupported(p+"."+u.name, "the "+u.name+" generator is not supported; use list, clusters, git, matrix or merge")
		}
	}
	n := 0
	for _, set := range []bool{g.List != nil, g.Clusters != nil, g.Git != nil, g.Matrix != nil, g.Merge != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0 && g.SCMProvider == nil && g.PullRequest == nil && g.ClusterDecisionResource == nil && g.Plugin == nil:
		d.Fail(p, "", "names no generator; want one of list, clusters, git, matrix, merge")
	case n > 1:
		d.Fail(p, "", "names more than one generator; want exactly one of list, clusters, git, matrix, merge")
	}
	if g.Selector != nil {
		validateRequirements(d, p+".selector.matchExpressions", g.Selector.MatchExpressions)
	}
	switch {
	case g.List != nil:
		if g.List.ElementsYaml != "" && len(g.List.Elements) > 0 {
			d.Fail(p+".list.elementsYaml", "", "cannot be set with elements")
		}
		for i, e := range g.List.Elements {
			if _, ok := e.(map[string]any); !ok {
				d.Fail(fmt.Sprintf("%s.list.elements[%d]", p, i), fmt.Sprint(e), "want a mapping of parameters")
			}
		}
	case g.Clusters != nil:
		validateRequirements(d, p+".clusters.selector.matchExpressions", g.Clusters.Selector.MatchExpressions)
	case g.Git != nil:
		gg := g.Git
		if gg.RepoURL == "" {
			d.Fail(p+".git.repoURL", "", "is required")
		}
		switch {
		case len(gg.Directories) == 0 && len(gg.Files) == 0:
			d.Fail(p+".git", "", "needs directories or files")
		case len(gg.Directories) > 0 && len(gg.Files) > 0:
			d.Fail(p+".git", "", "cannot have both directories and files")
		}
		for i, e := range gg.Directories {
			ep := fmt.Sprintf("%s.git.directories[%d].path", p, i)
			if e.Path == "" {
				d.Fail(ep, "", "is required")
			} else if _, err := path.Match(e.Path, ""); err != nil {
				d.Fail(ep, e.Path, "is not a valid pattern: "+err.Error())
			}
		}
		for i, e := range gg.Files {
			ep := fmt.Sprintf("%s.git.files[%d].path", p, i)
			if e.Path == "" {
				d.Fail(ep, "", "is required")
			} else if _, err := glob.Compile(e.Path, '/'); err != nil {
				d.Fail(ep, e.Path, "is not a valid glob: "+err.Error())
			}
		}
	case g.Matrix != nil, g.Merge != nil:
		name, c := "matrix", g.Matrix
		if c == nil {
			name, c = "merge", g.Merge
		}
		cp := p + "." + name
		if depth >= maxCombineDepth {
			d.Fail(cp, "", fmt.Sprintf("is nested too deeply: matrix and merge generators nest at most %d levels", maxCombineDepth))
			return
		}
		switch {
		case name == "matrix" && len(c.Generators) != 2:
			d.Fail(cp+".generators", strconv.Itoa(len(c.Generators)), "a matrix combines exactly 2 generators")
		case name == "merge" && len(c.Generators) < 2:
			d.Fail(cp+".generators", strconv.Itoa(len(c.Generators)), "a merge combines at least 2 generators")
		}
		if name == "merge" && len(c.MergeKeys) == 0 {
			d.Fail(cp+".mergeKeys", "", "is required: the parameters that match sets of the generators")
		}
		if name == "matrix" && len(c.MergeKeys) > 0 {
			d.Fail(cp+".mergeKeys", "", "belongs to merge generators")
		}
		for i := range c.Generators {
			validateGenerator(d, fmt.Sprintf("%s.generators[%d]", cp, i), &c.Generators[i], depth+1)
		}
	}
}
