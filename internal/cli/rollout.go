package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/freshet-dev/freshet/client"
)

// rolloutWatchPoll is how often `freshet rollout watch` reads the Rollout.
const rolloutWatchPoll = time.Second

// rolloutGet is `freshet rollout get -o json|yaml`: the list's fields plus steps and analysis
// runs (the table shows the rest of the detail).
type rolloutGet struct {
	client.Rollout
	Steps        []client.RolloutStep `json:"steps"`
	AnalysisRuns []client.AnalysisRun `json:"analysisRuns"`
}

func (a *app) rolloutCommand() *cobra.Command {
	var runtime, appName, namespace, out string
	cmd := &cobra.Command{
		Use:     "rollout",
		Aliases: []string{"rollouts", "ro"},
		Short:   "See and operate a runtime's Argo Rollouts (canary and blue-green updates)",
		Long: "Rollouts are Argo Rollouts' Rollout objects, run by the runtime's Rollouts controller and reached\n" +
			"through the control plane. NAME is a Rollout's name (NAMESPACE/NAME, or -n, when two namespaces\n" +
			"have one of that name). --app goes through the application's rollouts, so that rules on\n" +
			"applications apply; its Rollouts are those its manifests define.",
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&runtime, "runtime", envOr(EnvRuntime, DefaultRuntime), "the runtime (name or ID; env "+EnvRuntime+")")
	pf.StringVar(&appName, "app", "", "only the Rollouts of this application")
	pf.StringVarP(&namespace, "namespace", "n", "", "the Rollout's namespace (default: found by name)")

	run := func(f func(ctx context.Context, c *client.Client, args []string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			return appError(runtime, f(cmd.Context(), c, args))
		}
	}
	// resolve finds the Rollout's namespace.
	resolve := func(ctx context.Context, c *client.Client, arg string) (string, string, error) {
		where := "runtime " + runtime
		if appName != "" {
			where = "application " + appName
		}
		return resolveNamespaced(arg, namespace, "rollout", where, "freshet rollout list", func() ([]string, []string, error) {
			l, err := c.ListRollouts(ctx, runtime, appName)
			if err != nil {
				return nil, nil, err
			}
			var nss, names []string
			for _, r := range l.Items {
				nss, names = append(nss, r.Namespace), append(names, r.Name)
			}
			return nss, names, nil
		})
	}

	list := &cobra.Command{Use: "list [--app A]", Short: "List the runtime's Rollouts", Args: cobra.NoArgs,
		RunE: run(func(ctx context.Context, c *client.Client, _ []string) error {
			l, err := c.ListRollouts(ctx, runtime, appName)
			if err != nil {
				return err
			}
			return printData(a.stdout, out, l.Items, func(tw *tabwriter.Writer) {
				row(tw, "NAME", "NAMESPACE", "APP", "STRATEGY", "PHASE", "STEP", "STABLE", "CANARY")
				for _, r := range l.Items {
					row(tw, r.Name, r.Namespace, r.App, r.Strategy, r.Phase, stepOf(r, -1), revOf(r.StableRevision), revOf(r.CanaryRevision))
				}
			})
		})}
	addOutputFlag(list, &out)

	get := &cobra.Command{Use: "get NAME", Short: "Show a Rollout: steps, revisions, analysis runs", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, args []string) error {
			ns, name, err := resolve(ctx, c, args[0])
			if err != nil {
				return err
			}
			d, err := c.GetRollout(ctx, runtime, appName, ns, name)
			if err != nil {
				return err
			}
			if out != outTable {
				return printData(a.stdout, out, rolloutGet{Rollout: d.Rollout, Steps: d.Steps, AnalysisRuns: d.AnalysisRuns}, nil)
			}
			_, err = io.WriteString(a.stdout, renderRollout(d))
			return err
		})}
	addOutputFlag(get, &out)

	// op is an operation command: it prints what it did, and the Rollout with -o.
	op := func(use, short, verb string, flags func(*cobra.Command) (full *bool, to *int64)) *cobra.Command {
		var full *bool
		var to *int64
		var opOut string
		c := &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(1)}
		c.RunE = run(func(ctx context.Context, cl *client.Client, args []string) error {
			ns, name, err := resolve(ctx, cl, args[0])
			if err != nil {
				return err
			}
			var f bool
			var t int64
			if full != nil {
				f = *full
			}
			if to != nil {
				if *to < 0 {
					return usageError("--to-revision %d: give a revision number from 'freshet rollout get %s', or 0 for the previous one", *to, args[0])
				}
				t = *to
			}
			opName := strings.Fields(use)[0]
			d, err := cl.RolloutOperation(ctx, runtime, appName, ns, name, opName, f, t)
			if err != nil {
				return err
			}
			if opOut != outTable {
				return printData(a.stdout, opOut, d, nil)
			}
			fmt.Fprintf(a.stdout, "Rollout %s/%s %s.\n", ns, name, verb)
			return nil
		})
		if flags != nil {
			full, to = flags(c)
		}
		addOutputFlag(c, &opOut)
		return c
	}
	promote := op("promote NAME [--full]", "Promote a paused Rollout to its next step (--full: skip every step)", "promoted", func(c *cobra.Command) (*bool, *int64) {
		return c.Flags().Bool("full", false, "skip the remaining steps, analyses and pauses"), nil
	})
	abort := op("abort NAME", "Abort an update: traffic and scale go back to the stable revision", "aborted", nil)
	retry := op("retry NAME", "Start an aborted update again from its first step", "retried", nil)
	restart := op("restart NAME", "Restart the Rollout's pods, one at a time (sets spec.restartAt)", "restarted", nil)
	undo := op("undo NAME [--to-revision N]", "Roll back to an earlier revision's pod template (default: the previous revision)", "rolled back", func(c *cobra.Command) (*bool, *int64) {
		return nil, c.Flags().Int64("to-revision", 0, "the revision to go back to (0: the previous one)")
	})
	pause := op("pause NAME", "Pause a Rollout (spec.paused)", "paused", nil)
	resume := op("resume NAME", "Resume a paused Rollout", "resumed", nil)

	var timeout time.Duration
	var untilDone bool
	watch := &cobra.Command{Use: "watch NAME [--timeout D] [--until-complete]",
		Short: "Watch a Rollout's steps live (in a terminal: redrawn; otherwise: each change printed)", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, args []string) error {
			ns, name, err := resolve(ctx, c, args[0])
			if err != nil {
				return err
			}
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			f, isFile := a.stdout.(*os.File)
			tty := isFile && term.IsTerminal(int(f.Fd()))
			return watchRollout(ctx, a.stdout, tty, untilDone, func(ctx context.Context) (client.RolloutDetail, error) {
				return c.GetRollout(ctx, runtime, appName, ns, name)
			})
		})}
	watch.Flags().DurationVar(&timeout, "timeout", 0, "stop watching after this long (0: until interrupted)")
	watch.Flags().BoolVar(&untilDone, "until-complete", false, "stop when the update is done: exit 0 when Healthy, 1 when Degraded")

	cmd.AddCommand(list, get, promote, abort, retry, restart, undo, pause, resume, watch)
	return cmd
}

