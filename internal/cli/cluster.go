package cli

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/runtimes/install"
)

func (a *app) clusterCommand() *cobra.Command {
	runtime := os.Getenv(EnvRuntime)
	if runtime == "" {
		runtime = DefaultRuntime
	}
	cmd := &cobra.Command{Use: "cluster", Aliases: []string{"clusters"}, Short: "Manage the clusters a runtime deploys to (add, list, remove)",
		Long: "A runtime deploys to its own cluster (in-cluster) and to managed clusters added here. `cluster add`\n" +
			"creates a service account with the chosen rights in the target cluster and hands its token to the\n" +
			"runtime alone: the control plane passes it through but never stores it."}
	cmd.PersistentFlags().StringVar(&runtime, "runtime", runtime, "the runtime (env "+EnvRuntime+")")

	var kubeconfig, kubeContext string
	var o install.ClusterOptions
	var clusterLabels []string
	add := &cobra.Command{Use: "add NAME --context CTX [--runtime R]", Short: "Give a runtime access to a cluster (admins)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			cfg, err := install.KubeConfig(kubeconfig, kubeContext)
			if err != nil {
				return err
			}
			mc, err := install.PrepareCluster(cmd.Context(), cfg, args[0], runtime, o)
			if err != nil {
				return err
			}
			labels, err := parseLabels(clusterLabels)
			if err != nil {
				return err
			}
			added, err := c.AddCluster(cmd.Context(), runtime, client.ClusterCredential{Name: mc.Name, Server: mc.Server, CAData: mc.CAData, Token: mc.Token, Labels: labels})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Cluster %s (%s, Kubernetes %s) added to runtime %s.\nApplications deploy to it with destination name: %s\n",
				added.Name, added.Server, added.Version, runtime, added.Name)
			return nil
		}}
	add.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig (default KUBECONFIG or ~/.kube/config)")
	add.Flags().StringVar(&kubeContext, "context", "", "kubeconfig context of the cluster to add (default: the current context)")
	add.Flags().StringVar(&o.Namespace, "sa-namespace", "kube-system", "namespace of the runtime's service account in the cluster")
	add.Flags().StringVar(&o.ClusterRole, "cluster-role", "", "ClusterRole to bind (default: a new one with every right, as Argo CD's argocd-manager-role)")
	add.Flags().StringVar(&o.Server, "server", "", "API server URL the runtime uses (default: the kubeconfig's)")
	add.Flags().StringArrayVar(&clusterLabels, "label", nil, "KEY=VALUE label of the cluster, for ApplicationSet clusters generators (repeatable)")

	var out string
	list := &cobra.Command{Use: "list [--runtime R]", Short: "List a runtime's clusters", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, err := c.ListClusters(cmd.Context(), runtime)
			if err != nil {
				return err
			}
			return printData(a.stdout, out, l.Items, func(tw *tabwriter.Writer) {
				row(tw, "NAME", "SERVER")
				for _, cl := range l.Items {
					row(tw, cl.Name, cl.Server)
				}
			})
		}}
	addOutputFlag(list, &out)

	var rmKubeconfig, rmContext, rmNamespace string
	remove := &cobra.Command{Use: "remove NAME [--runtime R] [--context CTX]", Short: "Make a runtime forget a cluster; with --context also delete its service account there",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if err := c.RemoveCluster(cmd.Context(), runtime, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Runtime %s no longer deploys to cluster %s.\n", runtime, args[0])
			if rmContext == "" && rmKubeconfig == "" {
				return nil
			}
			cfg, err := install.KubeConfig(rmKubeconfig, rmContext)
			if err != nil {
				return err
			}
			if err := install.RemoveClusterAccess(cmd.Context(), cfg, runtime, rmNamespace); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Deleted the runtime's service account and role binding in the cluster.\n")
			return nil
		}}
	remove.Flags().StringVar(&rmKubeconfig, "kubeconfig", "", "kubeconfig of the cluster, to delete the runtime's access there too")
	remove.Flags().StringVar(&rmContext, "context", "", "kubeconfig context of the cluster, to delete the runtime's access there too")
	remove.Flags().StringVar(&rmNamespace, "sa-namespace", "kube-system", "namespace of the runtime's service account")
	cmd.AddCommand(add, list, remove)
	return cmd
}

// parseLabels reads KEY=VALUE flags.
func parseLabels(flags []string) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(flags))
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--label %q: want KEY=VALUE", f)
		}
		out[k] = v
	}
	return out, nil
}
