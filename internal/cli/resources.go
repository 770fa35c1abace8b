package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/rest"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

// listAll pages through a collection until it ends or max items (0: no bound) are collected.
func listAll[T any](ctx context.Context, max int, page func(client.ListOptions) (client.List[T], error)) ([]T, error) {
	out := []T{}
	o := client.ListOptions{Limit: 500}
	for {
		if max > 0 && max-len(out) < o.Limit {
			o.Limit = max - len(out)
		}
		l, err := page(o)
		if err != nil {
			return nil, err
		}
		out = append(out, l.Items...)
		if l.NextCursor == "" || (max > 0 && len(out) >= max) {
			return out, nil
		}
		o.After = l.NextCursor
	}
}

func (a *app) accountCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "account", Short: "Show, switch, create and delete accounts"}
	var output string
	get := &cobra.Command{
		Use:   "get",
		Short: "Show the current account",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			acct, err := c.Account(cmd.Context())
			if err != nil {
				return err
			}
			return printData(a.stdout, output, acct, func(tw *tabwriter.Writer) {
				row(tw, "ID", "NAME", "CREATED")
				row(tw, acct.ID, acct.Name, acct.CreatedAt)
			})
		},
	}
	addOutputFlag(get, &output)
	var listOutput string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the accounts you belong to",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			me, err := c.Me(cmd.Context())
			if err != nil {
				return err
			}
			return printData(a.stdout, listOutput, me.Accounts, func(tw *tabwriter.Writer) {
				row(tw, "CURRENT", "ID", "NAME", "ROLE")
				for _, m := range me.Accounts {
					cur := ""
					if m.ID == me.Account.ID {
						cur = "*"
					}
					row(tw, cur, m.ID, m.Name, m.Role)
				}
			})
		},
	}
	addOutputFlag(list, &listOutput)
	use := &cobra.Command{
		Use:   "use ACCOUNT",
		Short: "Switch the current session to another account (by name or ID)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			me, err := c.SwitchAccount(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if f, err := loadCLIConfig(); err == nil {
				name := a.contextName
				if name == "" {
					name = f.CurrentContext
				}
				if cur, ok := f.find(name); ok {
					cur.Account = me.Account.Name
					f.save()
				}
			}
			fmt.Fprintf(a.stdout, "Now in account %s as %s.\n", me.Account.Name, me.Role)
			return nil
		},
	}
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create an account with you as its admin",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			acct, err := c.CreateAccount(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Created account %s (%s); switch to it with 'freshet account use %s'.\n", acct.Name, acct.ID, acct.Name)
			return nil
		},
	}
	var confirm string
	del := &cobra.Command{
		Use:   "delete --confirm NAME",
		Short: "Delete the current account and everything in it, for good (its admins only)",
		Long: "Deletes the current account: its members' access (API keys and sessions, yours included),\n" +
			"its pipelines, builds, runners, runtimes (its hosted runtime is removed), applications and\n" +
			"every other resource. Users stay, with their other accounts. --confirm must be the account's name.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if confirm == "" {
				return errdefs.Invalid("confirm", "", "is required: the name of the account to delete ('freshet account get' shows it)")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			if err := c.DeleteAccount(cmd.Context(), confirm); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Deleted account %s. Your session in it has ended: log in again to reach your other accounts.\n", confirm)
			return nil
		},
	}
	del.Flags().StringVar(&confirm, "confirm", "", "the name of the account to delete, to confirm")
	cmd.AddCommand(get, list, use, create, del)
	return cmd
}

func printUsers(a *app, output string, v any, users []client.User) error {
	return printData(a.stdout, output, v, func(tw *tabwriter.Writer) {
		row(tw, "ID", "EMAIL", "NAME", "ROLE", "CREATED")
		for _, u := range users {
			row(tw, u.ID, u.Email, u.Name, u.Role, u.CreatedAt)
		}
	})
}