// watchRollout reads the Rollout every second and shows it: redrawn in a terminal, else a line
// per change.
func watchRollout(ctx context.Context, w io.Writer, tty, untilDone bool, read func(context.Context) (client.RolloutDetail, error)) error {
	last := ""
	for {
		d, err := read(ctx)
		switch {
		case ctx.Err() != nil:
			return nil // interrupted or --timeout: watching ends
		case err != nil:
			return err
		}
		if tty {
			view := renderRollout(d)
			if view != last {
				fmt.Fprint(w, "\x1b[H\x1b[2J"+view) // home, clear screen, draw
				last = view
			}
		} else if line := rolloutLine(d); line != last {
			fmt.Fprintf(w, "%s %s\n", time.Now().Format("15:04:05"), line)
			last = line
		}
		if untilDone && !d.Aborted && d.Phase == "Healthy" && (d.CanaryRevision == nil) {
			return nil
		}
		if untilDone && d.Phase == "Degraded" {
			return exitError{code: 1, err: fmt.Errorf("rollout %s/%s is Degraded: %s", d.Namespace, d.Name, d.Message)}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(rolloutWatchPoll):
		}
	}
}

// rolloutLine is one line of a non-terminal watch: what changes as a Rollout goes on.
func rolloutLine(d client.RolloutDetail) string {
	s := fmt.Sprintf("%s/%s %s step %s", d.Namespace, d.Name, d.Phase, stepOf(d.Rollout, len(d.Steps)))
	if d.Weight != nil {
		s += fmt.Sprintf(" weight %d%%", *d.Weight)
	}
	s += fmt.Sprintf(" stable %s canary %s ready %d/%d", revOf(d.StableRevision), revOf(d.CanaryRevision), d.Ready, d.Replicas)
	if d.Message != "" {
		s += " — " + d.Message
	}
	return s
}

