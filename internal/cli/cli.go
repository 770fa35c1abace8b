// Package cli is the freshet command line: `freshet up` and `freshet server` run the platform,
// every other subcommand is a client of the API that talks to the server only through the
// public client package.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/gitops/workflows/emissary"
	"github.com/freshet-dev/freshet/internal/version"
)

// Environment variables the CLI reads besides the FRESHET_* server settings.
const (
	EnvServer  = "FRESHET_SERVER"
	EnvToken   = "FRESHET_TOKEN"
	EnvContext = "FRESHET_CONTEXT"
)

// app carries what every command needs: I/O and the global flags.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	contextName    string
	server         string
	token          string
}

// Main runs the freshet command with args and returns the process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "emissary" {
		// The helper of workflow pods (internal/gitops/workflows/emissary): not a user command,
		// kept out of cobra so that the step's stdout and flags pass through untouched.
		return emissary.Main(args[1:], stdin, stdout, stderr)
	}
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "Error:", describe(err))
		var ee exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}

// exitError carries a specific exit code.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// describe turns API errors into one readable line.
func describe(err error) string {
	var ae *client.Error
	if errors.As(err, &ae) {
		msg := ae.Message
		if ae.Status == http.StatusUnauthorized {
			msg += " (log in again with 'freshet login')"
		}
		return msg
	}
	return err.Error()
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "freshet",
		Short:         "Freshet: CI pipelines and GitOps delivery from one self-hosted platform",
		Long:          "Freshet is a whole software delivery platform in one binary.\n\n  freshet up        run everything in one process on embedded defaults\n  freshet server    run the control plane for production\n  freshet login     point the CLI at a server\n",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.contextName, "context", os.Getenv(EnvContext), "CLI context to use (default: the current context; env "+EnvContext+")")
	pf.StringVar(&a.server, "server", "", "server URL, overriding the context's (env "+EnvServer+")")
	pf.StringVar(&a.token, "token", "", "API key or session token, overriding the context's (env "+EnvToken+")")
	root.AddCommand(
		a.upCommand(), a.serverCommand(),
		a.loginCommand(), a.logoutCommand(), a.configCommand(),
		a.accountCommand(), a.userCommand(), a.invitationCommand(), a.apikeyCommand(), a.auditCommand(),
		a.teamCommand(), a.ruleCommand(), a.authzCommand(), a.sessionCommand(),
		a.projectCommand(), a.pipelineCommand(), a.buildCommand(), a.contextCommand(), a.runnerCommand(),
		a.masterKeyCommand(), a.runtimeCommand(), a.appCommand(), a.rolloutCommand(), a.workflowCommand(), a.workflowTemplateCommand(), a.cronWorkflowCommand(), a.clusterCommand(), a.gitSourceCommand(),
		a.deploymentsCommand(), a.doraCommand(), a.imagesCommand(), a.helmReleaseCommand(), a.notificationCommand(), a.environmentCommand(), a.productCommand(), a.hubCommand(), a.adminCommand(), a.planCommand(), a.usageCommand(),
		a.versionCommand(),
	)
	return root
}

func (a *app) versionCommand() *cobra.Command {
	var short bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if short {
				fmt.Fprintln(a.stdout, version.Version)
				return nil
			}
			fmt.Fprintln(a.stdout, version.String())
			return nil
		},
	}
	cmd.Flags().BoolVar(&short, "short", false, "print the version number only")
	return cmd
}

// client returns an API client for the selected context, with --server/--token and
// FRESHET_SERVER/FRESHET_TOKEN taking precedence.
func (a *app) client() (*client.Client, error) {
	server, token := a.server, a.token
	if server == "" {
		server = os.Getenv(EnvServer)
	}
	if token == "" {
		token = os.Getenv(EnvToken)
	}
	if server == "" || token == "" {
		f, err := loadCLIConfig()
		if err != nil {
			return nil, err
		}
		name := a.contextName
		if name == "" {
			name = f.CurrentContext
		}
		if name == "" {
			if server == "" {
				return nil, errors.New("no server: run 'freshet login --server URL' first, or set " + EnvServer)
			}
		} else {
			c, ok := f.find(name)
			if !ok {
				return nil, fmt.Errorf("context %q does not exist (see 'freshet config get-contexts')", name)
			}
			if server == "" {
				server = c.Server
			}
			if token == "" {
				token = c.Token
			}
		}
	}
	return client.New(server, client.WithToken(token), client.WithUserAgent("freshet-cli/"+version.Version)), nil
}

// actionCommand is a command that acts on one named object through the API and prints what it
// did (delete, revoke, drain, cancel…).
func (a *app) actionCommand(use, short string, run func(ctx context.Context, c *client.Client, arg string) (string, error)) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			msg, err := run(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, msg)
			return nil
		}}
}

// getCommand is a command that fetches one named object through the API and prints it with
// print (which honours -o).
// get takes the client first, so method expressions such as (*client.Client).GetUser fit.
func getCommand[T any](a *app, use, short string, get func(c *client.Client, ctx context.Context, arg string) (T, error), print func(T) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			v, err := get(c, cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return print(v)
		}}
}

func usageError(format string, args ...any) error {
	return exitError{code: 2, err: fmt.Errorf(format, args...)}
}
