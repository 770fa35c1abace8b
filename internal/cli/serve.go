package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/internal/config"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/store"
)

func (a *app) upCommand() *cobra.Command {
	return a.serveCommand("up", true,
		"Run the whole platform in one process on embedded defaults",
		"Runs the control plane, API and web UI in one process with a SQLite database and an embedded\n"+
			"NATS server under --data-dir. On first start it creates the first account and admin and prints\n"+
			"the URL and credentials once. Stop it with Ctrl-C; restarts reuse the data.")
}

func (a *app) serverCommand() *cobra.Command {
	return a.serveCommand("server", false,
		"Run the control plane (production)",
		"Runs the Freshet control plane. For production use PostgreSQL (--db postgres://…) and an\n"+
			"external NATS (--nats nats://…), so that several replicas can share them. Every flag can also be\n"+
			"set as a FRESHET_* variable (--data-dir → FRESHET_DATA_DIR) or in the YAML file given by\n"+
			"--config (data-dir: …); the command line wins over the environment, which wins over the file.")
}

func (a *app) serveCommand(use string, local bool, short, long string) *cobra.Command {
	var opts server.Options
	var configFile string
	var up server.LocalOptions
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := config.Apply(cmd.Flags(), configFile, "config"); err != nil {
				return err
			}
			return a.serve(cmd.Context(), opts, local, up)
		},
	}
	opts.BindFlags(cmd.Flags(), local)
	if local {
		cmd.Flags().StringVar(&up.Kubeconfig, "kubeconfig", "", "kubeconfig of the cluster the local runtime deploys to as in-cluster (default: KUBECONFIG, ~/.kube/config)")
		cmd.Flags().StringVar(&up.Context, "context", "", "kubeconfig context (default: the current context)")
		up.Engine.BindFlags(cmd.Flags())
		cmd.Flags().BoolVar(&up.WatchClusterApps, "watch-cluster-apps", false, "the local runtime also runs the argoproj.io Application and AppProject resources of --cluster-apps-namespace (installs their CRDs)")
		cmd.Flags().StringVar(&up.ClusterAppsNamespace, "cluster-apps-namespace", "", "namespace whose Application resources --watch-cluster-apps runs (default: default)")
		cmd.Flags().StringSliceVar(&up.ClusterAppsSourceNamespaces, "cluster-apps-source-namespaces", nil, "other namespaces whose Application resources --watch-cluster-apps runs, each only when the app's AppProject lists it in spec.sourceNamespaces (comma-separated)")
		cmd.Flags().BoolVar(&up.InsecureLocalSteps, "insecure-local-steps", false, "run the in-process runner's steps as this server's own user, not isolated: "+
			"any member who can run a pipeline can then read the data dir (master key, database) and the server's environment (admin password). "+
			"Only for a server whose members may all read its data, on a host where steps cannot be isolated")
	}
	cmd.Flags().StringVar(&configFile, "config", os.Getenv("FRESHET_CONFIG"), "YAML config file with settings named like the flags (env FRESHET_CONFIG)")
	return cmd
}

func (a *app) serve(ctx context.Context, opts server.Options, local bool, up server.LocalOptions) error {
	log, err := server.NewLogger(a.stderr, opts.LogFormat, opts.LogLevel)
	if err != nil {
		return err
	}
	ready := func(r server.Ready) {
		log.Info("freshet is ready", "url", r.URL, "data_dir", opts.DataDir, "database", store.Redact(opts.DSN()), "mode", use(local))
		fmt.Fprintf(a.stdout, "Freshet is running at %s\n", r.URL)
		if r.Boot.Created {
			fmt.Fprintf(a.stdout, "Created account %q with admin %s\n", r.Boot.Account.Name, r.Boot.Email)
			if r.Boot.Password != "" {
				fmt.Fprintf(a.stdout, "Admin password (shown once): %s\n", r.Boot.Password)
			}
			fmt.Fprintf(a.stdout, "Log in with: freshet login --server %s --username %s\n", r.URL, r.Boot.Email)
		}
	}
	if local {
		return server.Up(ctx, opts, up, log, ready)
	}
	return server.Serve(ctx, opts, log, ready)
}

func use(local bool) string {
	if local {
		return "up"
	}
	return "server"
}
