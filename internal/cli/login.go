package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/oauth2"
	"golang.org/x/term"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/version"
)

func (a *app) loginCommand() *cobra.Command {
	var server, username, password, apiKey, name, account string
	var passwordStdin, sso, device, noBrowser bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "login --server URL (--username EMAIL [--password P] | --api-key KEY | --sso --account A [--device])",
		Short: "Log in to a Freshet server and save it as a CLI context",
		Long: "Logs in with an email and password (asked for when --password is omitted), checks an API key,\n" +
			"or logs in through the account's single sign-on in a browser (--sso), then saves the server and\n" +
			"token as a context in ~/.config/freshet/config.yaml (mode 0600) and makes it the current context.\n\n" +
			"--sso listens on 127.0.0.1 on a free port, opens the account's login page in a browser (the URL\n" +
			"is also printed; --no-browser only prints it) and waits up to --timeout for the identity provider\n" +
			"to send the browser back to it with a one-time code, which it exchanges for a session with a\n" +
			"secret it never sent anywhere (PKCE).\n\n" +
			"--sso --device is for shells without a browser (SSH, containers): it prints a URL and a code;\n" +
			"open the URL in a browser on any machine, check that it shows the same code and account,\n" +
			"approve and log in there. The CLI polls the server until then (up to --timeout).",
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
			if device && !sso {
				return usageError("--device is the device flow of single sign-on: give it with --sso --account A")
			}
			if device && noBrowser {
				return usageError("--no-browser: the device flow (--device) never opens a browser: give only --device")
			}
			if sso {
				if username != "" || apiKey != "" || password != "" || passwordStdin {
					return usageError("--sso logs in through the browser: give no --username, --password or --api-key with it")
				}
				if account == "" {
					return usageError("--account is required with --sso: the account (name or ID) whose single sign-on to use")
				}
				if timeout <= 0 {
					return usageError("--timeout %s: must be positive (like 5m)", timeout)
				}
			} else if (username == "") == (apiKey == "") {
				return usageError("give either --username (with a password), --api-key, or --sso --account A")
			}
			ctx := cmd.Context()
			c := Context{Server: server, Name: name}
			if c.Name == "" {
				c.Name = u.Host
			}
			ua := client.WithUserAgent("freshet-cli/" + version.Version)
			var me client.Me
			switch {
			case sso:
				var res client.LoginResponse
				if device {
					res, err = a.deviceLogin(ctx, server, account, timeout, ua)
				} else {
					res, err = a.ssoLogin(ctx, server, account, noBrowser, timeout, ua)
				}
				if err != nil {
					return err
				}
				c.Token, c.Kind, me = res.Token, "session", res.Me
			case apiKey != "":
				cl := client.New(server, client.WithToken(apiKey), ua)
				if me, err = cl.Me(ctx); err != nil {
					return fmt.Errorf("check API key: %w", err)
				}
				c.Token, c.Kind = apiKey, "apikey"
			default:
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
	fs.StringVar(&account, "account", "", "account to log in to (default: your first; required with --sso)")
	fs.BoolVar(&sso, "sso", false, "log in through the account's single sign-on in a browser")
	fs.BoolVar(&noBrowser, "no-browser", false, "with --sso: only print the login URL, do not open a browser")
	fs.DurationVar(&timeout, "timeout", 5*time.Minute, "with --sso: how long to wait for the browser (or the approval, with --device)")
	fs.BoolVar(&device, "device", false, "with --sso: the device flow for shells without a browser (approve in a browser on any machine)")
	return cmd
}

// ssoLogin logs in through account's single sign-on: it listens on 127.0.0.1, sends the
// browser to the server's login URL with the listener's port and the challenge of a fresh PKCE
// verifier, takes the one-time code the server redirects the browser back with, and exchanges
// it with the verifier (which never left this process) for a session.
func (a *app) ssoLogin(ctx context.Context, server, account string, noBrowser bool, timeout time.Duration, ua client.Option) (client.LoginResponse, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return client.LoginResponse{}, fmt.Errorf("listen on 127.0.0.1 for the browser: %w", err)
	}
	defer ln.Close()
	verifier := oauth2.GenerateVerifier()
	q := url.Values{"cli_port": {strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)}, "cli_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}}
	loginURL := server + "/auth/sso/" + url.PathEscape(account) + "/login?" + q.Encode()

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cl := client.New(server, ua)
	type result struct {
		res client.LoginResponse
		err error
	}
	done := make(chan result, 1)
	var once sync.Once
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		code := r.URL.Query().Get("code")
		if code == "" {
			http.Error(w, "no code in this request: it did not come from the Freshet server", http.StatusBadRequest)
			return
		}
		first := false
		once.Do(func() { first = true })
		if !first {
			http.Error(w, "this login is already finished: see the terminal", http.StatusConflict)
			return
		}
		res, err := cl.SSOToken(ctx, client.SSOTokenRequest{Code: code, Verifier: verifier})
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, "Freshet login failed: %v\nSee the terminal.\n", err)
		} else {
			fmt.Fprintf(w, "Logged in to Freshet as %s (account %s). You can close this tab.\n", res.Me.User.Email, res.Me.Account.Name)
		}
		done <- result{res, err}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	fmt.Fprintf(a.stderr, "Log in through single sign-on at:\n\n  %s\n\n", loginURL)
	if !noBrowser {
		if err := openBrowser(loginURL); err != nil {
			fmt.Fprintf(a.stderr, "Could not open a browser (%v): open the URL above in a browser on this machine.\n", err)
		}
	}
	fmt.Fprintf(a.stderr, "Waiting up to %s for the browser...\n", timeout)
	select {
	case r := <-done:
		if r.err != nil {
			return client.LoginResponse{}, fmt.Errorf("single sign-on: %w", r.err)
		}
		return r.res, nil
	case <-ctx.Done():
		return client.LoginResponse{}, fmt.Errorf("single sign-on: no answer from the browser within %s (--timeout): run freshet login --sso again", timeout)
	}
}

