package analytics

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
)

// Units of the DORA metrics' values.
const (
	UnitPerDay  = "per-day"
	UnitSeconds = "seconds"
	UnitPercent = "percent"
)

// DefaultFailures is what makes a failed change unless a query says otherwise.
var DefaultFailures = []string{FailureSyncFailed, FailureDegraded, FailureRollback}

// Query selects a DORA report: the deployments Filter selects (Since defaults to
// DefaultRange before Until, Until to now), bucketed by Bucket (BucketDay by default), with
// Failures (DefaultFailures when empty) making a failed change.
type Query struct {
	Filter
	Bucket   string
	Failures []string
}

// Metric is one DORA metric: its value in Unit, and its performance Band.
type Metric struct {
	Value float64
	Unit  string
	Band  string
}

// Bucket is one day, week (from Monday) or month (UTC) of a report's series.
type Bucket struct {
	Start       time.Time
	Deployments int64 // finished syncs
	Successful  int64
	Failures    int64 // failed changes
	// LeadTime is the mean lead time of the bucket's successful deployments whose commit time
	// is known; -1 when there are none.
	LeadTime time.Duration
	// Incidents started in the bucket; OpenIncidents of them not restored yet.
	Incidents, OpenIncidents int64
	// TimeToRestore is the median length of the bucket's restored incidents (the lower median
	// for an even count); -1 when none was restored.
	TimeToRestore time.Duration
}

// Report is the four DORA metrics over a range, with its series.
type Report struct {
	Since, Until time.Time
	Bucket       string
	Failures     []string
	// FailureWindow is how long after a deployment degraded health or a rollback counts.
	FailureWindow time.Duration

	DeploymentFrequency Metric // successful deployments per day
	LeadTimeForChanges  Metric // median, commit → deployed, in seconds
	ChangeFailureRate   Metric // failed changes / deployments, in percent
	TimeToRestore       Metric // median, degraded → healthy, in seconds

	Deployments   int64 // finished syncs in the range
	Successful    int64
	FailedChanges int64
	Incidents     int64 // incidents that started in the range
	OpenIncidents int64 // of which not restored yet
	Series        []Bucket
}

func (q *Query) normalize(now time.Time) error {
	if q.Until.IsZero() {
		q.Until = now
	}
	if q.Since.IsZero() {
		q.Since = q.Until.Add(-DefaultRange)
	}
	if !q.Since.Before(q.Until) {
		return errdefs.Invalid("since", q.Since.Format(time.RFC3339), "is not before until ("+q.Until.Format(time.RFC3339)+")")
	}
	if q.Until.Sub(q.Since) > MaxRange {
		return errdefs.Invalid("since", q.Since.Format(time.RFC3339), fmt.Sprintf("makes a range longer than %d days", int(MaxRange.Hours()/24)))
	}
	switch q.Bucket {
	case "":
		q.Bucket = BucketDay
	case BucketDay, BucketWeek, BucketMonth:
	default:
		return errdefs.Invalid("bucket", q.Bucket, "is not a bucket: use day, week or month")
	}
	if len(q.Failures) == 0 {
		q.Failures = DefaultFailures
	}
	seen := map[string]bool{}
	var fs []string
	for _, f := range q.Failures {
		if !slices.Contains(DefaultFailures, f) {
			return errdefs.Invalid("failures", f, "is not a failure kind: use "+strings.Join(DefaultFailures, ", "))
		}
		if !seen[f] {
			seen[f] = true
			fs = append(fs, f)
		}
	}
	q.Failures = fs
	return nil
}

// DORA computes the four DORA metrics of the principal's account for q.
func (s *Service) DORA(ctx context.Context, p rbac.Principal, q Query) (Report, error) {
	if err := rbac.Allow(p, rbac.ReadRuntimes); err != nil {
		return Report{}, err
	}
	return s.dora(ctx, p.AccountID, q, time.Now())
}

