package cli

import (
	"bufio"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/version"
)

func (a *app) loginCommand() *cobra.Command {
	var server, username, password, apiKey, name, account string
	var passwordStdin bool
	cmd := &cobra.Command{
		Use:   "login --server URL (--username EMAIL [--password P] | --api-key KEY)",
		Short: "Log in to a Freshet server and save it as a CLI context",
		Long: "Logs in with an email and password (asked for when --password is omitted) or checks an API key,\n" +
			"then saves the server and token as a context in ~/.config/freshet/config.yaml (mode 0600) and\n" +
			"makes it the current context.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if server == "" {
				server = a.server
			}
			if server == "" {
				return usageError("--server is required (like http://127.0.0.1:8080)")
			}
			u, err := url.Parse(server)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return usageError("--server %q is not an http:// or https:// URL", server)
			}
			server = strings.TrimRight(server, "/")
			if (username == "") == (apiKey == "") {
				return usageError("give either --username (with a password) or --api-key")
			}
			ctx := cmd.Context()
			c := Context{Server: server, Name: name}
			if c.Name == "" {
				c.Name = u.Host
			}
			ua := client.WithUserAgent("freshet-cli/" + version.Version)
			var me client.Me
			if apiKey != "" {
				cl := client.New(server, client.WithToken(apiKey), ua)
				if me, err = cl.Me(ctx); err != nil {
					return fmt.Errorf("check API key: %w", err)
				}
				c.Token, c.Kind = apiKey, "apikey"
			} else {
				if password == "" {
					if password, err = a.readPassword(passwordStdin); err != nil {
						return err
					}
				}
				res, err := client.New(server, ua).Login(ctx, client.LoginRequest{Email: username, Password: password, Account: account})
				if err != nil {
					return err
				}
				c.Token, c.Kind, me = res.Token, "session", res.Me
			}
			c.User, c.Account = me.User.Email, me.Account.Name
			f, err := loadCLIConfig()
			if err != nil {
				return err
			}
			f.upsert(c)
			f.CurrentContext = c.Name
			if err := f.save(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Logged in to %s as %s (account %s, role %s); context %q saved.\n", server, me.User.Email, me.Account.Name, me.Role, c.Name)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&server, "server", "", "server URL")
	fs.StringVarP(&username, "username", "u", "", "your email")
	fs.StringVarP(&password, "password", "p", "", "your password (asked for when omitted)")
	fs.BoolVar(&passwordStdin, "password-stdin", false, "read the password from standard input")
	fs.StringVar(&apiKey, "api-key", "", "an API key instead of a password")
	fs.StringVar(&name, "name", "", "name of the saved context (default: the server's host:port)")
	fs.StringVar(&account, "account", "", "account to log in to (default: your first)")
	return cmd
}

// readPassword prompts on a terminal without echo, or reads one line from stdin.
func (a *app) readPassword(fromStdin bool) (string, error) {
	if f, ok := a.stdin.(*os.File); ok && !fromStdin && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(a.stderr, "Password: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.stderr)
		return string(b), err
	}
	line, err := bufio.NewReader(a.stdin).ReadString('\n')
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		if err != nil {
			return "", errors.New("no password: give --password, type it at the prompt, or pipe it with --password-stdin")
		}
	}
	return line, nil
}

func (a *app) logoutCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "End the current session and forget its token",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := loadCLIConfig()
			if err != nil {
				return err
			}
			name := a.contextName
			if name == "" {
				name = f.CurrentContext
			}
			c, ok := f.find(name)
			if !ok {
				return errors.New("not logged in")
			}
			if c.Kind == "session" {
				err := client.New(c.Server, client.WithToken(c.Token)).Logout(cmd.Context())
				if err != nil && !client.IsStatus(err, 401) {
					return err
				}
			}
			c.Token = ""
			if err := f.save(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Logged out of %s.\n", c.Server)
			return nil
		},
	}
}

func (a *app) configCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Manage CLI contexts (saved servers and logins)"}
	var output string
	get := &cobra.Command{
		Use:   "get-contexts",
		Short: "List saved contexts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := loadCLIConfig()
			if err != nil {
				return err
			}
			type ctxOut struct {
				Name    string `json:"name"`
				Server  string `json:"server"`
				User    string `json:"user"`
				Account string `json:"account"`
				Current bool   `json:"current"`
			}
			out := []ctxOut{}
			for _, c := range f.Contexts {
				out = append(out, ctxOut{c.Name, c.Server, c.User, c.Account, c.Name == f.CurrentContext})
			}
			return printData(a.stdout, output, out, func(tw *tabwriter.Writer) {
				row(tw, "CURRENT", "NAME", "SERVER", "USER", "ACCOUNT")
				for _, c := range out {
					cur := ""
					if c.Current {
						cur = "*"
					}
					row(tw, cur, c.Name, c.Server, c.User, c.Account)
				}
			})
		},
	}
	addOutputFlag(get, &output)
	use := &cobra.Command{
		Use:   "use-context NAME",
		Short: "Make a context the current one",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := loadCLIConfig()
			if err != nil {
				return err
			}
			if _, ok := f.find(args[0]); !ok {
				return fmt.Errorf("context %q does not exist (see 'freshet config get-contexts')", args[0])
			}
			f.CurrentContext = args[0]
			if err := f.save(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Switched to context %q.\n", args[0])
			return nil
		},
	}
	current := &cobra.Command{
		Use:   "current-context",
		Short: "Print the current context",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := loadCLIConfig()
			if err != nil {
				return err
			}
			if f.CurrentContext == "" {
				return errors.New("no current context: run 'freshet login'")
			}
			fmt.Fprintln(a.stdout, f.CurrentContext)
			return nil
		},
	}
	del := &cobra.Command{
		Use:   "delete-context NAME",
		Short: "Delete a saved context",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := loadCLIConfig()
			if err != nil {
				return err
			}
			if !f.remove(args[0]) {
				return fmt.Errorf("context %q does not exist", args[0])
			}
			if err := f.save(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Deleted context %q.\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(get, use, current, del)
	return cmd
}