// deviceLogin logs in through account's single sign-on with the device flow: it asks the
// server for a device request, prints where and with which code to approve it, and polls at the
// interval the server asks (5 s longer after each slow_down) until the session comes, the
// request is denied or expires, or timeout passes.
func (a *app) deviceLogin(ctx context.Context, server, account string, timeout time.Duration, ua client.Option) (client.LoginResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cl := client.New(server, ua)
	d, err := cl.StartDeviceLogin(ctx, account)
	if err != nil {
		return client.LoginResponse{}, fmt.Errorf("single sign-on (device): %w", err)
	}
	fmt.Fprintf(a.stderr, "To log in to account %s, open this page in a browser on any machine:\n\n  %s\n\nand enter the code\n\n  %s\n\nor open the page with the code in it:\n\n  %s\n\n",
		d.Account, d.VerificationURI, d.UserCode, d.VerificationURIComplete)
	fmt.Fprintf(a.stderr, "Check that the page shows the code %s, then approve. Waiting up to %s...\n", d.UserCode, min(timeout, time.Duration(d.ExpiresIn)*time.Second))
	interval := time.Duration(max(d.Interval, 1)) * time.Second
	warned := false
	for {
		select {
		case <-ctx.Done():
			return client.LoginResponse{}, fmt.Errorf("single sign-on (device): not approved within %s (--timeout): run freshet login --sso --device again", timeout)
		case <-time.After(interval):
		}
		res, err := cl.PollDeviceLogin(ctx, d.DeviceCode)
		if err == nil {
			return res, nil
		}
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Status >= 500 {
			// The network or the server failing for a moment (a restart, a replica going away)
			// ends nothing: the request stays valid until it expires, so poll on, saying so once.
			if ctx.Err() == nil && !warned {
				fmt.Fprintf(a.stderr, "Could not reach %s (%v); still waiting...\n", server, err)
				warned = true
			}
			continue
		}
		warned = false
		switch ce.Code {
		case "authorization_pending":
		case "slow_down":
			interval += 5 * time.Second
		default: // expired_token, access_denied, or anything else the server refuses
			return client.LoginResponse{}, fmt.Errorf("single sign-on (device): %s: %s", ce.Code, ce.Message)
		}
	}
}

// openBrowser starts the desktop's URL opener (open on macOS, xdg-open elsewhere) with u as
// its argument, without waiting for it.
func openBrowser(u string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return fmt.Errorf("%s is not installed", name)
	}
	cmd := exec.Command(path, u)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
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
