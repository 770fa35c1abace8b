package cli

import (
	"encoding/pem"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/freshet-dev/freshet/client"
)

// maxPasswordStdin bounds what --password-stdin reads (a service account's JSON key fits).
const maxPasswordStdin = 64 << 10

// registryFlags are the flags of `context create registry` and `context update` that describe
// a registry context.
type registryFlags struct {
	URL, Username, Password, CAFile string
	PasswordStdin, Default          bool
	Provider                        string // git contexts only
}

// BindFlags registers the flags on fs.
func (o *registryFlags) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.URL, "url", "", "registry: host[:port] and an optional path prefix, e.g. ghcr.io/acme (no scheme)")
	fs.StringVar(&o.Username, "username", "", "registry: the user to log in as (none: anonymous, or a token in the password)")
	fs.StringVar(&o.Password, "password", "", "registry: the password or token (visible in the process list: prefer --password-stdin)")
	fs.BoolVar(&o.PasswordStdin, "password-stdin", false, "registry: read the password or token from standard input")
	fs.StringVar(&o.CAFile, "ca-file", "", "registry: a PEM file of certificates to trust, for a registry with a private CA")
	fs.BoolVar(&o.Default, "default", false, "registry: make it the account's default registry (where builds push unless told otherwise)")
	fs.StringVar(&o.Provider, "provider", "", "git: github, gitlab, gitea or bitbucket (--url is then the API's base URL, --password the token)")
}

var registryFlagNames = []string{"url", "username", "password", "password-stdin", "ca-file", "default"}

// changed names the registry flags set on the command line.
func (o *registryFlags) changed(fs *pflag.FlagSet) []string {
	var out []string
	for _, n := range registryFlagNames {
		if fs.Changed(n) {
			out = append(out, "--"+n)
		}
	}
	return out
}

// apply sets on r what the flags changed, reading the password from stdin and the CA from its
// file. A password not given stays as r has it (the mask keeps the stored one).
func (o *registryFlags) apply(a *app, fs *pflag.FlagSet, r *client.RegistryContext) error {
	if o.PasswordStdin && fs.Changed("password") {
		return usageError("--password and --password-stdin: give one of them")
	}
	if fs.Changed("url") {
		r.URL = o.URL
	}
	if fs.Changed("username") {
		r.Username = o.Username
	}
	switch {
	case fs.Changed("password"):
		r.Password = o.Password
	case o.PasswordStdin:
		b, err := io.ReadAll(io.LimitReader(a.stdin, maxPasswordStdin+1))
		if err != nil {
			return fmt.Errorf("read the password from standard input: %w", err)
		}
		if len(b) > maxPasswordStdin {
			return usageError("--password-stdin: the input is larger than %d KiB", maxPasswordStdin>>10)
		}
		r.Password = strings.TrimRight(string(b), "\r\n")
		if r.Password == "" {
			return usageError("--password-stdin: standard input is empty: pipe the password or token in")
		}
	}
	if fs.Changed("ca-file") {
		r.CA = ""
		if o.CAFile != "" {
			b, err := readFile(a, o.CAFile)
			if err != nil {
				return fmt.Errorf("--ca-file: %w", err)
			}
			r.CA = string(b)
		}
	}
	if fs.Changed("default") {
		r.Default = o.Default
	}
	return nil
}

// registrySummary is what a listing shows of a registry context.
func registrySummary(r *client.RegistryContext) string {
	if r == nil {
		return ""
	}
	s := r.URL
	var notes []string
	if r.Username != "" {
		notes = append(notes, "as "+r.Username)
	}
	if r.Default {
		notes = append(notes, "default")
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, ", ") + ")"
	}
	return s
}

// caSummary says how many certificates a PEM text holds.
func caSummary(ca string) string {
	if ca == "" {
		return ""
	}
	n := 0
	for rest := []byte(ca); ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		n++
	}
	if n == 1 {
		return "1 certificate"
	}
	return fmt.Sprintf("%d certificates", n)
}

// createRegistry creates registry context name from the flags.
func (a *app) createRegistry(cmd *cobra.Command, o *registryFlags, name string) error {
	var r client.RegistryContext
	if err := o.apply(a, cmd.Flags(), &r); err != nil {
		return err
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	created, err := c.CreateContext(cmd.Context(), client.ContextRequest{Name: name, Type: "registry", Registry: &r})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "Created registry context %s for %s.\n", created.Name, registrySummary(created.Registry))
	return nil
}

// applyGit sets on g what the flags changed: --provider, --url (the API's base URL),
// --username, and the token from --password or --password-stdin.
func (o *registryFlags) applyGit(a *app, fs *pflag.FlagSet, g *client.GitContext) error {
	for _, n := range []string{"ca-file", "default"} {
		if fs.Changed(n) {
			return usageError("--%s: only for registry contexts; a git context has --provider, --url, --username and a token (--password-stdin)", n)
		}
	}
	r := client.RegistryContext{URL: g.URL, Username: g.Username, Password: g.Token}
	if err := o.apply(a, fs, &r); err != nil {
		return err
	}
	g.URL, g.Username, g.Token = r.URL, r.Username, r.Password
	if fs.Changed("provider") {
		g.Provider = o.Provider
	}
	return nil
}

// gitSummary is what a listing shows of a git context.
func gitSummary(g *client.GitContext) string {
	if g == nil {
		return ""
	}
	s := g.Provider + " " + g.URL
	if g.Username != "" {
		s += " (as " + g.Username + ")"
	}
	return s
}

// createGit creates git context name from the flags.
func (a *app) createGit(cmd *cobra.Command, o *registryFlags, name string) error {
	var g client.GitContext
	if err := o.applyGit(a, cmd.Flags(), &g); err != nil {
		return err
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	created, err := c.CreateContext(cmd.Context(), client.ContextRequest{Name: name, Type: "git", Git: &g})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "Created git context %s for %s.\n", created.Name, gitSummary(created.Git))
	return nil
}
