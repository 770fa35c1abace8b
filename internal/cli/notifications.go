package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/client"
)

func (a *app) notificationCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "notification", Aliases: []string{"notifications"},
		Short: "Send CI and CD events to webhooks, Slack-compatible channels and email (docs/notifications.md)"}
	cmd.AddCommand(a.notificationChannelCommand(), a.notificationSubscriptionCommand(), a.notificationDeliveriesCommand())
	return cmd
}

func (a *app) notificationChannelCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "channel", Aliases: []string{"channels"}, Short: "Manage notification channels"}
	var in client.CreateNotificationChannelRequest
	var smtp client.NotificationSMTP
	var events []string
	var output string
	var secretStdin bool
	create := &cobra.Command{
		Use:   "create NAME --kind webhook|slack|email [--url URL] [--secret-stdin] [--smtp-host H ...] [--events KIND,...]",
		Short: "Add a webhook, Slack-compatible or email channel",
		Long: "Add a notification channel. A webhook gets each event as JSON, signed with --secret when given\n" +
			"(X-Freshet-Signature-256: sha256=<hex HMAC-SHA256 of the body>); a Slack-compatible channel is an\n" +
			"incoming-webhook URL; email goes through an SMTP server with STARTTLS (--smtp-security).\n" +
			"--events also subscribes the channel to those event kinds: build-finished, build-failed,\n" +
			"deployment, rollout-aborted, health-degraded.\n" +
			"--secret-stdin reads the webhook's signing secret (or, for email, the SMTP password) from the\n" +
			"first line of standard input, so it stays out of the shell history and the process list;\n" +
			"--secret and --smtp-password still work.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return usageError("%v", err)
			}
			if in.Kind == "" {
				return usageError("--kind is required: webhook, slack or email")
			}
			in.Name = args[0]
			if secretStdin {
				if in.Secret != "" || smtp.Password != "" {
					return usageError("--secret-stdin and --secret/--smtp-password: give the secret one way")
				}
				line, err := readSecretLine(a.stdin)
				if err != nil {
					return usageError("--secret-stdin: %v", err)
				}
				if in.Kind == "email" {
					smtp.Password = line
				} else {
					in.Secret = line
				}
			}
			if in.Kind == "email" || smtp.Host != "" {
				s := smtp
				in.SMTP = &s
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			ch, err := c.CreateNotificationChannel(cmd.Context(), in)
			if err != nil {
				return err
			}
			if len(events) > 0 {
				if _, err := c.CreateNotificationSubscription(cmd.Context(), client.CreateNotificationSubscriptionRequest{Channel: ch.Name, Events: events}); err != nil {
					return fmt.Errorf("channel %s was created, subscribing it failed: %w", ch.Name, err)
				}
			}
			return printData(a.stdout, output, ch, func(tw *tabwriter.Writer) { printChannels(tw, []client.NotificationChannel{ch}) })
		},
	}
	fs := create.Flags()
	fs.StringVar(&in.Kind, "kind", "", "webhook, slack or email")
	fs.StringVar(&in.URL, "url", "", "webhook and slack: the URL to post to")
	fs.StringVar(&in.Secret, "secret", "", "webhook: the secret each body is signed with (prefer --secret-stdin)")
	fs.BoolVar(&secretStdin, "secret-stdin", false, "read the webhook secret, or the SMTP password for email, from standard input")
	fs.StringVar(&smtp.Host, "smtp-host", "", "email: the SMTP server")
	fs.IntVar(&smtp.Port, "smtp-port", 0, "email: the SMTP port (default 587)")
	fs.StringVar(&smtp.Username, "smtp-username", "", "email: the SMTP login")
	fs.StringVar(&smtp.Password, "smtp-password", "", "email: the SMTP password, sent only over TLS (prefer --secret-stdin)")
	fs.StringVar(&smtp.From, "from", "", "email: the sender address")
	fs.StringSliceVar(&smtp.To, "to", nil, "email: recipient addresses (repeatable or comma-separated)")
	fs.StringVar(&smtp.Security, "smtp-security", "", "email: starttls (the default), tls (port 465) or none (no password)")
	fs.StringSliceVar(&events, "events", nil, "subscribe the channel to these event kinds (comma-separated)")
	addOutputFlag(create, &output)

	list := listCommand(a, "List notification channels (secrets are never shown)", func(ctx context.Context, c *client.Client) ([]client.NotificationChannel, error) {
		r, err := c.ListNotificationChannels(ctx)
		return r.Items, err
	}, printChannels)
	del := deleteCommand(a, "delete NAME", "Remove a channel with its subscriptions and deliveries", (*client.Client).DeleteNotificationChannel)
	var testOutput string
	test := &cobra.Command{
		Use: "test NAME", Short: "Send a test notification to a channel now and show what happened", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(testOutput); err != nil {
				return usageError("%v", err)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			d, err := c.TestNotificationChannel(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if err := printData(a.stdout, testOutput, d, func(tw *tabwriter.Writer) { printDeliveries(tw, []client.NotificationDelivery{d}) }); err != nil {
				return err
			}
			if d.Status != "delivered" {
				return fmt.Errorf("the test notification was not delivered: %s", d.LastError)
			}
			return nil
		},
	}
	addOutputFlag(test, &testOutput)
	cmd.AddCommand(create, list, del, test)
	return cmd
}

