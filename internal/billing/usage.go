package billing

import (
	"bytes"
	"context"
	"encoding/csv"
	"strconv"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
)

// Usage metering bounds.
const (
	DefaultUsageSince = 30 * 24 * time.Hour
	MaxUsageDays      = 400
)

// UsageDay is one UTC day of an account's metered use.
type UsageDay struct {
	Day          time.Time // midnight UTC
	BuildMinutes float64   // run time of the builds that ended that day, in minutes
	Builds       int64     // builds that ended that day
	Deployments  int64     // finished syncs (not dry runs) that ended that day
	ActiveUsers  int64     // distinct users with an audited action that day (a login counts)
}

// Usage is an account's metered use per day from Since (midnight UTC) to Until.
type Usage struct {
	AccountID string
	Plan      string
	Since     time.Time
	Until     time.Time
	Days      []UsageDay // days with no use are left out
	Totals    UsageDay   // Day is zero
}

// ParseSince reads a usage window's start as the API and CLI take it: a number of days ("30d"),
// a Go duration ("72h") or a date ("2026-11-01", UTC). Empty is DefaultUsageSince. The start is
// rounded down to midnight UTC; a window longer than MaxUsageDays is refused.
func ParseSince(field, v string, now time.Time) (time.Time, error) {
	now = now.UTC()
	var since time.Time
	switch {
	case v == "":
		since = now.Add(-DefaultUsageSince)
	case strings.HasSuffix(v, "d") && len(v) > 1:
		n, err := strconv.Atoi(strings.TrimSuffix(v, "d"))
		if err != nil || n < 1 {
			return time.Time{}, errdefs.Invalid(field, v, "is not a window: use a number of days (30d), a duration (72h) or a date (2026-11-01)")
		}
		if n > MaxUsageDays {
			return time.Time{}, errdefs.Invalid(field, v, "is longer than "+strconv.Itoa(MaxUsageDays)+" days")
		}
		since = now.AddDate(0, 0, -n+1)
	default:
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			since = now.Add(-d)
		} else if t, err := time.Parse(time.DateOnly, v); err == nil {
			since = t
		} else {
			return time.Time{}, errdefs.Invalid(field, v, "is not a window: use a number of days (30d), a duration (72h) or a date (2026-11-01)")
		}
	}
	since = time.Date(since.Year(), since.Month(), since.Day(), 0, 0, 0, 0, time.UTC)
	if since.After(now) {
		return time.Time{}, errdefs.Invalid(field, v, "is in the future")
	}
	if now.Sub(since) > MaxUsageDays*24*time.Hour {
		return time.Time{}, errdefs.Invalid(field, v, "is longer than "+strconv.Itoa(MaxUsageDays)+" days")
	}
	return since, nil
}

// Usage meters p's account's use per UTC day since since (see ParseSince). Every member may
// read it.
func (s *Service) Usage(ctx context.Context, p rbac.Principal, since time.Time) (Usage, error) {
	if err := rbac.Allow(p, rbac.ReadAccount); err != nil {
		return Usage{}, err
	}
	row, err := s.db.GetAccountPlan(ctx, p.AccountID)
	if err != nil {
		return Usage{}, err
	}
	now := s.now().UTC()
	days, err := s.db.UsageDays(ctx, p.AccountID, since, now)
	if err != nil {
		return Usage{}, err
	}
	u := Usage{AccountID: p.AccountID, Plan: s.plan(p.AccountID, row.Plan).Name, Since: since, Until: now}
	for _, d := range days {
		day := UsageDay{Day: d.Day, BuildMinutes: minutes(d.BuildSeconds), Builds: d.Builds, Deployments: d.Deployments, ActiveUsers: d.ActiveUsers}
		u.Days = append(u.Days, day)
		u.Totals.BuildMinutes += day.BuildMinutes
		u.Totals.Builds += day.Builds
		u.Totals.Deployments += day.Deployments
		u.Totals.ActiveUsers = max(u.Totals.ActiveUsers, day.ActiveUsers) // the busiest day: users repeat across days
	}
	u.Totals.BuildMinutes = float64(int64(u.Totals.BuildMinutes*100+0.5)) / 100
	return u, nil
}

func minutes(seconds int64) float64 { return float64(seconds*100/60) / 100 }

// UsageCSVHeader is the first line of a usage CSV export.
var UsageCSVHeader = []string{"day", "build_minutes", "builds", "deployments", "active_users"}

// CSV writes u's days as CSV (UsageCSVHeader, then one row per day, days in order).
func (u Usage) CSV() []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(UsageCSVHeader)
	for _, d := range u.Days {
		w.Write([]string{d.Day.Format(time.DateOnly), strconv.FormatFloat(d.BuildMinutes, 'f', -1, 64),
			strconv.FormatInt(d.Builds, 10), strconv.FormatInt(d.Deployments, 10), strconv.FormatInt(d.ActiveUsers, 10)})
	}
	w.Flush()
	return b.Bytes()
}
