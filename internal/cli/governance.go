package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/freshet-dev/freshet/client"
)

func (a *app) teamCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "team", Aliases: []string{"teams"}, Short: "Manage the account's teams (groups of members that rules can name)"}
	create := a.actionCommand("create NAME", "Create a team", func(ctx context.Context, c *client.Client, name string) (string, error) {
		t, err := c.CreateTeam(ctx, name)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Created team %s (%s).", t.Name, t.ID), nil
	})
	var listOut string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the account's teams with their members",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			teams, err := listAll(cmd.Context(), 0, func(o client.ListOptions) (client.List[client.Team], error) { return c.ListTeams(cmd.Context(), o) })
			if err != nil {
				return err
			}
			return printData(a.stdout, listOut, teams, func(tw *tabwriter.Writer) {
				row(tw, "ID", "NAME", "MEMBERS", "OWNS", "CREATED")
				for _, t := range teams {
					emails := make([]string, len(t.Members))
					for i, m := range t.Members {
						emails[i] = m.Email
					}
					row(tw, t.ID, t.Name, strings.Join(emails, ","), ownsOf(t.Owns), t.CreatedAt)
				}
			})
		},
	}
	addOutputFlag(list, &listOut)
	get := getCommand(a, "get TEAM", "Show a team with its members and what it owns", (*client.Client).GetTeam, func(t client.Team) error {
		return printData(a.stdout, listOut, t, func(tw *tabwriter.Writer) {
			fmt.Fprintf(tw, "Team:\t%s (%s)\n", t.Name, t.ID)
			emails := make([]string, len(t.Members))
			for i, m := range t.Members {
				emails[i] = m.Email
			}
			fmt.Fprintf(tw, "Members:\t%s\n", strings.Join(emails, ", "))
			fmt.Fprintf(tw, "Owns projects:\t%s\n", strings.Join(t.Owns.Projects, ", "))
			fmt.Fprintf(tw, "Owns runtimes:\t%s\n", strings.Join(t.Owns.Runtimes, ", "))
		})
	})
	addOutputFlag(get, &listOut)
	addMember := &cobra.Command{
		Use:   "add-member TEAM USER",
		Short: "Add a member of the account (email or user ID) to a team",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if err := c.AddTeamMember(cmd.Context(), args[0], args[1]); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Added %s to team %s.\n", args[1], args[0])
			return nil
		},
	}
	removeMember := &cobra.Command{
		Use:   "remove-member TEAM USER",
		Short: "Take a member (email or user ID) out of a team",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if err := c.RemoveTeamMember(cmd.Context(), args[0], args[1]); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Removed %s from team %s.\n", args[1], args[0])
			return nil
		},
	}
	del := a.actionCommand("delete TEAM", "Delete a team and its rules (refused while it owns projects or runtimes, or a rule names it as owner)", func(ctx context.Context, c *client.Client, team string) (string, error) {
		return "Deleted team " + team + ".", c.DeleteTeam(ctx, team)
	})
	cmd.AddCommand(create, list, get, addMember, removeMember, del)
	return cmd
}

