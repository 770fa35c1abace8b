package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/client"
)

// parseTarget reads an environment target: comma-separated runtime=, cluster= and namespace=
// globs (cluster=prod,namespace=shop-*).
func parseTarget(s string) (client.EnvironmentTarget, error) {
	var t client.EnvironmentTarget
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		switch {
		case !ok:
			return t, fmt.Errorf("--target %q: %q is not key=glob: use runtime=, cluster= and namespace=", s, part)
		case k == "runtime":
			t.Runtime = v
		case k == "cluster":
			t.Cluster = v
		case k == "namespace":
			t.Namespace = v
		default:
			return t, fmt.Errorf("--target %q: %q is not a target key: use runtime, cluster or namespace", s, k)
		}
	}
	return t, nil
}

func (a *app) environmentCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "environment", Aliases: []string{"environments", "env"},
		Short: "Manage environments: sets of clusters and namespaces in a promotion order (docs/products.md)"}
	var in client.EnvironmentRequest
	var targets []string
	var output string
	put := func(update bool) func(cmd *cobra.Command, args []string) error {
		return func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return usageError("%v", err)
			}
			in.Name, in.Targets = args[0], nil
			for _, s := range targets {
				t, err := parseTarget(s)
				if err != nil {
					return usageError("%v", err)
				}
				in.Targets = append(in.Targets, t)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			do := c.CreateEnvironment
			if update {
				do = c.UpdateEnvironment
			}
			e, err := do(cmd.Context(), in)
			if err != nil {
				return err
			}
			return printData(a.stdout, output, e, func(tw *tabwriter.Writer) { printEnvironments(tw, []client.Environment{e}) })
		}
	}
	create := &cobra.Command{Use: "create NAME --kind prod|non-prod --order N --target cluster=C,namespace=GLOB ...",
		Short: "Add an environment", Args: cobra.ExactArgs(1), RunE: put(false),
		Long: "Add an environment: a kind (prod or non-prod), a promotion order (lower orders promote into higher)\n" +
			"and one or more targets, each globs of the runtime, the destination cluster (name, else server URL)\n" +
			"and the destination namespace: --target runtime=edge,cluster=prod,namespace='shop-*'."}
	update := &cobra.Command{Use: "update NAME --kind prod|non-prod --order N --target ...",
		Short: "Replace an environment's kind, order and targets", Args: cobra.ExactArgs(1), RunE: put(true)}
	for _, c := range []*cobra.Command{create, update} {
		fs := c.Flags()
		fs.StringVar(&in.Kind, "kind", "non-prod", "prod or non-prod")
		fs.IntVar(&in.Order, "order", 0, "the place in the promotion order (lower promotes into higher)")
		fs.StringArrayVar(&targets, "target", nil, "runtime=GLOB,cluster=GLOB,namespace=GLOB (repeatable)")
		addOutputFlag(c, &output)
	}
	list := listCommand(a, "List environments in promotion order", func(ctx context.Context, c *client.Client) ([]client.Environment, error) {
		r, err := c.ListEnvironments(ctx)
		return r.Items, err
	}, printEnvironments)
	var getOutput string
	get := &cobra.Command{Use: "get NAME", Short: "Show an environment", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(getOutput); err != nil {
				return usageError("%v", err)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			e, err := c.GetEnvironment(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printData(a.stdout, getOutput, e, func(tw *tabwriter.Writer) { printEnvironments(tw, []client.Environment{e}) })
		}}
	addOutputFlag(get, &getOutput)
	del := deleteCommand(a, "delete NAME", "Remove an environment", (*client.Client).DeleteEnvironment)
	cmd.AddCommand(create, update, list, get, del)
	return cmd
}

func printEnvironments(tw *tabwriter.Writer, es []client.Environment) {
	row(tw, "ORDER", "NAME", "KIND", "TARGETS")
	for _, e := range es {
		var ts []string
		for _, t := range e.Targets {
			ts = append(ts, fmt.Sprintf("%s/%s/%s", orAny(t.Runtime), orAny(t.Cluster), orAny(t.Namespace)))
		}
		row(tw, strconv.Itoa(e.Order), e.Name, e.Kind, strings.Join(ts, " "))
	}
}

