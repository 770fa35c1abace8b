package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
)

// Stats windows, in days.
const (
	DefaultStatsDays = 14
	MaxStatsDays     = 90
)

// StatsDay is what the builds created on one day (UTC) add up to.
type StatsDay struct {
	Date time.Time
	// Total builds created; Finished of them have ended, Succeeded and Failed with that status
	// (the rest of Finished were terminated).
	Total, Finished, Succeeded, Failed int64
	// Ran: builds that started and finished; Started: builds that started.
	Ran, Started int64
	// AvgDuration and MaxDuration of the builds that ran and finished; AvgQueueWait from
	// creation to start of those that started; BusyTime their run durations added up.
	AvgDuration, MaxDuration, AvgQueueWait, BusyTime time.Duration
}

// PipelineStats is one pipeline's days.
type PipelineStats struct {
	PipelineID string
	Days       []StatsDay
}

// BuildStats is the account's (or one pipeline's) builds per day over a window, every day of it
// present, oldest first; with byPipeline also per pipeline (only pipelines with builds); and
// the builds queued and running now.
type BuildStats struct {
	Since, Until    time.Time
	Days            []StatsDay
	Pipelines       []PipelineStats
	Queued, Running int64
	PendingApproval int64
}

// ParseStatsDays reads the days query parameter: empty is DefaultStatsDays.
func ParseStatsDays(v string) (int, error) {
	if v == "" {
		return DefaultStatsDays, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxStatsDays {
		return 0, errdefs.Invalid("days", v, fmt.Sprintf("a whole number of days from 1 to %d", MaxStatsDays))
	}
	return n, nil
}

// BuildStats adds up the builds of the last days days (today included) in the database. A
// principal whose builds are limited by attribute rules sees only some builds, and a sum over
// all of them would tell about the others, so it is refused.
func (s *Service) BuildStats(ctx context.Context, p rbac.Principal, pipelineRef string, days int, byPipeline bool) (BuildStats, error) {
	if err := rbac.Allow(p, rbac.ReadPipelines); err != nil {
		return BuildStats{}, err
	}
	if p.Bound(rbac.KindBuilds) {
		return BuildStats{}, fmt.Errorf("build statistics add up every build of the account, and your role's rules limit which builds you may read: %w", errdefs.ErrForbidden)
	}
	if days < 1 || days > MaxStatsDays {
		return BuildStats{}, errdefs.Invalid("days", strconv.Itoa(days), fmt.Sprintf("a whole number of days from 1 to %d", MaxStatsDays))
	}
	pipelineID := ""
	if pipelineRef != "" {
		pl, err := s.resolvePipeline(ctx, p.AccountID, pipelineRef)
		if err != nil {
			return BuildStats{}, err
		}
		pipelineID = pl.ID
	}
	now := s.now().UTC()
	since := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, 1-days)
	rows, err := s.db.BuildStats(ctx, p.AccountID, pipelineID, since, StatusSuccess, StatusFailed)
	if err != nil {
		return BuildStats{}, err
	}
	counts, err := s.db.CountBuilds(ctx, p.AccountID, pipelineID, StatusQueued, StatusRunning, StatusTerminating, StatusPendingApproval)
	if err != nil {
		return BuildStats{}, err
	}
	out := BuildStats{Since: since, Until: now, Queued: counts[StatusQueued], Running: counts[StatusRunning] + counts[StatusTerminating], PendingApproval: counts[StatusPendingApproval]}
	type acc struct{ total, finished, ok, failed, timed, run, max, waited, wait int64 }
	all := make([]acc, days)
	per := map[string][]acc{}
	var order []string
	for _, r := range rows {
		if r.Day < 0 || r.Day >= int64(days) {
			continue // created in the future of this clock; not a day of the window
		}
		add := func(a *acc) {
			a.total += r.Total
			a.finished += r.Finished
			a.ok += r.Succeeded
			a.failed += r.Failed
			a.timed += r.Timed
			a.run += r.RunMicros
			a.max = max(a.max, r.MaxMicros)
			a.waited += r.Waited
			a.wait += r.WaitMicros
		}
		add(&all[r.Day])
		if byPipeline {
			if _, ok := per[r.PipelineID]; !ok {
				per[r.PipelineID] = make([]acc, days)
				order = append(order, r.PipelineID)
			}
			add(&per[r.PipelineID][r.Day])
		}
	}
	toDays := func(as []acc) []StatsDay {
		ds := make([]StatsDay, len(as))
		for i, a := range as {
			d := StatsDay{Date: since.AddDate(0, 0, i), Total: a.total, Finished: a.finished, Succeeded: a.ok, Failed: a.failed, Ran: a.timed, Started: a.waited,
				MaxDuration: time.Duration(a.max) * time.Microsecond, BusyTime: time.Duration(a.run) * time.Microsecond}
			if a.timed > 0 {
				d.AvgDuration = time.Duration(a.run/a.timed) * time.Microsecond
			}
			if a.waited > 0 {
				d.AvgQueueWait = time.Duration(a.wait/a.waited) * time.Microsecond
			}
			ds[i] = d
		}
		return ds
	}
	out.Days = toDays(all)
	for _, id := range order {
		out.Pipelines = append(out.Pipelines, PipelineStats{PipelineID: id, Days: toDays(per[id])})
	}
	return out, nil
}
