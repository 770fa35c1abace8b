package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sync/errgroup"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/config"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/host"
	"github.com/freshet-dev/freshet/internal/runner"
	localexec "github.com/freshet-dev/freshet/internal/runner/executor/local"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/version"
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
	var kube kubeFlags
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := config.Apply(cmd.Flags(), configFile, "config"); err != nil {
				return err
			}
			return a.serve(cmd.Context(), opts, local, kube)
		},
	}
	opts.BindFlags(cmd.Flags(), local)
	if local {
		cmd.Flags().StringVar(&kube.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster the local runtime deploys to as in-cluster (default: KUBECONFIG, ~/.kube/config)")
		cmd.Flags().StringVar(&kube.context, "context", "", "kubeconfig context (default: the current context)")
		kube.engine.BindFlags(cmd.Flags())
	}
	cmd.Flags().StringVar(&configFile, "config", os.Getenv("FRESHET_CONFIG"), "YAML config file with settings named like the flags (env FRESHET_CONFIG)")
	return cmd
}

// kubeFlags are `freshet up`'s settings for its in-process runtime.
type kubeFlags struct {
	kubeconfig, context string
	engine              engine.Options
}

func (a *app) serve(ctx context.Context, opts server.Options, local bool, kube kubeFlags) error {
	log, err := server.NewLogger(a.stderr, opts.LogFormat, opts.LogLevel)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return fmt.Errorf("data-dir %s: %w", opts.DataDir, err)
	}
	srv, err := server.New(ctx, opts, log)
	if err != nil {
		return err
	}
	if err := srv.Listen(); err != nil {
		srv.Close()
		return err
	}
	boot, err := srv.Bootstrap(ctx)
	if err != nil {
		srv.Close()
		return err
	}
	url := srv.URL()
	log.Info("freshet is ready", "url", url, "data_dir", opts.DataDir, "database", store.Redact(opts.DSN()), "mode", use(local))
	fmt.Fprintf(a.stdout, "Freshet is running at %s\n", url)
	if boot.Created {
		fmt.Fprintf(a.stdout, "Created account %q with admin %s\n", boot.Account.Name, boot.Email)
		if boot.Password != "" {
			fmt.Fprintf(a.stdout, "Admin password (shown once): %s\n", boot.Password)
		}
		fmt.Fprintf(a.stdout, "Log in with: freshet login --server %s --username %s\n", url, boot.Email)
	}
	if !local {
		return srv.Run(ctx)
	}
	// freshet up: an in-process runner with the local executor, dialing this server over loopback.
	token, err := srv.LocalRunnerToken(ctx)
	if err != nil {
		srv.Close()
		return fmt.Errorf("local runner: %w", err)
	}
	workDir := filepath.Join(opts.DataDir, "builds")
	if err := os.MkdirAll(workDir, 0o700); err != nil {
		srv.Close()
		return err
	}
	exec, err := localexec.New(localexec.Options{Root: workDir})
	if err != nil {
		srv.Close()
		return err
	}
	r, err := runner.New(runner.Options{Server: url, Token: token, Name: "local", Executor: "local", Concurrency: runner.DefaultConcurrency,
		Transport: runner.TransportStream, Version: version.Version, ShutdownTimeout: opts.ShutdownTimeout}, exec, nil, log.With("component", "runner"))
	if err != nil {
		srv.Close()
		return err
	}
	// And the in-process runtime "local".
	rtToken, err := srv.LocalRuntimeToken(ctx)
	if err != nil {
		srv.Close()
		return fmt.Errorf("local runtime: %w", err)
	}
	// Its installation repository is a local one in the data dir: `freshet app create` commits there.
	rtDir := filepath.Join(opts.DataDir, "runtime")
	repoURL, err := host.InitLocalRepo(filepath.Join(rtDir, "installation.git"))
	if err != nil {
		srv.Close()
		return err
	}
	rt, err := agent.New(agent.Options{Server: url, Token: rtToken, AccessMode: "tunnel", Version: version.Version,
		Kubeconfig: kube.kubeconfig, Context: kube.context, DataDir: rtDir, InstallRepo: git.Repo{URL: repoURL}, Engine: kube.engine},
		nil, log.With("component", "runtime"))
	if err != nil {
		srv.Close()
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Run(gctx) })
	g.Go(func() error { return r.Run(gctx) })
	g.Go(func() error { return rt.Run(gctx) })
	return g.Wait()
}

func use(local bool) string {
	if local {
		return "up"
	}
	return "server"
}