func orAny(s string) string {
	if s == "" {
		return "*"
	}
	return s
}

func (a *app) productCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "product", Aliases: []string{"products"},
		Short: "Products: applications grouped by the codefresh.io/product annotation or name globs, across environments (docs/products.md)"}
	var in client.CreateProductRequest
	var output string
	put := func(update bool) func(cmd *cobra.Command, args []string) error {
		return func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return usageError("%v", err)
			}
			in.Name = args[0]
			c, err := a.client()
			if err != nil {
				return err
			}
			do := c.CreateProduct
			if update {
				do = c.UpdateProduct
			}
			p, err := do(cmd.Context(), in)
			if err != nil {
				return err
			}
			return printData(a.stdout, output, p, func(tw *tabwriter.Writer) { printProducts(tw, []client.Product{p}) })
		}
	}
	create := &cobra.Command{Use: "create NAME [--pattern GLOB ...]", Short: "Define a product with application-name globs", Args: cobra.ExactArgs(1), RunE: put(false)}
	update := &cobra.Command{Use: "update NAME [--pattern GLOB ...]", Short: "Replace a product definition's application-name globs", Args: cobra.ExactArgs(1), RunE: put(true)}
	for _, c := range []*cobra.Command{create, update} {
		c.Flags().StringArrayVar(&in.Patterns, "pattern", nil, "an application-name glob (repeatable): shop-*")
		addOutputFlag(c, &output)
	}
	list := listCommand(a, "List products: defined ones and those annotations name", func(ctx context.Context, c *client.Client) ([]client.Product, error) {
		r, err := c.ListProducts(ctx)
		return r.Items, err
	}, printProducts)
	var getOutput string
	get := &cobra.Command{Use: "get NAME", Short: "Show what a product runs in each environment and what promoting would change", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(getOutput); err != nil {
				return usageError("%v", err)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			v, err := c.GetProduct(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printData(a.stdout, getOutput, v, func(tw *tabwriter.Writer) { printProductView(tw, v) })
		}}
	addOutputFlag(get, &getOutput)
	del := deleteCommand(a, "delete NAME", "Remove a product definition (annotations keep naming it)", (*client.Client).DeleteProduct)
	cmd.AddCommand(create, update, list, get, del)
	return cmd
}

func printProducts(tw *tabwriter.Writer, ps []client.Product) {
	row(tw, "NAME", "DEFINED", "PATTERNS", "APPLICATIONS")
	for _, p := range ps {
		row(tw, p.Name, strconv.FormatBool(p.Defined), orNone(strings.Join(p.Patterns, " ")), strconv.Itoa(p.Applications))
	}
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printProductView(tw *tabwriter.Writer, v client.ProductView) {
	row(tw, "ENVIRONMENT", "APPLICATION", "HEALTH", "SYNC", "REVISION", "IMAGES", "DEPLOYED")
	line := func(env string, a client.ProductApplication) {
		var ims []string
		for _, im := range a.Images {
			ims = append(ims, im.Repository+"@"+orNone(shortDigest(im.Digest)))
		}
		rev := a.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		row(tw, env, a.Runtime+"/"+a.Name, a.Health, a.Sync, orNone(rev), orNone(strings.Join(ims, " ")), ts(a.DeployedAt))
	}
	for _, e := range v.Environments {
		if len(e.Applications) == 0 {
			row(tw, e.Environment.Name, "-", "", "", "", "", "")
		}
		for _, a := range e.Applications {
			line(e.Environment.Name, a)
		}
	}
	for _, a := range v.Unplaced {
		line("(no environment)", a)
	}
	for _, p := range v.Promotions {
		var changes []string
		for _, im := range p.Images {
			changes = append(changes, fmt.Sprintf("%s %s→%s", im.Repository, orNone(shortDigest(im.To)), orNone(shortDigest(im.From))))
		}
		var issues []string
		for _, is := range p.Issues {
			issues = append(issues, is.Key)
		}
		row(tw, "PROMOTE "+p.From+" → "+p.To, fmt.Sprintf("%d commits", len(p.Commits)), orNone(strings.Join(issues, ",")), "", "", orNone(strings.Join(changes, " ")), "")
	}
}