func (a *app) userCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "user", Aliases: []string{"users"}, Short: "Manage the account's users"}
	var in client.CreateUserRequest
	var createOut string
	create := &cobra.Command{
		Use:   "create --email E --role admin|member|viewer [--password P]",
		Short: "Add a user to the account (a password is generated and printed once when omitted)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if in.Email == "" {
				return usageError("--email is required")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			u, err := c.CreateUser(cmd.Context(), in)
			if err != nil {
				return err
			}
			if createOut != outTable {
				return printData(a.stdout, createOut, u, nil)
			}
			fmt.Fprintf(a.stdout, "Created user %s (%s) with role %s.\n", u.Email, u.ID, u.Role)
			if u.Password != "" {
				fmt.Fprintf(a.stdout, "Password (shown once): %s\n", u.Password)
			}
			return nil
		},
	}
	create.Flags().StringVar(&in.Email, "email", "", "email (the login name)")
	create.Flags().StringVar(&in.Name, "name", "", "display name (default: the email's local part)")
	create.Flags().StringVar(&in.Role, "role", "member", "role: admin, member or viewer")
	create.Flags().StringVar(&in.Password, "password", "", "initial password (default: generated)")
	addOutputFlag(create, &createOut)

	var listOut string
	var listMax int
	list := &cobra.Command{
		Use:   "list",
		Short: "List the account's users",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			users, err := listAll(cmd.Context(), listMax, func(o client.ListOptions) (client.List[client.User], error) {
				return c.ListUsers(cmd.Context(), o)
			})
			if err != nil {
				return err
			}
			return printUsers(a, listOut, users, users)
		},
	}
	addOutputFlag(list, &listOut)
	list.Flags().IntVar(&listMax, "limit", 0, "list at most this many (0: all)")

	var getOut string
	get := getCommand(a, "get ID", "Show one user", (*client.Client).GetUser,
		func(u client.User) error { return printUsers(a, getOut, u, []client.User{u}) })
	addOutputFlag(get, &getOut)

	var role string
	update := &cobra.Command{
		Use:   "update ID --role R",
		Short: "Change a user's role",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			u, err := c.UpdateUser(cmd.Context(), args[0], client.UpdateUserRequest{Role: role})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "User %s now has role %s.\n", u.Email, u.Role)
			return nil
		},
	}
	update.Flags().StringVar(&role, "role", "", "role: admin, member or viewer")

	del := a.actionCommand("delete ID", "Remove a user from the account", func(ctx context.Context, c *client.Client, id string) (string, error) {
		return "Removed user " + id + ".", c.DeleteUser(ctx, id)
	})
	cmd.AddCommand(create, list, get, update, del, a.passwdCommand(), a.resetPasswordCommand())
	return cmd
}

func (a *app) apikeyCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "apikey", Aliases: []string{"apikeys", "api-key"}, Short: "Manage API keys"}
	var in client.CreateAPIKeyRequest
	var createOut string
	create := &cobra.Command{
		Use:   "create --name N [--role R] [--expires 720h]",
		Short: "Create an API key (its token is printed once)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if in.Name == "" {
				return usageError("--name is required")
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			k, err := c.CreateAPIKey(cmd.Context(), in)
			if err != nil {
				return err
			}
			if createOut != outTable {
				return printData(a.stdout, createOut, k, nil)
			}
			fmt.Fprintf(a.stdout, "Created API key %q (%s), role %s, expires %s.\n", k.Name, k.ID, k.Role, expiry(k.ExpiresAt))
			fmt.Fprintf(a.stdout, "Token (shown once): %s\n", k.Token)
			return nil
		},
	}
	create.Flags().StringVar(&in.Name, "name", "", "key name")
	create.Flags().StringVar(&in.Role, "role", "", "role (default: yours; never more)")
	create.Flags().StringVar(&in.ExpiresIn, "expires", "", "lifetime such as 720h; 0 for never (default 90 days)")
	addOutputFlag(create, &createOut)

	var listOut string
	list := &cobra.Command{
		Use:   "list",
		Short: "List API keys (all of the account's for admins)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			keys, err := listAll(cmd.Context(), 0, func(o client.ListOptions) (client.List[client.APIKey], error) {
				return c.ListAPIKeys(cmd.Context(), o)
			})
			if err != nil {
				return err
			}
			return printData(a.stdout, listOut, keys, func(tw *tabwriter.Writer) {
				row(tw, "ID", "NAME", "PREFIX", "ROLE", "STATUS", "EXPIRES", "LAST USED")
				for _, k := range keys {
					row(tw, k.ID, k.Name, k.Prefix, k.Role, k.Status, expiry(k.ExpiresAt), k.LastUsedAt)
				}
			})
		},
	}
	addOutputFlag(list, &listOut)

	revoke := a.actionCommand("revoke ID", "Revoke an API key", func(ctx context.Context, c *client.Client, id string) (string, error) {
		return "Revoked API key " + id + ".", c.RevokeAPIKey(ctx, id)
	})
	cmd.AddCommand(create, list, revoke)
	return cmd
}

