package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/pipeline/spec"
	"github.com/freshet-dev/freshet/internal/store"
)

// job assembles what a runner needs for build b: the spec, every variable resolved (built-in
// CF_* variables, pipeline variables, contexts, the run's variables — later ones win), the
// registries it may use (the pipeline's registry contexts, in its order, then the account's
// default registry), the git contexts its git-clone steps may clone through (the pipeline's),
// and the secret values to mask (registry passwords and git tokens among them). Secrets are
// decrypted here, at hand-over, and never stored in the build.
func (s *Service) job(ctx context.Context, b store.Build) (runnerv1.Job, error) {
	pl, err := s.db.GetPipeline(ctx, b.AccountID, b.PipelineID)
	if err != nil {
		return runnerv1.Job{}, err
	}
	cfg, err := decodeConfig(pl)
	if err != nil {
		return runnerv1.Job{}, err
	}
	vars := map[string]string{}
	var secrets []string

	owner, repo, _ := strings.Cut(b.Repo, "/")
	short, tag := spec.ShortRevision(b.SHA), spec.BranchTagNormalized(b.Branch)
	for k, v := range map[string]string{
		"CF_BUILD_ID": b.ID, "CF_BUILD_NUMBER": strconv.FormatInt(b.Number, 10),
		"CF_BUILD_TIMESTAMP": strconv.FormatInt(b.CreatedAt.UnixMilli(), 10), "CF_BUILD_TRIGGER": b.TriggerType,
		"CF_BUILD_INITIATOR": b.TriggeredBy, "CF_BUILD_URL": s.baseURL + "/builds/" + b.ID,
		"CF_BRANCH": b.Branch, "CF_BRANCH_TAG_NORMALIZED": tag, "CF_BRANCH_TAG_NORMALIZED_LOWER_CASE": strings.ToLower(tag),
		"CF_REVISION": b.SHA, "CF_SHORT_REVISION": short, "CF_REPO_OWNER": owner, "CF_REPO_NAME": repo,
		"CF_COMMIT_MESSAGE": b.CommitMessage, "CF_COMMIT_AUTHOR": b.CommitAuthor,
		"CF_PIPELINE_NAME": fullName(pl), "CF_PROJECT_NAME": pl.ProjectName, "CF_ACCOUNT": b.AccountID,
	} {
		vars[k] = v
	}
	for _, v := range cfg.Variables {
		val := v.Value
		if v.Encrypted {
			pt, err := s.keys.Decrypt(v.Value, variableAAD(b.AccountID, v.Key))
			if err != nil {
				return runnerv1.Job{}, fmt.Errorf("decrypt pipeline variable %s: %w", v.Key, err)
			}
			val = string(pt)
			secrets = append(secrets, val)
		}
		vars[v.Key] = val
	}
	// The clusters the steps name are checked again: the pipeline's contexts may have changed
	// since the build was queued.
	p, stepTypes, err := s.compileSpec(ctx, b.SpecYAML)
	if err != nil {
		return runnerv1.Job{}, err
	}
	if err := s.checkClusters(ctx, b.AccountID, cfg, p); err != nil {
		return runnerv1.Job{}, err
	}
	named := map[string]bool{}
	for _, u := range p.Clusters() {
		named[u.Context] = true
	}
	var registries []runnerv1.Registry
	var gits []runnerv1.GitContext
	var clusters []runnerv1.Cluster
	var helmRepos []runnerv1.HelmRepo
	for _, name := range cfg.Contexts {
		c, err := s.db.GetContext(ctx, b.AccountID, name)
		if err != nil {
			return runnerv1.Job{}, fmt.Errorf("context %s: %w", name, err)
		}
		switch c.Type {
		case ContextKubernetes:
			// Only the clusters the steps name travel with the job.
			if !named[c.Name] {
				continue
			}
			cl, err := s.jobCluster(c)
			if err != nil {
				return runnerv1.Job{}, err
			}
			clusters = append(clusters, cl)
			secrets = appendNonEmpty(secrets, clusterSecrets(cl)...)
			continue
		case ContextHelmRepo:
			hr, err := s.jobHelmRepo(c)
			if err != nil {
				return runnerv1.Job{}, err
			}
			helmRepos = append(helmRepos, hr)
			secrets = appendNonEmpty(secrets, hr.Password)
			continue
		case ContextRegistry:
			reg, err := s.jobRegistry(c)
			if err != nil {
				return runnerv1.Job{}, err
			}
			registries = append(registries, reg)
			continue
		case ContextGit:
			g, err := s.jobGit(c)
			if err != nil {
				return runnerv1.Job{}, err
			}
			gits = append(gits, g)
			secrets = append(secrets, g.Token)
			continue
		}
		vals, err := s.contextValues(c)
		if err != nil {
			return runnerv1.Job{}, err
		}
		for k, v := range vals {
			vars[k] = v
			if c.Type == ContextSecret {
				secrets = append(secrets, v)
			}
		}
	}
	// The account's default registry comes too, where build steps push unless told otherwise.
	if def, ok, err := s.defaultRegistry(ctx, b.AccountID); err != nil {
		return runnerv1.Job{}, fmt.Errorf("default registry: %w", err)
	} else if ok && !slices.ContainsFunc(registries, func(r runnerv1.Registry) bool { return r.Name == def.Name }) {
		reg, err := s.jobRegistry(def)
		if err != nil {
			return runnerv1.Job{}, err
		}
		registries = append(registries, reg)
	}
	for _, r := range registries {
		if r.Password != "" {
			secrets = append(secrets, r.Password)
		}
	}
	runVars, err := decodeMap(b.Variables)
	if err != nil {
		return runnerv1.Job{}, fmt.Errorf("build %s: decode variables: %w", b.ID, err)
	}
	for k, v := range runVars {
		vars[k] = v
	}
	return runnerv1.Job{BuildID: b.ID, Number: b.Number, Pipeline: fullName(pl), SpecYAML: b.SpecYAML,
		Variables: vars, Secrets: secrets, LogOffset: b.LogSize, Steps: plannedSteps(p), Registries: registries, StepTypes: stepTypes,
		GitContexts: gits, Clusters: clusters, HelmRepos: helmRepos}, nil
}

// appendNonEmpty appends the values that are not empty.
func appendNonEmpty(to []string, vals ...string) []string {
	for _, v := range vals {
		if v != "" {
			to = append(to, v)
		}
	}
	return to
}