func (s *Service) dora(ctx context.Context, accountID string, q Query, now time.Time) (Report, error) {
	if err := q.normalize(now); err != nil {
		return Report{}, err
	}
	var mask [8]bool // which failure masks are failed changes
	for m := 1; m < 8; m++ {
		mask[m] = (m&1 != 0 && slices.Contains(q.Failures, FailureSyncFailed)) ||
			(m&2 != 0 && slices.Contains(q.Failures, FailureDegraded)) || (m&4 != 0 && slices.Contains(q.Failures, FailureRollback))
	}
	f := q.store()
	if f.Runtime != "" && !strings.HasPrefix(f.Runtime, "rt_") { // a name: the runtimes it was
		ids, err := s.db.RuntimeIDs(ctx, accountID, f.Runtime)
		if err != nil {
			return Report{}, fmt.Errorf("dora: runtime %s: %w", f.Runtime, err)
		}
		if len(ids) == 0 {
			ids = []string{""} // none: no deployments
		}
		f.RuntimeIDs = ids
	}
	days, hist, err := s.aggregate(ctx, accountID, f)
	if err != nil {
		return Report{}, fmt.Errorf("dora: deployments: %w", err)
	}
	r := Report{Since: q.Since, Until: q.Until, Bucket: q.Bucket, Failures: q.Failures, FailureWindow: s.window}
	failures := make(map[int64]int64, len(days))
	for _, d := range days {
		r.Deployments += d.Deployments
		r.Successful += d.Successful
		for m := 1; m < 8; m++ {
			if mask[m] {
				failures[d.Day] += d.Masks[m]
				r.FailedChanges += d.Masks[m]
			}
		}
	}
	r.Series = buckets(days, failures, q.Bucket, q.Since, q.Until)

	rangeDays := q.Until.Sub(q.Since).Hours() / 24
	perDay := float64(r.Successful) / rangeDays
	r.DeploymentFrequency = Metric{Value: round(perDay, 3), Unit: UnitPerDay, Band: frequencyBand(perDay)}

	r.LeadTimeForChanges = Metric{Unit: UnitSeconds, Band: BandNone}
	if med, ok, err := s.medianLead(ctx, accountID, f, hist); err != nil {
		return Report{}, fmt.Errorf("dora: lead time: %w", err)
	} else if ok {
		r.LeadTimeForChanges = Metric{Value: round(med.Seconds(), 3), Unit: UnitSeconds, Band: leadTimeBand(med)}
	}

	r.ChangeFailureRate = Metric{Unit: UnitPercent, Band: BandNone}
	if r.Deployments > 0 {
		rate := 100 * float64(r.FailedChanges) / float64(r.Deployments)
		r.ChangeFailureRate = Metric{Value: round(rate, 2), Unit: UnitPercent, Band: failureRateBand(rate)}
	}

	incidents, err := s.db.Incidents(ctx, accountID, f)
	if err != nil {
		return Report{}, fmt.Errorf("dora: incidents: %w", err)
	}
	var restore []time.Duration
	perBucket := make([][]time.Duration, len(r.Series))
	for _, i := range incidents {
		r.Incidents++
		b := bucketIndex(r.Series, i.Start)
		if b >= 0 {
			r.Series[b].Incidents++
		}
		if i.RestoredAt.IsZero() {
			r.OpenIncidents++
			if b >= 0 {
				r.Series[b].OpenIncidents++
			}
			continue
		}
		restore = append(restore, i.RestoredAt.Sub(i.Start))
		if b >= 0 {
			perBucket[b] = append(perBucket[b], i.RestoredAt.Sub(i.Start))
		}
	}
	r.TimeToRestore = Metric{Unit: UnitSeconds, Band: BandNone}
	if med, ok := lowerMedian(restore); ok {
		r.TimeToRestore = Metric{Value: round(med.Seconds(), 3), Unit: UnitSeconds, Band: restoreBand(med)}
	}
	for b := range r.Series {
		r.Series[b].TimeToRestore = -1
		if med, ok := lowerMedian(perBucket[b]); ok {
			r.Series[b].TimeToRestore = med
		}
	}
	return r, nil
}

