package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/analytics"
	"github.com/freshet-dev/freshet/internal/config"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/store"
)

// parseTimes reads --since and --until (RFC 3339, or a duration ago: 36h, 30d, 2w).
func parseTimes(since, until string, dst ...*time.Time) error {
	now := time.Now()
	for i, t := range []struct{ flag, v string }{{"since", since}, {"until", until}} {
		if t.v == "" {
			continue
		}
		v, err := analytics.ParseTime(t.flag, t.v, now)
		if err != nil {
			return usageError("--%s %q is not a time: use RFC 3339 (2026-01-02T15:04:05Z) or a duration ago (36h, 30d, 2w)", t.flag, t.v)
		}
		*dst[i] = v
	}
	return nil
}

func (a *app) deploymentsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "deployments", Aliases: []string{"deployment"}, Short: "Read the deployments GitOps applications' syncs made"}
	var f client.DeploymentFilter
	var since, until, output string
	var max int
	list := &cobra.Command{
		Use:   "list [--app A] [--runtime R] [--cluster C] [--product P] [--since 30d]",
		Short: "List deployments, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return usageError("%v", err)
			}
			if err := parseTimes(since, until, &f.Since, &f.Until); err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			ds, err := listAll(cmd.Context(), max, func(o client.ListOptions) (client.List[client.Deployment], error) {
				f.ListOptions = o
				return c.ListDeployments(cmd.Context(), f)
			})
			if err != nil {
				return err
			}
			return printData(a.stdout, output, ds, func(tw *tabwriter.Writer) {
				row(tw, "FINISHED", "APPLICATION", "RUNTIME", "CLUSTER", "NAMESPACE", "REVISION", "TRIGGER", "RESULT", "DURATION", "LEAD TIME")
				for _, d := range ds {
					lead := "-"
					if d.LeadTimeSeconds != nil {
						lead = (time.Duration(*d.LeadTimeSeconds) * time.Second).String()
					}
					row(tw, d.FinishedAt, d.Application, d.Runtime, d.Cluster, d.Namespace, short(d.Revision), d.Trigger, d.Result,
						(time.Duration(d.DurationSeconds*1000) * time.Millisecond).String(), lead)
				}
			})
		},
	}
	fs := list.Flags()
	fs.StringVar(&f.App, "app", "", "only this application")
	fs.StringVar(&f.Runtime, "runtime", "", "only this runtime (name or ID)")
	fs.StringVar(&f.Cluster, "cluster", "", "only this destination cluster (name or server URL)")
	fs.StringVar(&f.Product, "product", "", "only this product's applications")
	fs.StringVar(&since, "since", "", "from this time (RFC 3339) or this long ago (36h, 30d, 2w)")
	fs.StringVar(&until, "until", "", "until this time (RFC 3339) or this long ago")
	fs.IntVar(&max, "limit", 100, "list at most this many (0: all)")
	addOutputFlag(list, &output)
	cmd.AddCommand(list)
	return cmd
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

