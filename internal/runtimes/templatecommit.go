package runtimes

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
)

// commitTimeout bounds a commit through a runtime (a clone, a push and a load).
const commitTimeout = 90 * time.Second

// CommitWorkflowTemplate commits a WorkflowTemplate to Git Source gitSource of p's account's
// runtime through its app-proxy (POST git-sources/{name}/workflow-templates), as p: p needs
// create on the runtime's workflows (a member, or a rule that lets it). Delivery Pipelines run
// on hybrid runtimes: a hosted runtime is refused here, before anything is sent.
func (s *Service) CommitWorkflowTemplate(ctx context.Context, p rbac.Principal, runtime, gitSource string, req appproxyv1.WorkflowTemplateCommitRequest) (appproxyv1.WorkflowTemplateCommit, error) {
	var out appproxyv1.WorkflowTemplateCommit
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return out, err
	}
	if runtime == "" {
		return out, errdefs.Invalid("runtime", "", "is required: the runtime whose Git Source the template is committed to")
	}
	if gitSource == "" {
		return out, errdefs.Invalid("gitSource", "", "is required: the Git Source the template is committed to")
	}
	row, err := s.db.GetRuntime(ctx, p.AccountID, runtime)
	if err != nil {
		return out, err
	}
	if row.Type == TypeHosted {
		return out, errdefs.Invalid("runtime", runtime, "is a hosted runtime: Delivery Pipelines (Argo Workflows) run on hybrid runtimes only")
	}
	if err := rbac.Authorize(p, rbac.ActCreate, workflowResource(row.Name, row.OwnerTeamID, req.Namespace, "")); err != nil {
		return out, err
	}
	path := "/app-proxy/api/v1/git-sources/" + url.PathEscape(gitSource) + "/workflow-templates"
	if err := s.callRuntime(ctx, p, row.AccountID, row.ID, row.Name, http.MethodPost, path, req, &out, 1<<20, commitTimeout); err != nil {
		return out, fmt.Errorf("commit to git source %s of runtime %s: %w", gitSource, row.Name, err)
	}
	return out, nil
}
