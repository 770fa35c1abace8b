package cli

import (
	"cmp"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/config"
	"github.com/freshet-dev/freshet/internal/runtimes/manifests"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/version"
)

// EnvRuntimeToken holds the runtime token for `freshet runtime`.
const EnvRuntimeToken = "FRESHET_RUNTIME_TOKEN"

func (a *app) runtimeCommand() *cobra.Command {
	var opts agent.Options
	var logFormat, logLevel string
	cmd := &cobra.Command{
		Use:   "runtime --server URL --token T",
		Short: "Run a GitOps runtime (and manage runtimes: list, get, register, create-hosted, rotate-token, uninstall)",
		Long: "Without a subcommand, runs the runtime agent: it dials the control plane, heartbeats its\n" +
			"components' health, and serves the app-proxy through its tunnel or ingress.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := config.Apply(cmd.Flags(), "", "token", "context"); err != nil {
				return err
			}
			if opts.Token == "" {
				opts.Token = os.Getenv(EnvRuntimeToken)
			}
			if opts.Server == "" {
				opts.Server = a.server
			}
			log, err := server.NewLogger(a.stderr, logFormat, logLevel)
			if err != nil {
				return err
			}
			opts.Version = version.Version
			rt, err := agent.New(opts, nil, log)
			if err != nil {
				return err
			}
			log.Info("freshet runtime starting", "server", opts.Server, "access_mode", opts.AccessMode)
			return rt.Run(cmd.Context())
		},
	}
	opts.BindFlags(cmd.Flags())
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format: text or json")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")

	var out, ownerFilter string
	printRuntimes := func(v any, rts []client.Runtime) error {
		return printData(a.stdout, out, v, func(tw *tabwriter.Writer) {
			row(tw, "NAME", "TYPE", "ACCESS", "STATUS", "VERSION", "CLUSTERS", "OWNER", "LAST HEARTBEAT", "TOKEN")
			for _, r := range rts {
				var clusters []string
				for _, c := range r.Clusters {
					clusters = append(clusters, c.Name)
				}
				row(tw, r.Name, r.Type, r.AccessMode, r.Status, r.Version, strings.Join(clusters, ","), r.OwnerTeam, r.LastHeartbeat, tokenState(r))
			}
		})
	}
	list := &cobra.Command{Use: "list", Short: "List runtimes", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			var l client.List[client.Runtime]
			if ownerFilter != "" {
				l, err = c.ListRuntimesOwnedBy(cmd.Context(), ownerFilter)
			} else {
				l, err = c.ListRuntimes(cmd.Context())
			}
			if err != nil {
				return err
			}
			return printRuntimes(l.Items, l.Items)
		}}
	addOutputFlag(list, &out)
	list.Flags().StringVar(&ownerFilter, "owner", "", "only the runtimes this team (name or ID) owns")
	setOwner := &cobra.Command{Use: "set-owner NAME [TEAM]", Short: "Give a runtime (with its clusters, applications, git sources and workflows) to a team; no TEAM: to none",
		Long: "Only an admin, or a member of both the team that owns the runtime and the new one who may update it, may change its owner.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			team := ""
			if len(args) == 2 {
				team = args[1]
			}
			r, err := c.SetRuntimeOwner(cmd.Context(), args[0], team)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Runtime %s is owned by %s.\n", r.Name, ownerOrNone(r.OwnerTeam))
			return nil
		}}
	get := &cobra.Command{Use: "get NAME", Short: "Show a runtime with its components and clusters", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			r, err := c.GetRuntime(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if out != outTable {
				return printData(a.stdout, out, r, nil)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "Runtime:\t%s (%s)\nType:\t%s\nAccess mode:\t%s %s\nStatus:\t%s\nVersion:\t%s\nLast heartbeat:\t%s\n\n",
				r.Name, r.ID, r.Type, r.AccessMode, r.IngressURL, r.Status, r.Version, lastSeen(r.LastHeartbeat))
			if r.OwnerTeam != "" {
				fmt.Fprintf(tw, "Owner:\tteam %s\n\n", r.OwnerTeam)
			}
			if r.TokenExpiresAt != nil {
				fmt.Fprintf(tw, "Token expires:\t%s\n", ts(*r.TokenExpiresAt))
			}
			if f := r.TokenRefusal; f != nil {
				fmt.Fprintf(tw, "Token refused:\t%s from %s: %s\n", ts(f.At), cmp.Or(f.Remote, "-"), f.Reason)
			}
			if r.TokenExpiresAt != nil || r.TokenRefusal != nil {
				fmt.Fprintln(tw)
			}
			row(tw, "COMPONENT", "HEALTH", "MESSAGE")
			for _, co := range r.Components {
				row(tw, co.Name, co.Health, co.Message)
			}
			if len(r.Clusters) > 0 {
				fmt.Fprintln(tw)
				row(tw, "CLUSTER", "SERVER")
				for _, c := range r.Clusters {
					row(tw, c.Name, c.Server)
				}
			}
			if len(r.GitSources) > 0 {
				fmt.Fprintf(tw, "\nGit Sources:\t%s\n", strings.Join(r.GitSources, ", "))
			}
			return tw.Flush()
		}}
	addOutputFlag(get, &out)
	var reg client.RegisterRuntimeRequest
	register := &cobra.Command{Use: "register NAME [--access-mode tunnel|ingress] [--ingress-host H]",
		Short: "Register a hybrid runtime and print its token (once), for running `freshet runtime` yourself", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg.Name = args[0]
			c, err := a.client()
			if err != nil {
				return err
			}
			r, err := c.RegisterRuntime(cmd.Context(), reg)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Registered runtime %s (%s).\nToken (shown once): %s\nRun it with: freshet runtime --server %s --token %s\n",
				r.Name, r.ID, r.Token, c.BaseURL(), r.Token)
			return nil
		}}
	register.Flags().StringVar(&reg.AccessMode, "access-mode", "tunnel", "tunnel or ingress")
	register.Flags().StringVar(&reg.IngressHost, "ingress-host", "", "ingress mode: the host the app-proxy is reachable at")
	register.Flags().StringVar(&reg.Repo, "repo", "", "the installation repository")
	register.Flags().StringVar(&reg.Team, "team", "", "the team (name or ID) that owns the runtime and what it holds")
	hosted := &cobra.Command{Use: "create-hosted [NAME]", Short: "Provision the account's hosted runtime (one per account, CD only)", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			r, err := c.CreateHostedRuntime(cmd.Context(), name)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Hosted runtime %s (%s) is being provisioned; 'freshet runtime get %s' shows when it is healthy.\n", r.Name, r.ID, r.Name)
			return nil
		}}
	rotate := &cobra.Command{Use: "rotate-token NAME", Short: "Give a runtime a new token (shown once); the old one stops working", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			r, err := c.RotateRuntimeToken(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "New token for runtime %s (shown once): %s\n", r.Name, r.Token)
			return nil
		}}
	var mo manifests.Options
	var storageSize, storageClass string
	man := &cobra.Command{Use: "manifests NAME [--namespace NS] [--image IMG] [--ingress-class C] [--storage-size SIZE]",
		Short: "Print the Kubernetes manifests a registered hybrid runtime runs from", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			r, err := c.GetRuntime(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			mo.Name, mo.AccessMode, mo.Version, mo.Repo = r.Name, r.AccessMode, version.Version, r.Repo
			mo.IngressHost = strings.TrimPrefix(strings.TrimPrefix(r.IngressURL, "https://"), "http://")
			if mo.Server == "" {
				mo.Server = c.BaseURL()
			}
			if mo.Persistence, err = manifests.ParsePersistence(storageSize, storageClass, "storage-size", "storage-class"); err != nil {
				return err
			}
			objs, err := manifests.Objects(mo)
			if err != nil {
				return err
			}
			y, err := manifests.YAML(objs)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "# Runtime %s. The token is not included: create the Secret with\n#   kubectl -n %s create secret generic %s --from-literal=token=<token from register or rotate-token>\n",
				r.Name, mo.Namespace, manifests.TokenSecretName)
			_, err = a.stdout.Write(y)
			return err
		}}
	man.Flags().StringVar(&mo.Namespace, "namespace", manifests.DefaultNamespace, "namespace of the runtime")
	man.Flags().StringVar(&mo.Image, "image", "", "the freshet image (default "+manifests.DefaultImage+":<version>)")
	man.Flags().StringVar(&mo.IngressClass, "ingress-class", "", "ingress mode: the IngressClass")
	man.Flags().StringVar(&mo.Server, "control-plane", "", "the control plane URL the runtime dials (default: the CLI's server)")
	man.Flags().StringVar(&storageSize, "storage-size", manifests.NoStorage, "keep the runtime's data dir on a claim of this size, a Kubernetes quantity such as 1Gi ("+manifests.NoStorage+": no claim, the pod's emptyDir)")
	man.Flags().StringVar(&storageClass, "storage-class", "", "the storage class of the data claim (default: the cluster's default class)")
	cmd.AddCommand(list, get, register, hosted, rotate, setOwner, man)
	cmd.AddCommand(a.runtimeInstallCommands()...)
	return cmd
}

func lastSeen(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return ts(*t)
}

// tokenState is the TOKEN column of `freshet runtime list`: "expired — rotate" or "replaced"
// while the runtime's own token is refused, else when it expires ("-": never).
func tokenState(r client.Runtime) string {
	if f := r.TokenRefusal; f != nil {
		if f.Kind == "expired" {
			return "expired — rotate"
		}
		return f.Kind + " — refused"
	}
	if r.TokenExpiresAt != nil {
		return "expires " + ts(*r.TokenExpiresAt)
	}
	return "-"
}