func (a *app) doraCommand() *cobra.Command {
	var q client.DORAQuery
	var since, until, failures, output string
	cmd := &cobra.Command{
		Use:   "dora [--app A] [--runtime R] [--cluster C] [--product P] [--since 30d] [--bucket day|week|month]",
		Short: "Show the four DORA metrics of GitOps deployments",
		Long: "Shows deployment frequency, lead time for changes, change failure rate and time to restore,\n" +
			"each with its DORA performance band, over a range (the last 30 days by default), with a series\n" +
			"by day, week or month. docs/analytics.md defines each metric.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return usageError("%v", err)
			}
			if err := parseTimes(since, until, &q.Since, &q.Until); err != nil {
				return err
			}
			if failures != "" {
				q.Failures = strings.Split(failures, ",")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			r, err := c.DORA(cmd.Context(), q)
			if err != nil {
				return err
			}
			return printData(a.stdout, output, r, func(tw *tabwriter.Writer) {
				row(tw, "METRIC", "VALUE", "BAND")
				row(tw, "deployment frequency", fmt.Sprintf("%g per day", r.DeploymentFrequency.Value), r.DeploymentFrequency.Band)
				row(tw, "lead time for changes", seconds(r.LeadTimeForChanges), r.LeadTimeForChanges.Band)
				row(tw, "change failure rate", fmt.Sprintf("%g %%", r.ChangeFailureRate.Value), r.ChangeFailureRate.Band)
				row(tw, "time to restore", seconds(r.TimeToRestore), r.TimeToRestore.Band)
				row(tw, "deployments", fmt.Sprintf("%d (%d failed changes)", r.Deployments, r.FailedChanges), "")
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&q.App, "app", "", "only this application")
	fs.StringVar(&q.Runtime, "runtime", "", "only this runtime (name or ID)")
	fs.StringVar(&q.Cluster, "cluster", "", "only this destination cluster (name or server URL)")
	fs.StringVar(&q.Product, "product", "", "only this product's applications, as a whole")
	fs.StringVar(&since, "since", "", "from this time (RFC 3339) or this long ago (default 30d)")
	fs.StringVar(&until, "until", "", "until this time (RFC 3339) or this long ago (default now)")
	fs.StringVar(&q.Bucket, "bucket", "", "the series' buckets: day, week or month (default day)")
	fs.StringVar(&failures, "failures", "", "what makes a failed change, comma-separated: sync-failed, degraded, rollback (default all)")
	addOutputFlag(cmd, &output)
	return cmd
}

func seconds(m client.DORAMetric) string {
	if m.Band == analytics.BandNone {
		return "-"
	}
	return (time.Duration(m.Value*1000) * time.Millisecond).String()
}

// adminCommand holds the operator's tools that work on the database directly, like the server:
// run them where the server runs, with the same settings.
func (a *app) adminCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "admin", Short: "Operator tools that work on the server's database directly"}
	an := &cobra.Command{Use: "analytics", Short: "Maintain the analytics tables"}
	var opts server.Options
	var account string
	var reset bool
	rebuild := &cobra.Command{
		Use:   "rebuild [--account ID] [--reset]",
		Short: "Derive the deployment records and activity counts again from the source tables",
		Long: "Derives every recorded sync's deployment record again (replacing the one its event gave), recomputes\n" +
			"which deployments failed from the health history, and recounts the daily activity from the audit\n" +
			"log, one account per transaction. The health history has no source table and is kept. With --reset\n" +
			"the deployment records of syncs no longer recorded (deleted applications and runtimes) go too.\n" +
			"The servers may keep running.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := config.Apply(cmd.Flags(), ""); err != nil {
				return err
			}
			db, err := store.Open(cmd.Context(), opts.DSN(), nil)
			if err != nil {
				return err
			}
			defer db.Close()
			start := time.Now()
			res, err := analytics.Rebuild(cmd.Context(), db, analytics.RebuildOptions{AccountID: account, Reset: reset, FailureWindow: opts.AnalyticsFailureWindow})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Rebuilt %d deployment records of %d accounts in %s.\n", res.Deployments, res.Accounts, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	fs := rebuild.Flags()
	fs.StringVar(&opts.DataDir, "data-dir", server.DefaultDataDir(), "the server's data directory")
	fs.StringVar(&opts.DB, "db", "", "the server's database (default: SQLite in --data-dir)")
	fs.DurationVar(&opts.AnalyticsFailureWindow, "analytics-failure-window", analytics.DefaultFailureWindow, "the servers' --analytics-failure-window")
	fs.StringVar(&account, "account", "", "only this account (ID; default: every account)")
	fs.BoolVar(&reset, "reset", false, "delete the accounts' deployment records first, also those whose syncs are no longer recorded")
	an.AddCommand(rebuild)
	cmd.AddCommand(an, a.backupCommand(), a.restoreCommand())
	return cmd
}
