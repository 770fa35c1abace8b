package rest

import (
	"net/http"
	"strconv"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

func (a *API) getPlan(w http.ResponseWriter, r *http.Request) error {
	p, err := a.billing.Get(r.Context(), principal(r))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, ToPlan(p))
	return nil
}

// ToPlan maps an account's plan to its wire type.
func ToPlan(p billing.AccountPlan) client.Plan {
	out := client.Plan{Name: p.Plan.Name, Title: p.Plan.Title, Default: p.Default, Limits: make([]client.PlanLimit, 0, len(p.Uses))}
	if !p.ChangedAt.IsZero() {
		t := p.ChangedAt
		out.ChangedAt = &t
	}
	for _, u := range p.Uses {
		out.Limits = append(out.Limits, client.PlanLimit{Resource: string(u.Resource), Limit: u.Limit, Used: u.Used, Period: u.Period})
	}
	return out
}

func (a *API) getUsage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	since, err := billing.ParseSince("since", q.Get("since"), time.Now())
	if err != nil {
		return err
	}
	format := q.Get("format")
	if format != "" && format != "json" && format != "csv" {
		return errdefs.Invalid("format", format, "is not an export format: use json or csv")
	}
	u, err := a.billing.Usage(r.Context(), principal(r), since)
	if err != nil {
		return err
	}
	if format == "csv" {
		body := u.CSV()
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="freshet-usage-`+since.Format(time.DateOnly)+`.csv"`)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		w.Write(body)
		return nil
	}
	httpx.WriteJSON(w, http.StatusOK, ToUsage(u))
	return nil
}

// ToUsage maps metered usage to its wire type.
func ToUsage(u billing.Usage) client.Usage {
	out := client.Usage{Plan: u.Plan, Since: u.Since, Until: u.Until, Days: make([]client.UsageDay, 0, len(u.Days)),
		Totals: client.UsageDay{BuildMinutes: u.Totals.BuildMinutes, Builds: u.Totals.Builds, Deployments: u.Totals.Deployments, ActiveUsers: u.Totals.ActiveUsers}}
	for _, d := range u.Days {
		out.Days = append(out.Days, client.UsageDay{Day: d.Day.Format(time.DateOnly), BuildMinutes: d.BuildMinutes, Builds: d.Builds,
			Deployments: d.Deployments, ActiveUsers: d.ActiveUsers})
	}
	return out
}
