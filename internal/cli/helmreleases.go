package cli

import (
	"context"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/client"
)

func (a *app) helmReleaseCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "helm-release", Aliases: []string{"helm-releases"},
		Short: "Read the Helm releases runtimes find in their clusters (read-only)"}
	var f client.HelmReleaseFilter
	list := listCommand(a, "List Helm releases by cluster, namespace and name", func(ctx context.Context, c *client.Client) ([]client.HelmRelease, error) {
		l, err := c.ListHelmReleases(ctx, f)
		return l.Items, err
	}, func(tw *tabwriter.Writer, items []client.HelmRelease) {
		row(tw, "RUNTIME", "CLUSTER", "NAMESPACE", "NAME", "REVISION", "STATUS", "CHART", "APP VERSION", "UPDATED")
		for _, h := range items {
			row(tw, h.Runtime, h.Cluster, h.Namespace, h.Name, strconv.Itoa(h.Revision), h.Status, h.Chart+"-"+h.ChartVersion, h.AppVersion, helmTime(h.Updated))
		}
	})
	list.Use = "list [--runtime R] [--cluster C] [--namespace NS]"
	lf := list.Flags()
	lf.StringVar(&f.Runtime, "runtime", "", "only this runtime's (name or ID)")
	lf.StringVar(&f.Cluster, "cluster", "", "only this cluster's (as the runtime names it: in-cluster for its own)")
	lf.StringVar(&f.Namespace, "namespace", "", "only this namespace's")

	var gf client.HelmReleaseFilter
	var ns, getOutput string
	get := &cobra.Command{
		Use:   "get NAME --namespace NS [--runtime R] [--cluster C]",
		Short: "Show a Helm release with its revision history",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(getOutput); err != nil {
				return usageError("%v", err)
			}
			if ns == "" {
				return usageError("--namespace is required: the release's namespace")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			h, err := c.GetHelmRelease(cmd.Context(), ns, args[0], gf)
			if err != nil {
				return err
			}
			return printData(a.stdout, getOutput, h, func(tw *tabwriter.Writer) {
				row(tw, "Name:", h.Name)
				row(tw, "Namespace:", h.Namespace)
				row(tw, "Runtime:", h.Runtime)
				row(tw, "Cluster:", h.Cluster)
				row(tw, "Chart:", h.Chart+"-"+h.ChartVersion)
				row(tw, "App version:", h.AppVersion)
				row(tw, "Status:", h.Status)
				row(tw, "Revision:", strconv.Itoa(h.Revision))
				row(tw, "")
				row(tw, "REVISION", "UPDATED", "STATUS", "CHART", "APP VERSION", "DESCRIPTION")
				for _, r := range h.History {
					row(tw, strconv.Itoa(r.Revision), helmTime(r.Updated), r.Status, r.Chart+"-"+r.ChartVersion, r.AppVersion, r.Description)
				}
			})
		},
	}
	gfs := get.Flags()
	gfs.StringVarP(&ns, "namespace", "n", "", "the release's namespace (required)")
	gfs.StringVar(&gf.Runtime, "runtime", "", "the runtime (name or ID), when several have a release of that name")
	gfs.StringVar(&gf.Cluster, "cluster", "", "the cluster, when several have a release of that name")
	addOutputFlag(get, &getOutput)
	cmd.AddCommand(list, get)
	return cmd
}

func helmTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
