package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Plan is the caller's account's plan: its limits and what the account uses of each now.
type Plan struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	// Default is set when the account was never put on a plan: the catalogue's default applies.
	Default   bool        `json:"default"`
	ChangedAt *time.Time  `json:"changedAt,omitempty"`
	Limits    []PlanLimit `json:"limits"`
}

// PlanLimit is one limited resource of a plan and the account's use of it.
type PlanLimit struct {
	// Resource is users, runners, concurrent-builds, build-minutes, hosted-runtimes,
	// clusters-per-runtime or applications.
	Resource string `json:"resource"`
	// Limit is the most the plan allows; -1 is unlimited.
	Limit int64 `json:"limit"`
	// Used is what the account has now (build-minutes: this calendar month, UTC); -1 when the
	// control plane does not count it (clusters-per-runtime is counted per runtime when one is added).
	Used   int64  `json:"used"`
	Period string `json:"period,omitempty"` // "month" for build-minutes
}

// Usage is an account's metered use per UTC day.
type Usage struct {
	Plan  string     `json:"plan"`
	Since time.Time  `json:"since"`
	Until time.Time  `json:"until"`
	Days  []UsageDay `json:"days"`
	// Totals sums the days; its activeUsers is the busiest day's (users repeat across days).
	Totals UsageDay `json:"totals"`
}

// UsageDay is one day of metered use (Totals: the window's).
type UsageDay struct {
	Day          string  `json:"day,omitempty"` // YYYY-MM-DD, UTC
	BuildMinutes float64 `json:"buildMinutes"`
	Builds       int64   `json:"builds"`
	Deployments  int64   `json:"deployments"`
	ActiveUsers  int64   `json:"activeUsers"`
}

// GetPlan returns the account's plan, limits and current use.
func (c *Client) GetPlan(ctx context.Context) (Plan, error) {
	var out Plan
	err := c.do(ctx, http.MethodGet, "/api/v1/plan", nil, nil, &out)
	return out, err
}

// GetUsage returns the account's metered use per day since since ("30d", "72h", "2026-11-01";
// empty: the last 30 days).
func (c *Client) GetUsage(ctx context.Context, since string) (Usage, error) {
	q := url.Values{}
	if since != "" {
		q.Set("since", since)
	}
	var out Usage
	err := c.do(ctx, http.MethodGet, "/api/v1/usage", q, nil, &out)
	return out, err
}

// GetUsageCSV returns the same as GetUsage as CSV (day,build_minutes,builds,deployments,active_users).
func (c *Client) GetUsageCSV(ctx context.Context, since string) ([]byte, error) {
	q := url.Values{"format": {"csv"}}
	if since != "" {
		q.Set("since", since)
	}
	req, err := c.newRequest(ctx, http.MethodGet, "/api/v1/usage?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return nil, readError(resp)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 16<<20))
}