// lowerMedian is the median of ds (the lower one for an even count); it sorts ds.
func lowerMedian(ds []time.Duration) (time.Duration, bool) {
	if len(ds) == 0 {
		return 0, false
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[(len(ds)-1)/2], true
}

// bucketIndex is the index of the bucket of series that t falls in, -1 when none does.
func bucketIndex(series []Bucket, t time.Time) int {
	i := sort.Search(len(series), func(i int) bool { return series[i].Start.After(t) }) - 1
	return i
}

const dayLen = 24 * time.Hour

// aggregate returns the day aggregates and the lead-time histogram of the deployments f
// selects. The whole days of a range over the account, one runtime or one cluster come from
// the day statistics the consumers keep; the rest (partial days at the range's ends, an
// application, a set of applications such as a product's, a runtime and a cluster at once)
// from the deployments.
func (s *Service) aggregate(ctx context.Context, accountID string, f store.DeploymentFilter) ([]store.DORADay, map[int64]int64, error) {
	first := f.Since.UTC().Truncate(dayLen)
	if first.Before(f.Since) {
		first = first.Add(dayLen)
	}
	end := f.Until.UTC().Truncate(dayLen)
	if f.App != "" || f.AppsSet || (f.Runtime != "" && f.Cluster != "") || !first.Before(end) {
		days, err := s.db.DORADays(ctx, accountID, f)
		if err != nil {
			return nil, nil, err
		}
		hist, err := s.db.LeadHistogram(ctx, accountID, f)
		return days, hist, err
	}
	scopes := []string{""}
	switch {
	case len(f.RuntimeIDs) > 0:
		scopes = scopes[:0]
		for _, id := range f.RuntimeIDs {
			scopes = append(scopes, "runtime:"+id)
		}
	case f.Runtime != "":
		scopes = []string{"runtime:" + f.Runtime}
	case f.Cluster != "":
		scopes = []string{"cluster:" + f.Cluster}
	}
	fromDay, toDay := DayOf(first), DayOf(end)-1
	days, err := s.db.StatsDays(ctx, accountID, scopes, fromDay, toDay)
	if err != nil {
		return nil, nil, err
	}
	hist, err := s.db.StatsLeadHistogram(ctx, accountID, scopes, fromDay, toDay)
	if err != nil {
		return nil, nil, err
	}
	for _, edge := range [][2]time.Time{{f.Since, first}, {end, f.Until}} {
		if !edge[0].Before(edge[1]) {
			continue
		}
		ef := f
		ef.Since, ef.Until = edge[0], edge[1]
		more, err := s.db.DORADays(ctx, accountID, ef)
		if err != nil {
			return nil, nil, err
		}
		days = append(days, more...)
		h, err := s.db.LeadHistogram(ctx, accountID, ef)
		if err != nil {
			return nil, nil, err
		}
		for b, n := range h {
			hist[b] += n
		}
	}
	return days, hist, nil
}

// medianLead finds the (lower) median lead time: the bucket the histogram puts it in, then the
// value at its rank within that bucket, read from the deployments.
func (s *Service) medianLead(ctx context.Context, accountID string, f store.DeploymentFilter, hist map[int64]int64) (time.Duration, bool, error) {
	var n int64
	bs := make([]int64, 0, len(hist))
	for b, c := range hist {
		n += c
		bs = append(bs, b)
	}
	if n == 0 {
		return 0, false, nil
	}
	slices.Sort(bs)
	k := (n - 1) / 2
	for _, b := range bs {
		if k < hist[b] {
			d, err := s.db.LeadInBucket(ctx, accountID, f, b, k)
			return d, err == nil, err
		}
		k -= hist[b]
	}
	return 0, false, nil
}

// bucketStart is the start of the bucket t falls in.
func bucketStart(t time.Time, bucket string) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	switch bucket {
	case BucketWeek:
		back := (int(day.Weekday()) + 6) % 7 // days since Monday
		return day.AddDate(0, 0, -back)
	case BucketMonth:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return day
}

func nextBucket(t time.Time, bucket string) time.Time {
	switch bucket {
	case BucketWeek:
		return t.AddDate(0, 0, 7)
	case BucketMonth:
		return t.AddDate(0, 1, 0)
	}
	return t.AddDate(0, 0, 1)
}

// buckets folds the days SQL aggregated into the series' buckets, every bucket of the range
// present (empty ones with zeros).
func buckets(days []store.DORADay, failures map[int64]int64, bucket string, since, until time.Time) []Bucket {
	var out []Bucket
	idx := map[time.Time]int{}
	for b := bucketStart(since, bucket); b.Before(until); b = nextBucket(b, bucket) {
		idx[b] = len(out)
		out = append(out, Bucket{Start: b})
	}
	leadN := make([]int64, len(out))
	leadSum := make([]time.Duration, len(out))
	for _, d := range days {
		i, ok := idx[bucketStart(time.Unix(d.Day*86400, 0), bucket)]
		if !ok {
			continue
		}
		out[i].Deployments += d.Deployments
		out[i].Successful += d.Successful
		out[i].Failures += failures[d.Day]
		leadN[i] += d.LeadCount
		leadSum[i] += d.LeadSum
	}
	for i := range out {
		out[i].LeadTime = -1
		if leadN[i] > 0 {
			out[i].LeadTime = (leadSum[i] / time.Duration(leadN[i])).Round(time.Millisecond)
		}
	}
	return out
}

// Band thresholds (docs/analytics.md, "Bands").
const (
	day   = 24 * time.Hour
	week  = 7 * day
	month = 30 * day
)

func frequencyBand(perDay float64) string {
	switch {
	case perDay >= 1:
		return BandElite // on demand: daily or more
	case perDay >= 1.0/7:
		return BandHigh // weekly to daily
	case perDay >= 1.0/30:
		return BandMedium // monthly to weekly
	}
	return BandLow
}

func leadTimeBand(d time.Duration) string {
	switch {
	case d < day:
		return BandElite
	case d < week:
		return BandHigh
	case d < month:
		return BandMedium
	}
	return BandLow
}

func failureRateBand(pct float64) string {
	switch {
	case pct <= 5:
		return BandElite
	case pct <= 10:
		return BandHigh
	case pct <= 15:
		return BandMedium
	}
	return BandLow
}

func restoreBand(d time.Duration) string {
	switch {
	case d < time.Hour:
		return BandElite
	case d < day:
		return BandHigh
	case d < week:
		return BandMedium
	}
	return BandLow
}

func round(v float64, places int) float64 {
	p := 1.0
	for range places {
		p *= 10
	}
	if v >= 0 {
		return float64(int64(v*p+0.5)) / p
	}
	return -float64(int64(-v*p+0.5)) / p
}
