package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/freshet-dev/freshet/internal/runtimes/install"
	"github.com/freshet-dev/freshet/internal/runtimes/manifests"
	"github.com/freshet-dev/freshet/internal/version"
)

// clusterFlags pick the cluster a runtime is installed in.
type clusterFlags struct {
	kubeconfig, context, namespace string
}

func (f *clusterFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig (default KUBECONFIG or ~/.kube/config)")
	cmd.Flags().StringVar(&f.context, "context", "", "kubeconfig context of the cluster (default: the current context)")
	cmd.Flags().StringVar(&f.namespace, "namespace", manifests.DefaultNamespace, "namespace of the runtime")
}

func (a *app) installer(f clusterFlags) (*install.Installer, error) {
	c, err := a.client()
	if err != nil {
		return nil, err
	}
	cfg, err := install.KubeConfig(f.kubeconfig, f.context)
	if err != nil {
		return nil, err
	}
	return install.New(c, cfg, a.stdout)
}

// bindStorageFlags registers the runtime's data claim flags (install and upgrade).
func bindStorageFlags(fl *pflag.FlagSet, o *install.Options) {
	fl.StringVar(&o.StorageSize, "storage-size", "", "keep the runtime's data dir (its installation repository, clusters and cache) on a claim of this size, a Kubernetes quantity such as 1Gi; "+
		manifests.NoStorage+": no claim, the pod's emptyDir, lost with the pod (default: as installed — the runtime's claim if it has one, else none)")
	fl.StringVar(&o.StorageClass, "storage-class", "", "the storage class of the runtime's data claim (default: the claim's if it exists, else the cluster's default class)")
}

