package cli

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/config"
	"github.com/freshet-dev/freshet/internal/server"
)

// EnvRunnerToken holds the runner token for `freshet runner`.
const EnvRunnerToken = "FRESHET_RUNNER_TOKEN"

func (a *app) runnerCommand() *cobra.Command {
	var opts agent.RunnerOptions
	var logFormat, logLevel string
	cmd := &cobra.Command{
		Use:   "runner --server URL --token T [--executor container|local|kubernetes]",
		Short: "Run CI builds on this machine (and manage runners: register, list, delete)",
		Long: "Without a subcommand, runs the runner agent: it dials the control plane, takes builds for its\n" +
			"account and runs them with its executor. Register one first with 'freshet runner register NAME'.\n" +
			"Flags can also be FRESHET_* variables (FRESHET_SERVER, FRESHET_RUNNER_TOKEN, FRESHET_EXECUTOR, …).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := config.Apply(cmd.Flags(), "", "token"); err != nil { // FRESHET_TOKEN is the CLI's API token
				return err
			}
			if opts.Token == "" {
				opts.Token = os.Getenv(EnvRunnerToken)
			}
			if opts.Server == "" {
				opts.Server = a.server
			}
			log, err := server.NewLogger(a.stderr, logFormat, logLevel)
			if err != nil {
				return err
			}
			r, err := agent.NewRunner(opts, log)
			if err != nil {
				return err
			}
			log.Info("freshet runner starting", "server", opts.Server, "executor", r.ExecutorName(), "concurrency", opts.Concurrency)
			return r.Run(cmd.Context())
		},
	}
	opts.BindFlags(cmd.Flags())
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format: text or json")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")

	var labels []string
	var out string
	register := &cobra.Command{Use: "register NAME [--label K=V]…", Short: "Register a runner and print its token (once)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			lbl, err := parseKV("label", labels)
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			r, err := c.RegisterRunner(cmd.Context(), client.RegisterRunnerRequest{Name: args[0], Labels: lbl})
			if err != nil {
				return err
			}
			if out != outTable {
				return printData(a.stdout, out, r, nil)
			}
			fmt.Fprintf(a.stdout, "Registered runner %s (%s).\nToken (shown once): %s\nStart it with: freshet runner --server %s --token %s\n",
				r.Name, r.ID, r.Token, c.BaseURL(), r.Token)
			return nil
		}}
	register.Flags().StringArrayVar(&labels, "label", nil, "a label pipelines can select by, K=V (repeatable)")
	addOutputFlag(register, &out)
	list := &cobra.Command{Use: "list", Short: "List runners", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, err := c.ListRunners(cmd.Context())
			if err != nil {
				return err
			}
			return printData(a.stdout, out, l.Items, func(tw *tabwriter.Writer) {
				row(tw, "ID", "NAME", "CONNECTED", "LABELS", "LAST SEEN")
				for _, r := range l.Items {
					row(tw, r.ID, r.Name, r.Connected, fmt.Sprint(r.Labels), r.LastSeen)
				}
			})
		}}
	addOutputFlag(list, &out)
	del := a.actionCommand("delete NAME", "Delete a runner (its token stops working)", func(ctx context.Context, c *client.Client, name string) (string, error) {
		return "Deleted runner " + name + ".", c.DeleteRunner(ctx, name)
	})
	drain := a.actionCommand("drain NAME", "Tell a runner to take no new builds and finish the ones it runs", func(ctx context.Context, c *client.Client, name string) (string, error) {
		return "Runner " + name + " is draining.", c.DrainRunner(ctx, name)
	})
	cmd.AddCommand(register, list, del, drain)
	return cmd
}