func (a *app) ruleCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "rule", Aliases: []string{"rules"}, Short: "Manage attribute-based rules (who may do what to which resources)",
		Long: "A rule lets a team or a user take an action on resources of a kind that have its attributes.\n" +
			"Once a kind has a rule, members and viewers need a rule to act on it; admins are not bound.\n" +
			"Roles stay the coarse layer: a rule never grants more than the role allows."}
	var in client.CreateRuleRequest
	var createOut string
	create := &cobra.Command{
		Use:   "create (--team T | --user U) --action A --kind K [--tag T]… [--runtime R] [--cluster C] [--namespace N] [--owner own-team|TEAM]",
		Short: "Create a rule",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if in.Action == "" || in.Kind == "" {
				return usageError("--action and --kind are required")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			r, err := c.CreateRule(cmd.Context(), in)
			if err != nil {
				return err
			}
			if createOut != outTable {
				return printData(a.stdout, createOut, r, nil)
			}
			fmt.Fprintf(a.stdout, "Created rule %s: %s.\n", r.ID, r.Summary)
			return nil
		},
	}
	fs := create.Flags()
	fs.StringVar(&in.Team, "team", "", "the team (name or ID) the rule is for")
	fs.StringVar(&in.User, "user", "", "the member (email or ID) the rule is for")
	fs.StringVar(&in.Action, "action", "", "create, read, update, delete, run, approve, sync or terminate")
	fs.StringVar(&in.Kind, "kind", "", "projects, pipelines, builds, contexts, runtimes, clusters, applications, gitsources or workflows")
	fs.StringArrayVar(&in.Tags, "tag", nil, "the resource has this tag (repeatable: any of them; pipelines and builds)")
	fs.StringVar(&in.Runtime, "runtime", "", "the resource is in this runtime (GitOps kinds)")
	fs.StringVar(&in.Cluster, "cluster", "", "the resource is in this cluster (GitOps kinds)")
	fs.StringVar(&in.Namespace, "namespace", "", "the resource is in this namespace (GitOps kinds)")
	fs.StringVar(&in.Owner, "owner", "", "own-team: the resource is owned by the rule's team (for --user: by a team of theirs); or a team (name or ID) that must own it (all kinds but contexts)")
	addOutputFlag(create, &createOut)

	var listOut string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the account's rules",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			rules, err := listAll(cmd.Context(), 0, func(o client.ListOptions) (client.List[client.Rule], error) { return c.ListRules(cmd.Context(), o) })
			if err != nil {
				return err
			}
			return printData(a.stdout, listOut, rules, func(tw *tabwriter.Writer) {
				row(tw, "ID", "RULE", "CREATED")
				for _, r := range rules {
					row(tw, r.ID, r.Summary, r.CreatedAt)
				}
			})
		},
	}
	addOutputFlag(list, &listOut)
	del := a.actionCommand("delete ID", "Delete a rule", func(ctx context.Context, c *client.Client, id string) (string, error) {
		return "Deleted rule " + id + ".", c.DeleteRule(ctx, id)
	})
	cmd.AddCommand(create, list, del)
	return cmd
}

func (a *app) authzCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "authz", Short: "Ask the server about authorization"}
	var in client.ExplainRequest
	var out string
	explain := &cobra.Command{
		Use:   "explain [--user U] --action A --resource KIND/NAME",
		Short: "Say whether a user may take an action on a resource, and why",
		Long: "Asks the server the question its authorization answers for every request, and prints each\n" +
			"step: the role layer, then the rules. KIND/NAME is e.g. pipelines/web/deploy, builds/bld_…,\n" +
			"runtimes/prod or applications/RUNTIME/APP. Exits 1 when the answer is no.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if in.Action == "" || in.Resource == "" {
				return usageError("--action and --resource are required")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			ex, err := c.ExplainAuthz(cmd.Context(), in)
			if err != nil {
				return err
			}
			if out != outTable {
				if err := printData(a.stdout, out, ex, nil); err != nil {
					return err
				}
			} else {
				verdict := "MAY NOT"
				if ex.Allowed {
					verdict = "MAY"
				}
				fmt.Fprintf(a.stdout, "%s (%s) %s %s %s\n", ex.User, ex.Role, verdict, ex.Action, ex.Resource)
				for _, r := range ex.Reasons {
					fmt.Fprintf(a.stdout, "  - %s\n", r)
				}
			}
			if !ex.Allowed {
				return exitError{code: 1, err: fmt.Errorf("%s may not %s %s", ex.User, ex.Action, ex.Resource)}
			}
			return nil
		},
	}
	fs := explain.Flags()
	fs.StringVar(&in.User, "user", "", "the member (email or ID) to ask about (default: you)")
	fs.StringVar(&in.Action, "action", "", "create, read, update, delete, run, approve, sync or terminate")
	fs.StringVar(&in.Resource, "resource", "", "KIND/NAME, e.g. pipelines/web/deploy")
	fs.StringVar(&in.Runtime, "runtime", "", "for clusters, gitsources and workflows (which runtimes hold): the runtime")
	fs.StringVar(&in.Cluster, "cluster", "", "for clusters, gitsources and workflows: the cluster")
	fs.StringVar(&in.Namespace, "namespace", "", "for clusters, gitsources and workflows: the namespace")
	addOutputFlag(explain, &out)
	cmd.AddCommand(explain)
	return cmd
}