func (a *app) runtimeInstallCommands() []*cobra.Command {
	var cf clusterFlags
	var o install.Options
	var dryRun bool
	inst := &cobra.Command{
		Use:   "install NAME --context CTX [--access-mode tunnel|ingress] [--ingress-host H] [--repo URL]",
		Short: "Install a hybrid runtime in a Kubernetes cluster (resumable; --dry-run prints the manifests)",
		Long: "Checks the cluster (reachable, version, permissions by SelfSubjectAccessReview), registers the\n" +
			"runtime, initialises its installation repository (runtime.yaml, apps/, projects/), applies its\n" +
			"manifests by server-side apply and waits until it reports healthy. Running it again continues\n" +
			"where it stopped. --from-repo recovers a runtime from its installation repository alone.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Name = args[0]
			}
			if o.Name == "" && !o.FromRepo {
				return fmt.Errorf("give the runtime's NAME (or --from-repo with --repo)")
			}
			if o.GitToken == "" {
				o.GitToken = os.Getenv("FRESHET_GIT_TOKEN")
			}
			if o.Token == "" {
				o.Token = os.Getenv(EnvRuntimeToken)
			}
			o.Namespace, o.Version = cf.namespace, version.Version
			if dryRun {
				c, err := a.client()
				if err != nil {
					return err
				}
				return install.DryRun(c, o, a.stdout)
			}
			dir, err := os.MkdirTemp("", "freshet-install-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			o.CacheDir = filepath.Join(dir, "cache")
			in, err := a.installer(cf)
			if err != nil {
				return err
			}
			return in.Install(cmd.Context(), o)
		},
	}
	cf.bind(inst)
	fl := inst.Flags()
	fl.StringVar(&o.AccessMode, "access-mode", "tunnel", "how clients reach the runtime: tunnel (outbound only) or ingress")
	fl.StringVar(&o.IngressHost, "ingress-host", "", "ingress mode: the host the app-proxy is reachable at")
	fl.StringVar(&o.IngressClass, "ingress-class", "", "ingress mode: the IngressClass")
	fl.StringVar(&o.Repo, "repo", "", "installation repository URL (initialised with runtime.yaml, apps/ and projects/)")
	fl.StringVar(&o.GitToken, "git-token", "", "token for the installation repository (env FRESHET_GIT_TOKEN); kept in the runtime's Secret")
	fl.BoolVar(&o.WatchClusterApps, "watch-cluster-apps", false, "the runtime also runs the argoproj.io Application and AppProject resources of its namespace (installs the Argo CD CRDs)")
	fl.StringSliceVar(&o.ClusterAppsSourceNamespaces, "cluster-apps-source-namespaces", nil, "with --watch-cluster-apps: other namespaces whose Application resources the runtime runs, each only when the app's AppProject lists it in spec.sourceNamespaces (comma-separated)")
	bindStorageFlags(fl, &o)
	fl.IntVar(&o.EventsPort, "events-port", 0, "also serve the EventSources' webhooks on this port of the runtime's Service, named events (--events-listen; 0: none)")
	fl.BoolVar(&o.FromRepo, "from-repo", false, "recover the runtime from --repo's runtime.yaml")
	fl.StringVar(&o.Token, "token", "", "token of a runtime registered beforehand (the web UI's install wizard shows it; env FRESHET_RUNTIME_TOKEN)")
	fl.StringVar(&o.Image, "image", "", "the freshet image (default "+manifests.DefaultImage+":<version>)")
	fl.StringVar(&o.Server, "control-plane", "", "the control plane URL the runtime dials (default: the CLI's server)")
	fl.DurationVar(&o.Wait, "wait", 5*time.Minute, "how long to wait for the runtime to report healthy (0: do not wait)")
	fl.BoolVar(&dryRun, "dry-run", false, "print the manifests; register and apply nothing")

	var ucf clusterFlags
	var uo install.Options
	upgrade := &cobra.Command{Use: "upgrade NAME [--image IMG]", Short: "Apply a runtime's manifests again with this CLI's version (or --image), keeping its token",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			uo.Name, uo.Namespace, uo.Version = args[0], ucf.namespace, version.Version
			in, err := a.installer(ucf)
			if err != nil {
				return err
			}
			return in.Upgrade(cmd.Context(), uo)
		}}
	ucf.bind(upgrade)
	upgrade.Flags().StringVar(&uo.Image, "image", "", "the freshet image (default "+manifests.DefaultImage+":<version>)")
	upgrade.Flags().StringVar(&uo.AccessMode, "access-mode", "tunnel", "tunnel or ingress")
	upgrade.Flags().StringVar(&uo.IngressHost, "ingress-host", "", "ingress mode: the host the app-proxy is reachable at")
	upgrade.Flags().DurationVar(&uo.Wait, "wait", 5*time.Minute, "how long to wait for the runtime to report healthy (0: do not wait)")
	bindStorageFlags(upgrade.Flags(), &uo)
	upgrade.Flags().IntVar(&uo.EventsPort, "events-port", 0, "serve the EventSources' webhooks on this port of the runtime's Service (0: as installed; -1: no longer)")

	var lcf clusterFlags
	var follow bool
	var tail int64
	logs := &cobra.Command{Use: "logs NAME [-f]", Short: "Print a hybrid runtime's log (from its pod)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := a.installer(lcf)
			if err != nil {
				return err
			}
			return in.Logs(cmd.Context(), args[0], lcf.namespace, follow, tail, a.stdout)
		}}
	lcf.bind(logs)
	logs.Flags().BoolVarP(&follow, "follow", "f", false, "keep streaming")
	logs.Flags().Int64Var(&tail, "tail", 0, "only the last N lines")

	var dcf clusterFlags
	var deregisterOnly bool
	uninstall := &cobra.Command{Use: "uninstall NAME [--context CTX]", Short: "Remove a runtime from its cluster and deregister it (a hosted one is stopped)",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			rt, err := c.GetRuntime(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if deregisterOnly || rt.Type == "hosted" {
				if err := c.DeleteRuntime(cmd.Context(), args[0]); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "Runtime %s deregistered.\n", args[0])
				return nil
			}
			in, err := a.installer(dcf)
			if err != nil {
				return fmt.Errorf("%w (use --deregister-only to deregister without touching a cluster)", err)
			}
			return in.Uninstall(context.WithoutCancel(cmd.Context()), args[0], dcf.namespace)
		}}
	dcf.bind(uninstall)
	uninstall.Flags().BoolVar(&deregisterOnly, "deregister-only", false, "only deregister; leave the cluster alone")
	return []*cobra.Command{inst, upgrade, logs, uninstall}
}
