package runtimes

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
)

// Bounds of WorkflowRunStats' days.
const (
	DefaultWorkflowStatsDays = 14
	MaxWorkflowStatsDays     = 90
)

// WorkflowRunStats counts the Delivery Pipelines runs (Argo Workflows) the account's runtimes
// reported finished, per UTC day from Since (today included), from the workflow archive.
type WorkflowRunStats struct {
	Since, Until time.Time
	Days         []WorkflowRunDay
}

// WorkflowRunDay is one day's finished workflows by phase (Succeeded, Failed, Error).
type WorkflowRunDay struct {
	Day                        time.Time
	Succeeded, Failed, Errored int64
}

// ParseWorkflowStatsDays reads the days query parameter: empty is DefaultWorkflowStatsDays.
func ParseWorkflowStatsDays(v string) (int, error) {
	if v == "" {
		return DefaultWorkflowStatsDays, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxWorkflowStatsDays {
		return 0, errdefs.Invalid("days", v, fmt.Sprintf("a whole number of days from 1 to %d", MaxWorkflowStatsDays))
	}
	return n, nil
}

// WorkflowRunStats adds up the archived workflows of the last days days. A principal whose
// workflows are limited by attribute rules sees only some of them, and a sum over all would tell
// about the others, so it is refused.
func (s *Service) WorkflowRunStats(ctx context.Context, p rbac.Principal, days int) (WorkflowRunStats, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return WorkflowRunStats{}, err
	}
	if p.Bound(rbac.KindWorkflows) {
		return WorkflowRunStats{}, fmt.Errorf("workflow run statistics add up every workflow of the account, and your role's rules limit which workflows you may read: %w", errdefs.ErrForbidden)
	}
	if days < 1 || days > MaxWorkflowStatsDays {
		return WorkflowRunStats{}, errdefs.Invalid("days", strconv.Itoa(days), fmt.Sprintf("a whole number of days from 1 to %d", MaxWorkflowStatsDays))
	}
	now := s.now().UTC()
	since := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, 1-days)
	until := since.AddDate(0, 0, days)
	counts, err := s.db.WorkflowRunCounts(ctx, p.AccountID, since, until)
	if err != nil {
		return WorkflowRunStats{}, err
	}
	out := WorkflowRunStats{Since: since, Until: now, Days: make([]WorkflowRunDay, days)}
	first := since.Unix() / 86400
	for i := range out.Days {
		out.Days[i].Day = since.AddDate(0, 0, i)
	}
	for _, c := range counts {
		i := c.Day - first
		if i < 0 || i >= int64(days) {
			continue
		}
		switch c.Phase {
		case "Succeeded":
			out.Days[i].Succeeded += c.N
		case "Failed":
			out.Days[i].Failed += c.N
		case "Error":
			out.Days[i].Errored += c.N
		}
	}
	return out, nil
}