func printChannels(tw *tabwriter.Writer, cs []client.NotificationChannel) {
	row(tw, "NAME", "KIND", "TARGET", "SECRET")
	for _, c := range cs {
		target := c.URL
		if c.SMTP != nil {
			target = fmt.Sprintf("%s:%d → %s", c.SMTP.Host, c.SMTP.Port, strings.Join(c.SMTP.To, ","))
		}
		sec := "-"
		if c.HasSecret {
			sec = "set"
		}
		row(tw, c.Name, c.Kind, target, sec)
	}
}

func (a *app) notificationSubscriptionCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "subscription", Aliases: []string{"subscriptions"}, Short: "Route event kinds to notification channels"}
	var in client.CreateNotificationSubscriptionRequest
	var output string
	create := &cobra.Command{
		Use:   "create CHANNEL --events KIND,... [--pipeline PROJECT/PIPELINE] [--application APP]",
		Short: "Subscribe a channel to event kinds: build-finished, build-failed, deployment, rollout-aborted, health-degraded",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return usageError("%v", err)
			}
			in.Channel = args[0]
			c, err := a.client()
			if err != nil {
				return err
			}
			s, err := c.CreateNotificationSubscription(cmd.Context(), in)
			if err != nil {
				return err
			}
			return printData(a.stdout, output, s, func(tw *tabwriter.Writer) { printSubscriptions(tw, []client.NotificationSubscription{s}) })
		},
	}
	fs := create.Flags()
	fs.StringSliceVar(&in.Events, "events", nil, "event kinds (comma-separated)")
	fs.StringVar(&in.Pipeline, "pipeline", "", "only builds of this pipeline (project/pipeline)")
	fs.StringVar(&in.Application, "application", "", "only deployments, rollouts and health of this application")
	addOutputFlag(create, &output)
	list := listCommand(a, "List subscriptions", func(ctx context.Context, c *client.Client) ([]client.NotificationSubscription, error) {
		r, err := c.ListNotificationSubscriptions(ctx)
		return r.Items, err
	}, printSubscriptions)
	del := deleteCommand(a, "delete ID", "Remove a subscription", (*client.Client).DeleteNotificationSubscription)
	cmd.AddCommand(create, list, del)
	return cmd
}

func printSubscriptions(tw *tabwriter.Writer, ss []client.NotificationSubscription) {
	row(tw, "ID", "CHANNEL", "EVENTS", "PIPELINE", "APPLICATION")
	for _, s := range ss {
		row(tw, s.ID, s.Channel, strings.Join(s.Events, ","), dash(s.Pipeline), dash(s.Application))
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (a *app) notificationDeliveriesCommand() *cobra.Command {
	var f client.NotificationDeliveryFilter
	var output string
	cmd := &cobra.Command{
		Use:   "deliveries [--channel NAME] [--status pending|delivered|failed]",
		Short: "Show the delivery log: each notification, its status and its attempts (admins)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return usageError("%v", err)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			ds, err := c.ListNotificationDeliveries(cmd.Context(), f)
			if err != nil {
				return err
			}
			return printData(a.stdout, output, ds.Items, func(tw *tabwriter.Writer) { printDeliveries(tw, ds.Items) })
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.Channel, "channel", "", "only this channel's deliveries")
	fs.StringVar(&f.Status, "status", "", "only pending, delivered or failed deliveries")
	fs.IntVar(&f.Limit, "limit", 0, "at most this many (default 100)")
	addOutputFlag(cmd, &output)
	return cmd
}

func printDeliveries(tw *tabwriter.Writer, ds []client.NotificationDelivery) {
	row(tw, "ID", "CHANNEL", "EVENT", "STATUS", "ATTEMPTS", "LAST", "TITLE")
	for _, d := range ds {
		last := "-"
		if n := len(d.Attempts); n > 0 {
			at := d.Attempts[n-1]
			last = at.At.Local().Format(time.DateTime)
			if at.StatusCode != 0 {
				last += fmt.Sprintf(" %d", at.StatusCode)
			}
			if at.Error != "" {
				last += ": " + at.Error
			}
		}
		row(tw, d.ID, d.Channel, d.Event, d.Status, len(d.Attempts), last, d.Title)
	}
}

// readSecretLine reads the first line of r, without its line ending; an empty line is an error.
func readSecretLine(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		return "", errors.New("standard input held no secret (one line expected)")
	}
	return line, nil
}