// passwdCommand is `freshet user passwd`: change one's password, or set one with a reset token.
func (a *app) passwdCommand() *cobra.Command {
	var current, next, resetToken string
	var fromStdin bool
	cmd := &cobra.Command{
		Use:   "passwd [--reset-token T]",
		Short: "Change your password (your other sessions end), or set one with a reset token an admin gave you",
		Long: "Asks for your current and new password (at a prompt, or two lines on standard input with\n" +
			"--password-stdin). With --reset-token it asks only for the new one and needs no login:\n" +
			"give --server (or FRESHET_SERVER) instead. Every session of the user ends after a reset.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			ask := a.passwordAsker(fromStdin)
			if resetToken == "" && current == "" {
				if current, err = ask("Current password"); err != nil {
					return err
				}
			}
			if next == "" {
				if next, err = ask("New password"); err != nil {
					return err
				}
			}
			if resetToken != "" {
				server := a.server
				if server == "" {
					server = os.Getenv(EnvServer)
				}
				if server == "" {
					c, err := a.client()
					if err != nil {
						return usageError("--reset-token needs --server URL (or %s)", EnvServer)
					}
					server = c.BaseURL()
				}
				if err := client.New(server).ResetPassword(cmd.Context(), client.ResetPasswordRequest{Token: resetToken, NewPassword: next}); err != nil {
					return err
				}
				fmt.Fprintln(a.stdout, "Password set; log in with it ('freshet login').")
				return nil
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			if err := c.ChangePassword(cmd.Context(), client.ChangePasswordRequest{CurrentPassword: current, NewPassword: next}); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, "Password changed; your other sessions have ended.")
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&resetToken, "reset-token", "", "a password reset token (fpr_…) from an admin")
	fs.BoolVar(&fromStdin, "password-stdin", false, "read the passwords from standard input (current, then new; one per line)")
	fs.StringVar(&current, "current-password", "", "your current password (asked for when omitted)")
	fs.StringVar(&next, "new-password", "", "the new password (asked for when omitted)")
	return cmd
}

// resetPasswordCommand is `freshet user reset-password USER` (admins).
func (a *app) resetPasswordCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "reset-password USER",
		Short: "Issue a one-time password reset token for a member (email or ID), or email it when the server has SMTP; valid 24 hours",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			r, err := c.IssuePasswordReset(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if out != outTable {
				return printData(a.stdout, out, r, nil)
			}
			if r.Emailed {
				fmt.Fprintf(a.stdout, "A reset link was emailed to %s (valid until %s); it was not shown here.\n", r.Email, r.ExpiresAt.Format(time.RFC3339))
				return nil
			}
			fmt.Fprintf(a.stdout, "Reset token for %s (shown once, valid until %s):\n%s\n", r.Email, r.ExpiresAt.Format(time.RFC3339), r.Token)
			fmt.Fprintf(a.stdout, "They set a new password with: freshet user passwd --server %s --reset-token %s\n", c.BaseURL(), r.Token)
			return nil
		},
	}
	addOutputFlag(cmd, &out)
	return cmd
}

func (a *app) sessionCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "session", Aliases: []string{"sessions"}, Short: "List and end your login sessions"}
	var out string
	list := &cobra.Command{
		Use:   "list",
		Short: "Your unexpired login sessions, in every account",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, err := c.ListSessions(cmd.Context())
			if err != nil {
				return err
			}
			return printData(a.stdout, out, l.Items, func(tw *tabwriter.Writer) {
				row(tw, "CURRENT", "ID", "ACCOUNT", "CREATED", "EXPIRES")
				for _, s := range l.Items {
					cur := ""
					if s.Current {
						cur = "*"
					}
					row(tw, cur, s.ID, s.Account.Name, s.CreatedAt, s.ExpiresAt)
				}
			})
		},
	}
	addOutputFlag(list, &out)
	revoke := a.actionCommand("revoke ID", "End one of your sessions", func(ctx context.Context, c *client.Client, id string) (string, error) {
		return "Ended session " + id + ".", c.RevokeSession(ctx, id)
	})
	cmd.AddCommand(list, revoke)
	return cmd
}

// passwordAsker returns a function that asks for one password after another: at a prompt
// without echo on a terminal, else one line each from standard input (one reader for all, so
// the second line is not lost in the first one's buffer).
func (a *app) passwordAsker(fromStdin bool) func(prompt string) (string, error) {
	if f, ok := a.stdin.(*os.File); ok && !fromStdin && term.IsTerminal(int(f.Fd())) {
		return func(prompt string) (string, error) {
			fmt.Fprint(a.stderr, prompt+": ")
			b, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(a.stderr)
			return string(b), err
		}
	}
	r := bufio.NewReader(a.stdin)
	return func(prompt string) (string, error) {
		line, err := r.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		if line == "" && err != nil {
			return "", fmt.Errorf("no %s: type it at the prompt, or pipe it with --password-stdin", strings.ToLower(prompt))
		}
		return line, nil
	}
}

// ownsOf is what a team owns, in a table cell.
func ownsOf(o client.TeamOwns) string {
	var parts []string
	for _, p := range o.Projects {
		parts = append(parts, "projects/"+p)
	}
	for _, r := range o.Runtimes {
		parts = append(parts, "runtimes/"+r)
	}
	return strings.Join(parts, ",")
}