// renderRollout is the Argo Rollouts kubectl plugin's `get rollout` view, in Freshet's words.
func renderRollout(d client.RolloutDetail) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\n", d.Name)
	fmt.Fprintf(tw, "Namespace:\t%s\n", d.Namespace)
	if d.App != "" {
		fmt.Fprintf(tw, "Application:\t%s\n", d.App)
	}
	status := phaseIcon(d.Phase) + " " + orDash(d.Phase)
	if d.Message != "" {
		status += " (" + d.Message + ")"
	}
	fmt.Fprintf(tw, "Status:\t%s\n", status)
	fmt.Fprintf(tw, "Strategy:\t%s\n", d.Strategy)
	if d.Strategy == "canary" {
		fmt.Fprintf(tw, "  Step:\t%s\n", stepOf(d.Rollout, len(d.Steps)))
	}
	if d.Weight != nil {
		fmt.Fprintf(tw, "  Weight:\t%d%%\n", *d.Weight)
	}
	fmt.Fprintf(tw, "Replicas:\tDesired %d, Updated %d, Ready %d, Available %d\n", d.Replicas, d.Updated, d.Ready, d.Available)
	tw.Flush()
	if len(d.Steps) > 0 {
		b.WriteString("\nSTEPS\n")
		for _, s := range d.Steps {
			fmt.Fprintf(&b, "  %s %d. %s\n", stepIcon(s.Status), s.Index, stepText(s))
		}
	}
	if len(d.Revisions) > 0 {
		b.WriteString("\nREVISIONS\n")
		tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		row(tw, "  REVISION", "ROLE", "HASH", "READY", "IMAGES")
		for _, r := range d.Revisions {
			row(tw, "  "+strconv.FormatInt(r.Revision, 10), r.Role, r.PodTemplateHash, fmt.Sprintf("%d/%d", r.Ready, r.Replicas), strings.Join(r.Images, ","))
		}
		tw.Flush()
	}
	if len(d.AnalysisRuns) > 0 {
		b.WriteString("\nANALYSIS RUNS\n")
		for _, r := range d.AnalysisRuns {
			fmt.Fprintf(&b, "  %s %s %s", phaseIcon(r.Phase), r.Name, r.Phase)
			if r.Message != "" {
				fmt.Fprintf(&b, " (%s)", r.Message)
			}
			b.WriteString("\n")
			for _, m := range r.Metrics {
				var vals []string
				for _, x := range m.Measurements {
					vals = append(vals, orDash(x.Value))
				}
				fmt.Fprintf(&b, "      %s: %s, %d of %d successful, %d failed; measured %s\n", m.Name, m.Phase, m.Successful, m.Count, m.Failed, strings.Join(vals, " "))
			}
		}
	}
	return b.String()
}

func stepText(s client.RolloutStep) string {
	switch {
	case s.Type == "setWeight":
		return "setWeight: " + s.Value
	case s.Type == "pause" && s.Value == "":
		return "pause (until promoted)"
	case s.Value != "":
		return s.Type + ": " + s.Value
	}
	return s.Type
}

func stepIcon(status string) string {
	switch status {
	case "Succeeded":
		return "✔"
	case "Running":
		return "▶"
	case "Aborted":
		return "✖"
	}
	return " "
}

func phaseIcon(phase string) string {
	switch phase {
	case "Healthy", "Successful":
		return "✔"
	case "Progressing", "Running", "Pending":
		return "◌"
	case "Paused", "Inconclusive":
		return "॥"
	case "Degraded", "Failed", "Error":
		return "✖"
	}
	return "?"
}

// stepOf is "current/total" for a canary (total -1: the list has no step count), "-" else.
func stepOf(r client.Rollout, total int) string {
	if r.Step == nil {
		return "-"
	}
	if total < 0 {
		return strconv.Itoa(int(*r.Step))
	}
	return fmt.Sprintf("%d/%d", *r.Step, total)
}

func revOf(p *int64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatInt(*p, 10)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
