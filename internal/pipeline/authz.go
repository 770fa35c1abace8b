package pipeline

import (
	"context"
	"fmt"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
)

// The resources of this package as attribute-based rules see them (rbac.Authorize): projects
// by name, pipelines by project/name with their tags, builds with their pipeline's tags,
// contexts by name. Projects carry their owner team, pipelines and builds their project's.

func projectResource(pr store.Project) rbac.Resource {
	return rbac.Resource{Kind: rbac.KindProjects, Name: pr.Name, Attrs: rbac.Attributes{Tags: pr.Tags, Owner: pr.OwnerTeamID, OwnerName: pr.OwnerTeam}}
}

func contextResource(name string) rbac.Resource {
	return rbac.Resource{Kind: rbac.KindContexts, Name: name}
}

// pipelineResource describes a stored pipeline; a config that does not decode has no tags.
func pipelineResource(pl store.Pipeline) rbac.Resource {
	c, _ := decodeConfig(pl)
	return rbac.Resource{Kind: rbac.KindPipelines, Name: fullName(pl), Attrs: rbac.Attributes{Tags: c.Tags, Owner: pl.ProjectOwner}}
}

// buildResource describes a build: its pipeline's tags and project's owner, read only when
// rules bind p on builds.
func (s *Service) buildResource(ctx context.Context, p rbac.Principal, b store.Build) (rbac.Resource, error) {
	res := rbac.Resource{Kind: rbac.KindBuilds, Name: b.ID}
	if !p.Bound(rbac.KindBuilds) {
		return res, nil
	}
	pl, err := s.db.GetPipeline(ctx, b.AccountID, b.PipelineID)
	if err != nil {
		return res, fmt.Errorf("build %s: its pipeline: %w", b.ID, err)
	}
	res.Attrs = pipelineResource(pl).Attrs
	return res, nil
}

// authorizeBuild checks that p may take action on build b.
func (s *Service) authorizeBuild(ctx context.Context, p rbac.Principal, a rbac.Action, b store.Build) error {
	res, err := s.buildResource(ctx, p, b)
	if err != nil {
		return err
	}
	return rbac.Authorize(p, a, res)
}

// Resource describes the resource of kind k named name in accountID as rules see it, for
// explaining a decision: projects and contexts by name, pipelines by ID or project/name, builds
// by ID.
func (s *Service) Resource(ctx context.Context, accountID string, k rbac.Kind, name string) (rbac.Resource, error) {
	switch k {
	case rbac.KindProjects:
		pr, err := s.db.GetProject(ctx, accountID, name)
		if err != nil {
			return rbac.Resource{}, err
		}
		return projectResource(pr), nil
	case rbac.KindPipelines:
		pl, err := s.resolvePipeline(ctx, accountID, name)
		if err != nil {
			return rbac.Resource{}, err
		}
		return pipelineResource(pl), nil
	case rbac.KindBuilds:
		b, err := s.db.GetBuild(ctx, accountID, name)
		if err != nil {
			return rbac.Resource{}, err
		}
		return s.buildResource(ctx, rbac.Principal{Role: rbac.Viewer, Rules: rbac.NewRules([]rbac.Kind{rbac.KindBuilds}, nil)}, b)
	case rbac.KindContexts:
		c, err := s.db.GetContext(ctx, accountID, name)
		if err != nil {
			return rbac.Resource{}, err
		}
		return contextResource(c.Name), nil
	}
	return rbac.Resource{}, errdefs.Invalid("resource", string(k), "is not a kind of the CI domain")
}

// visiblePage fills one page of what p may read: it reads pages of rows from the store, keeps
// those visible, and reads on after the last row until the page is full or the rows end, so a
// page short of its limit is the last one (as the API's cursors expect).
func visiblePage[T any](page paging.Page, list func(paging.Page) ([]T, error), id func(T) string, visible func([]T) ([]T, error)) ([]T, error) {
	want := page.Size()
	var out []T
	for {
		rows, err := list(page)
		if err != nil {
			return nil, err
		}
		keep, err := visible(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, keep...)
		if len(out) >= want {
			return out[:want], nil
		}
		if len(rows) < page.Size() {
			return out, nil
		}
		page.After = id(rows[len(rows)-1])
	}
}

// MayReadBuild reports (nil) whether p may still read build id: what a held log stream checks
// again while it stays open.
func (s *Service) MayReadBuild(ctx context.Context, p rbac.Principal, id string) error {
	if err := rbac.Allow(p, rbac.ReadPipelines); err != nil {
		return err
	}
	if !p.Bound(rbac.KindBuilds) {
		return nil
	}
	b, err := s.db.GetBuild(ctx, p.AccountID, id)
	if err != nil {
		return err
	}
	return s.authorizeBuild(ctx, p, rbac.ActRead, b)
}
