package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/config"
	"github.com/freshet-dev/freshet/internal/runtimes/install"
	"github.com/freshet-dev/freshet/internal/runtimes/manifests"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/version"
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
	cmd.AddCommand(a.runnerInstallCommands()...)
	return cmd
}

// DefaultRunnerName is the name `freshet runner install` registers when none is given.
const DefaultRunnerName = "kubernetes"

func (a *app) runnerInstallCommands() []*cobra.Command {
	var cf clusterFlags
	var o install.RunnerOptions
	var labels, tolerations []string
	var dryRun bool
	inst := &cobra.Command{
		Use:   "install [NAME] --context CTX [--image IMG] [--label K=V]… [--executor-arg --kube-…=V]…",
		Short: "Install a runner in a Kubernetes cluster: it runs each build step as a pod there (resumable)",
		Long: "Checks the cluster (reachable, permissions by SelfSubjectAccessReview), registers the runner\n" +
			"(default name " + DefaultRunnerName + "), applies its Namespace, ServiceAccount, Role and RoleBinding, token Secret\n" +
			"and Deployment (freshet runner --executor kubernetes --kube-in-cluster) by server-side apply, and\n" +
			"waits until it is connected. Running it again continues where it stopped.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = DefaultRunnerName
			if len(args) == 1 {
				o.Name = args[0]
			}
			lbl, err := parseKV("label", labels)
			if err != nil {
				return err
			}
			o.Labels = lbl
			for _, t := range tolerations {
				kv, effect, _ := strings.Cut(t, ":")
				k, v, _ := strings.Cut(kv, "=")
				o.Tolerations = append(o.Tolerations, manifests.Toleration{Key: k, Value: v, Effect: effect})
			}
			o.Namespace, o.Version = cf.namespace, version.Version
			c, err := a.client()
			if err != nil {
				return err
			}
			if dryRun {
				return install.RunnerDryRun(c, o, a.stdout)
			}
			cfg, err := install.KubeConfig(cf.kubeconfig, cf.context)
			if err != nil {
				return err
			}
			in, err := install.NewRunner(c, cfg, a.stdout)
			if err != nil {
				return err
			}
			return in.Install(cmd.Context(), o)
		},
	}
	bindRunnerClusterFlags(inst, &cf)
	fl := inst.Flags()
	fl.StringVar(&o.Image, "image", "", "the freshet image (default "+manifests.DefaultImage+":<version>)")
	fl.StringVar(&o.Server, "control-plane", "", "the control plane URL the runner dials (default: the CLI's server)")
	fl.StringArrayVar(&labels, "label", nil, "a label pipelines can select the runner by, K=V (repeatable)")
	fl.IntVar(&o.Concurrency, "concurrency", 0, "builds the runner runs at once (default: the runner's)")
	fl.StringArrayVar(&o.ExecutorArgs, "executor-arg", nil, "a flag for the kubernetes executor, --kube-NAME=VALUE (repeatable; e.g. --kube-node-selector=disk=ssd)")
	fl.BoolVar(&o.HostNetwork, "host-network", false, "run the runner's pod on its node's network (a control plane only the node reaches)")
	fl.StringToStringVar(&o.NodeSelector, "node-selector", nil, "node selector of the runner's pod (K=V,…)")
	fl.StringToStringVar(&o.Env, "env", nil, "environment of the runner's container, K=V (repeatable; e.g. HTTPS_PROXY=…)")
	fl.StringArrayVar(&tolerations, "toleration", nil, "a toleration of the runner's pod, KEY[=VALUE]:EFFECT (repeatable)")
	fl.DurationVar(&o.Wait, "wait", 5*time.Minute, "how long to wait for the runner to connect (0: do not wait)")
	fl.BoolVar(&dryRun, "dry-run", false, "print the manifests; register and apply nothing")

	var ucf clusterFlags
	uninstall := &cobra.Command{Use: "uninstall [NAME] --context CTX", Short: "Remove an installed runner from its cluster and delete its registration",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := DefaultRunnerName
			if len(args) == 1 {
				name = args[0]
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			cfg, err := install.KubeConfig(ucf.kubeconfig, ucf.context)
			if err != nil {
				return err
			}
			in, err := install.NewRunner(c, cfg, a.stdout)
			if err != nil {
				return err
			}
			return in.Uninstall(context.WithoutCancel(cmd.Context()), name, ucf.namespace)
		}}
	bindRunnerClusterFlags(uninstall, &ucf)
	return []*cobra.Command{inst, uninstall}
}

func bindRunnerClusterFlags(cmd *cobra.Command, f *clusterFlags) {
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig (default KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVar(&f.context, "context", "", "kubeconfig context of the cluster (default: the current context)")
	cmd.Flags().StringVar(&f.namespace, "namespace", manifests.DefaultRunnerNamespace, "namespace of the runner and its build pods")
}
