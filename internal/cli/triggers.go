package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/client"
)

// parseTrigger reads a --trigger value: settings separated by ';' (a cron expression may hold
// commas and spaces), e.g.
//
//	type=git;provider=github;repo=acme/app;events=push.heads,pullrequest.opened;branchRegex=^main$
//	type=cron;expression=0 3 * * 1-5;branch=main;var=MODE=nightly
func parseTrigger(s string) (client.TriggerRequest, error) {
	var r client.TriggerRequest
	git := &client.GitTrigger{}
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return r, usageError("--trigger %q: %q is not key=value", s, part)
		}
		switch k {
		case "type":
			r.Type = v
		case "provider":
			r.Provider = v
		case "secret":
			r.Secret = v
		case "repo":
			git.Repo = v
		case "events":
			git.Events = strings.Split(v, ",")
		case "branchRegex":
			git.BranchRegex = v
		case "branchRegexInput":
			git.BranchRegexInput = v
		case "prTargetBranchRegex":
			git.PullRequestTargetBranchRegex = v
		case "allowForks":
			git.PullRequestAllowForkEvents = v == "true"
		case "modifiedFilesGlob":
			git.ModifiedFilesGlob = v
		case "expression":
			r.Expression = v
		case "timezone":
			r.Timezone = v
		case "branch":
			r.Branch = v
		case "var":
			vk, vv, ok := strings.Cut(v, "=")
			if !ok {
				return r, usageError("--trigger %q: var=%q is not var=K=V", s, v)
			}
			if r.Variables == nil {
				r.Variables = map[string]string{}
			}
			r.Variables[vk] = vv
		default:
			return r, usageError("--trigger %q: unknown setting %q (use type, provider, secret, repo, events, branchRegex, branchRegexInput, prTargetBranchRegex, allowForks, modifiedFilesGlob, expression, timezone, branch, var)", s, k)
		}
	}
	if r.Type == "git" {
		r.Git = git
	}
	return r, nil
}

func (a *app) addTriggers(ctx context.Context, c *client.Client, pipeline string, specs []string) error {
	for _, spec := range specs {
		req, err := parseTrigger(spec)
		if err != nil {
			return err
		}
		t, err := c.CreateTrigger(ctx, pipeline, req)
		if err != nil {
			return err
		}
		a.printCreatedTrigger(t)
	}
	return nil
}

func (a *app) printCreatedTrigger(t client.CreatedTrigger) {
	fmt.Fprintf(a.stdout, "Added trigger %s (%s).\n", t.Name, t.ID)
	if t.WebhookURL != "" {
		fmt.Fprintf(a.stdout, "  Webhook URL: %s (content type application/json)\n", t.WebhookURL)
	}
	if t.Secret != "" {
		fmt.Fprintf(a.stdout, "  Webhook secret (shown once): %s\n", t.Secret)
	}
}

func (a *app) triggerCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "trigger", Aliases: []string{"triggers"}, Short: "Manage a pipeline's git and cron triggers"}
	add := &cobra.Command{
		Use:   "add PROJECT/NAME 'type=git;provider=github;repo=OWNER/NAME;events=push.heads' | 'type=cron;expression=0 3 * * *'",
		Short: "Add a trigger (git triggers print their webhook URL and secret)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			return a.addTriggers(cmd.Context(), c, args[0], args[1:])
		},
	}
	var out string
	list := &cobra.Command{Use: "list PROJECT/NAME", Short: "List a pipeline's triggers", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, err := c.ListTriggers(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printData(a.stdout, out, l.Items, func(tw *tabwriter.Writer) {
				row(tw, "ID", "TYPE", "TRIGGER", "WEBHOOK URL")
				for _, t := range l.Items {
					row(tw, t.ID, t.Type, t.Name, t.WebhookURL)
				}
			})
		}}
	addOutputFlag(list, &out)
	del := a.actionCommand("delete ID", "Delete a trigger", func(ctx context.Context, c *client.Client, id string) (string, error) {
		return "Deleted trigger " + id + ".", c.DeleteTrigger(ctx, id)
	})
	cmd.AddCommand(add, list, del)
	return cmd
}
