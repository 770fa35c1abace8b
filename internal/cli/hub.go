package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/client"
)

func (a *app) hubCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "hub", Short: "Browse the template Hub (WorkflowTemplates for Delivery Pipelines) and use its templates (docs/hub.md)"}
	var f client.HubFilter
	list := listCommand(a, "List the catalogue's templates (builtin and from the account's hub sources)", func(ctx context.Context, c *client.Client) ([]client.HubTemplate, error) {
		cat, err := c.ListHubTemplates(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, s := range cat.Sources {
			for _, e := range s.Errors {
				fmt.Fprintln(a.stderr, "warning: "+e)
			}
		}
		return cat.Items, nil
	}, printHubTemplates)
	list.Flags().StringVar(&f.Search, "search", "", "only templates whose name, description, categories or tags contain this")
	list.Flags().StringVar(&f.Category, "category", "", "only templates of this category")

	var version, output string
	get := &cobra.Command{Use: "get NAME [--version V]", Short: "Show a template's version: description, parameters, templates and README",
		Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return usageError("%v", err)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			d, err := c.GetHubTemplate(cmd.Context(), args[0], version)
			if err != nil {
				return err
			}
			if output != outTable {
				return printData(a.stdout, output, d, nil)
			}
			printHubDetail(a, d)
			return nil
		}}
	get.Flags().StringVar(&version, "version", "", "the version (default: the newest)")
	addOutputFlag(get, &output)

	var use client.HubUseRequest
	var useOut string
	useCmd := &cobra.Command{Use: "use NAME --runtime R --git-source S", Short: "Commit a template to a Git Source of a runtime (with the application that deploys it)",
		Long: "Commit the template's WorkflowTemplate to the Git Source's repository, as <dir>/<name>.yaml (dir: workflow-templates),\n" +
			"with an application <git-source>-workflow-templates in the Git Source that syncs that directory to the namespace\n" +
			"(--namespace, else the Git Source's destination namespace) when it has none yet. The runtime's app-proxy makes the commit as you.",
		Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(useOut); err != nil {
				return usageError("%v", err)
			}
			if use.Runtime == "" || use.GitSource == "" {
				return usageError("--runtime and --git-source are required: the runtime and its Git Source to commit the template to")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			res, err := c.UseHubTemplate(cmd.Context(), args[0], use)
			if err != nil {
				return err
			}
			return printData(a.stdout, useOut, res, func(tw *tabwriter.Writer) {
				fmt.Fprintln(tw, "TEMPLATE\tVERSION\tFILE\tCOMMIT\tAPPLICATION")
				app := res.Application
				if res.ApplicationCreated {
					app += " (created)"
				}
				row(tw, res.Name, res.Version, res.RepoURL+" "+res.File, shortSHA(res.Commit), app)
			})
		}}
	fs := useCmd.Flags()
	fs.StringVar(&use.Runtime, "runtime", "", "the runtime (hybrid) whose Git Source gets the template")
	fs.StringVar(&use.GitSource, "git-source", "", "the Git Source to commit to")
	fs.StringVar(&use.Version, "version", "", "the version (default: the newest)")
	fs.StringVar(&use.Name, "name", "", "the WorkflowTemplate's name (default: the hub template's)")
	fs.StringVar(&use.Dir, "dir", "", "the directory of the Git Source's repository (default workflow-templates)")
	fs.StringVar(&use.Namespace, "namespace", "", "where the template is deployed (default: the Git Source's destination namespace)")
	fs.BoolVar(&use.Upsert, "upsert", false, "replace a template file that exists")
	addOutputFlag(useCmd, &useOut)

	cmd.AddCommand(list, get, useCmd, a.hubSourceCommand())
	return cmd
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func printHubTemplates(tw *tabwriter.Writer, ts []client.HubTemplate) {
	fmt.Fprintln(tw, "NAME\tVERSION\tCATEGORIES\tSOURCE\tDESCRIPTION")
	for _, t := range ts {
		desc := t.Description
		if len(desc) > 80 {
			desc = desc[:77] + "..."
		}
		row(tw, t.Name, t.LatestVersion, strings.Join(t.Categories, ","), t.Source, desc)
	}
}

func printHubDetail(a *app, d client.HubTemplateDetail) {
	w := a.stdout
	fmt.Fprintf(w, "Name:        %s\nVersion:     %s (versions: %s)\nSource:      %s\nCategories:  %s\nTags:        %s\nDescription: %s\n",
		d.Name, d.Version, strings.Join(d.Versions, ", "), d.Source, strings.Join(d.Categories, ", "), strings.Join(d.Tags, ", "), d.Description)
	if d.License != "" {
		fmt.Fprintf(w, "License:     %s\n", d.License)
	}
	fmt.Fprintf(w, "Entrypoint:  %s\n\nParameters:\n", d.Entrypoint)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tDEFAULT\tDESCRIPTION")
	for _, p := range d.Parameters {
		def := p.Default
		if p.Required {
			def = "(required)"
		}
		if len(p.Enum) > 0 {
			def += " [" + strings.Join(p.Enum, "|") + "]"
		}
		row(tw, "  "+p.Name, def, p.Description)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nTemplates:")
	for _, e := range d.Templates {
		var in []string
		for _, p := range e.Inputs {
			in = append(in, p.Name)
		}
		fmt.Fprintf(w, "  %s(%s)\n", e.Name, strings.Join(in, ", "))
	}
	if d.README != "" {
		fmt.Fprintln(w, "\nREADME:")
		fmt.Fprintln(w, strings.TrimRight(d.README, "\n"))
	}
}

func (a *app) hubSourceCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "source", Aliases: []string{"sources"}, Short: "Manage the git repositories added to the account's catalogue (admins)"}
	var in client.HubSourceRequest
	var output string
	add := &cobra.Command{Use: "add NAME --url URL [--revision R] [--path DIR]", Short: "Add a git repository of templates (Argo Hub's layout: NAME/versions/VERSION/workflowTemplate.yaml)",
		Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return usageError("%v", err)
			}
			in.Name = args[0]
			c, err := a.client()
			if err != nil {
				return err
			}
			s, err := c.AddHubSource(cmd.Context(), in)
			if err != nil {
				return err
			}
			for _, e := range s.Errors {
				fmt.Fprintln(a.stderr, "warning: "+e)
			}
			return printData(a.stdout, output, s, func(tw *tabwriter.Writer) { printHubSources(tw, []client.HubSource{s}) })
		}}
	add.Flags().StringVar(&in.URL, "url", "", "the git repository (https://…)")
	add.Flags().StringVar(&in.Revision, "revision", "", "branch, tag or commit (default: the repository's default branch)")
	add.Flags().StringVar(&in.Path, "path", "", "the directory of templates in the repository (default: its root; Argo Hub's is workflows)")
	addOutputFlag(add, &output)
	list := listCommand(a, "List the account's hub sources and what their last read found", func(ctx context.Context, c *client.Client) ([]client.HubSource, error) {
		l, err := c.ListHubSources(ctx)
		return l.Items, err
	}, printHubSources)
	del := deleteCommand(a, "delete NAME", "Remove a hub source", (*client.Client).DeleteHubSource)
	cmd.AddCommand(add, list, del)
	return cmd
}

func printHubSources(tw *tabwriter.Writer, ss []client.HubSource) {
	fmt.Fprintln(tw, "NAME\tURL\tREVISION\tPATH\tCOMMIT\tTEMPLATES\tERRORS")
	for _, s := range ss {
		row(tw, s.Name, s.URL, s.Revision, s.Path, shortSHA(s.Commit), s.Templates, len(s.Errors))
	}
}