func expiry(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return ts(*t)
}

func (a *app) auditCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Read the audit log"}
	var f client.AuditFilter
	var since, until, output string
	var max int
	list := &cobra.Command{
		Use:   "list [--actor A] [--action X] [--since 24h]",
		Short: "List audit records, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			now := time.Now()
			for _, t := range []struct {
				flag, v string
				dst     *time.Time
			}{{"since", since, &f.Since}, {"until", until, &f.Until}} {
				if t.v == "" {
					continue
				}
				v, err := rest.ParseTime(t.v, now)
				if err != nil {
					return usageError("--%s %q is not a time: use RFC 3339 (2026-01-02T15:04:05Z) or a duration ago (24h)", t.flag, t.v)
				}
				*t.dst = v
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			evs, err := listAll(cmd.Context(), max, func(o client.ListOptions) (client.List[client.AuditEvent], error) {
				f.ListOptions = o
				return c.ListAudit(cmd.Context(), f)
			})
			if err != nil {
				return err
			}
			return printData(a.stdout, output, evs, func(tw *tabwriter.Writer) {
				row(tw, "TIME", "ACTOR", "ACTION", "RESOURCE", "RESULT", "SOURCE", "REQUEST")
				for _, e := range evs {
					row(tw, e.Time, e.Actor, e.Action, e.ResourceType+"/"+e.ResourceID, e.Result, e.SourceIP, e.RequestID)
				}
			})
		},
	}
	fs := list.Flags()
	fs.StringVar(&f.Actor, "actor", "", "only this actor (user ID or email)")
	fs.StringVar(&f.Action, "action", "", "only this action (user.create) or prefix (user.*)")
	fs.StringVar(&f.ResourceType, "resource-type", "", "only this resource type")
	fs.StringVar(&f.ResourceID, "resource-id", "", "only this resource")
	fs.StringVar(&f.Result, "result", "", "only this result: success, denied or failure")
	fs.StringVar(&since, "since", "", "from this time (RFC 3339) or this long ago (24h)")
	fs.StringVar(&until, "until", "", "until this time (RFC 3339) or this long ago")
	fs.IntVar(&max, "limit", 100, "list at most this many (0: all)")
	addOutputFlag(list, &output)
	cmd.AddCommand(list)
	return cmd
}

func (a *app) invitationCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "invitation", Aliases: []string{"invitations"}, Short: "Answer invitations to join other accounts"}
	var listOut string
	list := &cobra.Command{
		Use:   "list",
		Short: "List your invitations to other accounts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			invs, err := c.ListInvitations(cmd.Context())
			if err != nil {
				return err
			}
			return printData(a.stdout, listOut, invs.Items, func(tw *tabwriter.Writer) {
				row(tw, "ID", "ACCOUNT", "ROLE", "INVITED BY", "EXPIRES")
				for _, i := range invs.Items {
					row(tw, i.ID, i.Account.Name, i.Role, i.InvitedBy, i.ExpiresAt)
				}
			})
		},
	}
	addOutputFlag(list, &listOut)
	accept := a.actionCommand("accept ID", "Join the account that invited you (needs a login session)", func(ctx context.Context, c *client.Client, id string) (string, error) {
		m, err := c.AcceptInvitation(ctx, id)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Joined account %s as %s; switch to it with 'freshet account use %s'.", m.Name, m.Role, m.Name), nil
	})
	decline := a.actionCommand("decline ID", "Decline an invitation (needs a login session)", func(ctx context.Context, c *client.Client, id string) (string, error) {
		return "Declined invitation " + id + ".", c.DeclineInvitation(ctx, id)
	})
	cmd.AddCommand(list, accept, decline)
	return cmd
}
