package cli

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/client"
)

func (a *app) gitSourceCommand() *cobra.Command {
	runtime := os.Getenv(EnvRuntime)
	if runtime == "" {
		runtime = DefaultRuntime
	}
	cmd := &cobra.Command{Use: "git-source", Aliases: []string{"git-sources"}, Short: "Manage a runtime's Git Sources: directories of Applications it loads (create, list, get, edit, delete)",
		Long: "A Git Source is a directory of a repository holding Argo CD Applications (app-of-apps). The runtime\n" +
			"loads them like the applications of its installation repository; the Git Source itself is a commit\n" +
			"of git-sources/NAME.yaml there. `freshet app create --git-source NAME` writes an app into one."}
	cmd.PersistentFlags().StringVar(&runtime, "runtime", runtime, "the runtime (env "+EnvRuntime+")")

	var spec client.GitSourceSpec
	bind := func(c *cobra.Command, required bool) {
		f := c.Flags()
		f.StringVar(&spec.RepoURL, "repo", "", "repository URL")
		f.StringVar(&spec.Path, "path", "", "directory of the Applications in the repository")
		f.StringVar(&spec.TargetRevision, "revision", "", "branch, tag or commit (default: the repository's HEAD)")
		f.StringVar(&spec.Include, "include", "", "glob of the files to read, relative to --path")
		f.StringVar(&spec.Exclude, "exclude", "", "glob of the files to skip, relative to --path")
		f.StringVar(&spec.Destination.Server, "dest-server", "", "destination of the apps that name none: API server URL")
		f.StringVar(&spec.Destination.Name, "dest-name", "", "destination of the apps that name none: cluster name (e.g. in-cluster)")
		f.StringVar(&spec.Destination.Namespace, "dest-namespace", "", "destination namespace of the apps that name none")
		if required {
			_ = c.MarkFlagRequired("repo")
		}
	}
	create := &cobra.Command{Use: "create NAME --repo URL [--path P]", Short: "Add a Git Source (a commit to the installation repository)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			g, err := c.PutGitSource(cmd.Context(), runtime, client.NewGitSource(args[0], spec), false)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Git Source %s created in runtime %s: applications under %s/%s are loaded.\n", g.Metadata.Name, runtime, g.Spec.RepoURL, g.Spec.Path)
			return nil
		}}
	bind(create, true)

	edit := &cobra.Command{Use: "edit NAME [--repo URL] [--path P] ...", Short: "Change a Git Source (the flags given replace those settings)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			g, err := c.GetGitSource(cmd.Context(), runtime, args[0])
			if err != nil {
				return err
			}
			fl := cmd.Flags()
			set := func(name string, dst *string, v string) {
				if fl.Changed(name) {
					*dst = v
				}
			}
			set("repo", &g.Spec.RepoURL, spec.RepoURL)
			set("path", &g.Spec.Path, spec.Path)
			set("revision", &g.Spec.TargetRevision, spec.TargetRevision)
			set("include", &g.Spec.Include, spec.Include)
			set("exclude", &g.Spec.Exclude, spec.Exclude)
			set("dest-server", &g.Spec.Destination.Server, spec.Destination.Server)
			set("dest-name", &g.Spec.Destination.Name, spec.Destination.Name)
			set("dest-namespace", &g.Spec.Destination.Namespace, spec.Destination.Namespace)
			if _, err := c.PutGitSource(cmd.Context(), runtime, g, true); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Git Source %s updated.\n", args[0])
			return nil
		}}
	bind(edit, false)

	var out string
	list := &cobra.Command{Use: "list", Short: "List a runtime's Git Sources", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, err := c.ListGitSources(cmd.Context(), runtime)
			if err != nil {
				return err
			}
			return printData(a.stdout, out, l.Items, func(tw *tabwriter.Writer) {
				row(tw, "NAME", "REPO", "PATH", "REVISION", "DESTINATION")
				for _, g := range l.Items {
					d := g.Spec.Destination
					dest := d.Name
					if dest == "" {
						dest = d.Server
					}
					if d.Namespace != "" {
						dest += " (" + d.Namespace + ")"
					}
					row(tw, g.Metadata.Name, g.Spec.RepoURL, g.Spec.Path, g.Spec.TargetRevision, dest)
				}
			})
		}}
	addOutputFlag(list, &out)
	var gout string
	get := &cobra.Command{Use: "get NAME", Short: "Show a Git Source", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			g, err := c.GetGitSource(cmd.Context(), runtime, args[0])
			if err != nil {
				return err
			}
			if gout == outTable {
				gout = "yaml"
			}
			return printData(a.stdout, gout, g, nil)
		}}
	addOutputFlag(get, &gout)
	del := &cobra.Command{Use: "delete NAME", Short: "Remove a Git Source; its applications go with it", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if err := c.DeleteGitSource(cmd.Context(), runtime, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Git Source %s deleted.\n", args[0])
			return nil
		}}
	var provider, apiURL, owner, token, rout string
	repos := &cobra.Command{Use: "repos --provider github|gitlab|gitea [--owner O] [--api-url U]",
		Short: "List repositories through a git provider's API (the runtime calls it with your token, which it does not keep)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if token == "" {
				token = os.Getenv("FRESHET_GIT_PROVIDER_TOKEN")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			l, err := c.ListProviderRepos(cmd.Context(), runtime, provider, apiURL, owner, token)
			if err != nil {
				return err
			}
			return printData(a.stdout, rout, l.Items, func(tw *tabwriter.Writer) {
				row(tw, "REPOSITORY", "CLONE URL", "DEFAULT BRANCH", "PRIVATE")
				for _, r := range l.Items {
					row(tw, r.FullName, r.CloneURL, r.DefaultBranch, fmt.Sprint(r.Private))
				}
			})
		}}
	repos.Flags().StringVar(&provider, "provider", "github", "github, gitlab or gitea")
	repos.Flags().StringVar(&apiURL, "api-url", "", "the provider's API base URL (self-hosted GitLab or Gitea; GitHub Enterprise: https://HOST/api/v3)")
	repos.Flags().StringVar(&owner, "owner", "", "organisation, group or user (default: the repositories the token's user can access)")
	repos.Flags().StringVar(&token, "git-token", "", "personal access token of the provider (env FRESHET_GIT_PROVIDER_TOKEN)")
	addOutputFlag(repos, &rout)
	cmd.AddCommand(create, edit, list, get, del, repos)
	return cmd
}
