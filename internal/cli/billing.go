package cli

import (
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/rest"
	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/config"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/store"
)

// planCommand reads the account's plan through the API; `plan set` is the operator's and works
// on the database, like `freshet master-key` (an account admin does not choose their own plan).
func (a *app) planCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "plan", Short: "The account's billing plan: its limits and what the account uses of each"}
	var output string
	get := &cobra.Command{
		Use:   "get",
		Short: "Show the account's plan, its limits and the current use",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return usageError("%v", err)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			p, err := c.GetPlan(cmd.Context())
			if err != nil {
				return err
			}
			return printData(a.stdout, output, p, func(tw *tabwriter.Writer) { printPlan(tw, p) })
		},
	}
	addOutputFlag(get, &output)

	var opts server.Options
	var account string
	var setOutput string
	set := &cobra.Command{
		Use:   "set PLAN --account NAME",
		Short: "Put an account on a plan at once (operators: works on the server's database)",
		Long: "Puts an account on a plan of the servers' catalogue (--billing-plans; default: the embedded\n" +
			"free/team/enterprise catalogue). It works on the database directly, like 'freshet master-key': run it\n" +
			"where the server runs, with the same settings. The change is audited in the account and takes\n" +
			"effect at the next limit check on every replica; nothing already running is stopped.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(setOutput); err != nil {
				return usageError("%v", err)
			}
			if account == "" {
				return usageError("--account is required: the name or ID of the account to put on %s", args[0])
			}
			if err := config.Apply(cmd.Flags(), ""); err != nil {
				return err
			}
			cat, err := opts.Billing.Catalogue()
			if err != nil {
				return err
			}
			db, err := store.Open(cmd.Context(), opts.DSN(), nil)
			if err != nil {
				return err
			}
			defer db.Close()
			svc := billing.New(billing.Deps{Store: db, Catalogue: cat})
			p, err := svc.SetPlan(cmd.Context(), account, args[0], "operator (freshet plan set)")
			if err != nil {
				return err
			}
			out := rest.ToPlan(p)
			return printData(a.stdout, setOutput, out, func(tw *tabwriter.Writer) { printPlan(tw, out) })
		},
	}
	fs := set.Flags()
	fs.StringVar(&account, "account", "", "the account's name or ID")
	fs.StringVar(&opts.DataDir, "data-dir", server.DefaultDataDir(), "the server's data directory")
	fs.StringVar(&opts.DB, "db", "", "the server's database (default: SQLite in --data-dir)")
	opts.Billing.BindFlags(fs)
	addOutputFlag(set, &setOutput)
	cmd.AddCommand(get, set)
	return cmd
}

func printPlan(tw *tabwriter.Writer, p client.Plan) {
	name := p.Name
	if p.Default {
		name += " (default)"
	}
	fmt.Fprintf(tw, "PLAN\t%s\t%s\n", name, p.Title)
	row(tw, "RESOURCE", "USED", "LIMIT", "PERIOD")
	for _, l := range p.Limits {
		used, limit := strconv.FormatInt(l.Used, 10), strconv.FormatInt(l.Limit, 10)
		if l.Used < 0 {
			used = "per runtime"
		}
		if l.Limit < 0 {
			limit = "unlimited"
		}
		row(tw, l.Resource, used, limit, l.Period)
	}
}

func (a *app) usageCommand() *cobra.Command {
	var output, since, format string
	cmd := &cobra.Command{
		Use:   "usage [--since 30d] [-o json|yaml] [--format csv]",
		Short: "Show the account's metered use per day: build minutes, builds, deployments, active users",
		Long: "Shows the account's use per UTC day since --since: a number of days (30d), a duration (72h) or a\n" +
			"date (2026-11-01). --format csv writes the days as CSV for a spreadsheet; -o json the API's JSON.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return usageError("%v", err)
			}
			if format != "" && format != "csv" {
				return usageError("--format %q is not csv (for JSON use -o json)", format)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			if format == "csv" {
				data, err := c.GetUsageCSV(cmd.Context(), since)
				if err != nil {
					return err
				}
				_, err = a.stdout.Write(data)
				return err
			}
			u, err := c.GetUsage(cmd.Context(), since)
			if err != nil {
				return err
			}
			return printData(a.stdout, output, u, func(tw *tabwriter.Writer) {
				row(tw, "DAY", "BUILD MINUTES", "BUILDS", "DEPLOYMENTS", "ACTIVE USERS")
				for _, d := range u.Days {
					row(tw, d.Day, d.BuildMinutes, d.Builds, d.Deployments, d.ActiveUsers)
				}
				row(tw, "total", u.Totals.BuildMinutes, u.Totals.Builds, u.Totals.Deployments, strconv.FormatInt(u.Totals.ActiveUsers, 10)+" (busiest day)")
			})
		},
	}
	cmd.Flags().StringVar(&since, "since", "30d", "start of the window: days (30d), a duration (72h) or a date (2026-11-01)")
	cmd.Flags().StringVar(&format, "format", "", "csv: write the days as CSV")
	addOutputFlag(cmd, &output)
	return cmd
}
