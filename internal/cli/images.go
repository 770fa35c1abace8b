package cli

import (
	"context"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/client"
)

func (a *app) imagesCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "image", Aliases: []string{"images"}, Short: "Report images CI built and read what they link to (commits, issues)"}
	var in client.ReportImageRequest
	var output string
	report := &cobra.Command{
		Use:   "report --image REF --digest D --commit SHA [--issue KEY]...",
		Short: "Report an image a CI system built, with its commit and issue keys",
		Long: "Report an image a CI system built (Codefresh's report-image is the model). The image is linked to the\n" +
			"commit, and to the issues given with --issue and named in the commit message (given with --message,\n" +
			"or read from --repo-url) and in the branch name: Jira keys (PROJ-123), owner/repo#123 and #123.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return usageError("%v", err)
			}
			if in.Image == "" {
				return usageError("--image is required: the image reference, e.g. ghcr.io/acme/web:1.2")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			im, err := c.ReportImage(cmd.Context(), in)
			if err != nil {
				return err
			}
			return printData(a.stdout, output, im, func(tw *tabwriter.Writer) {
				printImages(tw, []client.ReportedImage{im})
			})
		},
	}
	fs := report.Flags()
	fs.StringVar(&in.Image, "image", "", "the image reference, [registry/]repository[:tag][@digest]")
	fs.StringVar(&in.Digest, "digest", "", "the image's manifest digest (sha256:…)")
	fs.StringVar(&in.Commit, "commit", "", "the git commit SHA the image was built from")
	fs.StringVar(&in.Branch, "branch", "", "the branch the commit was built on")
	fs.StringVar(&in.RepoURL, "repo-url", "", "the git repository of the commit")
	fs.StringVar(&in.Message, "message", "", "the commit message (read from --repo-url when not given)")
	fs.StringArrayVar(&in.Issues, "issue", nil, "an issue key the image carries: PROJ-123, owner/repo#123, #123 (repeatable)")
	fs.StringArrayVar(&in.Tags, "tag", nil, "another tag of the image (repeatable)")
	addOutputFlag(report, &output)

	var f client.ImageFilter
	var listOutput string
	var max int
	list := &cobra.Command{
		Use:   "list [--repository R] [--digest D] [--commit SHA]",
		Short: "List reported images, newest first, with their commits and issues",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(listOutput); err != nil {
				return usageError("%v", err)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			ims, err := listAll(cmd.Context(), max, func(o client.ListOptions) (client.List[client.ReportedImage], error) {
				f.ListOptions = o
				return c.ListImages(cmd.Context(), f)
			})
			if err != nil {
				return err
			}
			return printData(a.stdout, listOutput, ims, func(tw *tabwriter.Writer) { printImages(tw, ims) })
		},
	}
	lf := list.Flags()
	lf.StringVar(&f.Repository, "repository", "", "only this repository (registry host included)")
	lf.StringVar(&f.Digest, "digest", "", "only this digest")
	lf.StringVar(&f.Commit, "commit", "", "only images built from this commit")
	lf.IntVar(&max, "limit", 100, "list at most this many (0: all)")
	addOutputFlag(list, &listOutput)
	cmd.AddCommand(report, list, a.issueTrackersCommand())
	return cmd
}

func printImages(tw *tabwriter.Writer, ims []client.ReportedImage) {
	row(tw, "REPOSITORY", "DIGEST", "TAGS", "COMMIT", "BRANCH", "ISSUES")
	for _, im := range ims {
		var sha, branch string
		if im.Commit != nil {
			sha, branch = shortRev(im.Commit.SHA), im.Commit.Branch
		}
		keys := make([]string, 0, len(im.Issues))
		for _, is := range im.Issues {
			keys = append(keys, is.Key)
		}
		row(tw, im.Repository, shortDigest(im.Digest), strings.Join(im.Tags, ","), sha, branch, strings.Join(keys, ","))
	}
}

func (a *app) issueTrackersCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "trackers", Short: "Manage the issue trackers images' issue titles are fetched from"}
	var in client.CreateIssueTrackerRequest
	var output string
	create := &cobra.Command{
		Use:   "create NAME --kind jira|github|gitlab [--url URL] [--username U] [--token T] [--scope S]...",
		Short: "Add an issue tracker (Jira, GitHub, GitLab)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return usageError("%v", err)
			}
			in.Name = args[0]
			c, err := a.client()
			if err != nil {
				return err
			}
			t, err := c.CreateIssueTracker(cmd.Context(), in)
			if err != nil {
				return err
			}
			return printData(a.stdout, output, t, func(tw *tabwriter.Writer) { printTrackers(tw, []client.IssueTracker{t}) })
		},
	}
	fs := create.Flags()
	fs.StringVar(&in.Kind, "kind", "", "jira, github or gitlab")
	fs.StringVar(&in.URL, "url", "", "the API's base URL (Jira: the site; GitHub: https://api.github.com; GitLab: https://gitlab.com)")
	fs.StringVar(&in.Username, "username", "", "Jira Cloud: the account's email (the token is then an API token)")
	fs.StringVar(&in.Token, "token", "", "the API token")
	fs.StringArrayVar(&in.Scope, "scope", nil, "a Jira project key or repository path prefix it answers for (repeatable; none: all)")
	addOutputFlag(create, &output)
	list := listCommand(a, "List issue trackers", func(ctx context.Context, c *client.Client) ([]client.IssueTracker, error) {
		r, err := c.ListIssueTrackers(ctx)
		return r.Items, err
	}, printTrackers)
	del := deleteCommand(a, "delete NAME", "Remove an issue tracker", (*client.Client).DeleteIssueTracker)
	cmd.AddCommand(create, list, del)
	return cmd
}

func printTrackers(tw *tabwriter.Writer, ts []client.IssueTracker) {
	row(tw, "NAME", "KIND", "URL", "SCOPE", "TOKEN")
	for _, t := range ts {
		tok := "-"
		if t.HasToken {
			tok = "set"
		}
		row(tw, t.Name, t.Kind, t.URL, strings.Join(t.Scope, ","), tok)
	}
}
