package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/client"
)

// cronWorkflowCommand is `freshet cron-workflow` (alias `cron`): `argo cron`'s operations on a
// runtime's CronWorkflows, through the control plane and the runtime's app-proxy.
func (a *app) cronWorkflowCommand() *cobra.Command {
	var runtime, namespace, out string
	cmd := &cobra.Command{
		Use:     "cron-workflow",
		Aliases: []string{"cron-workflows", "cron", "cronwf", "cwf"},
		Short:   "Create and operate a runtime's Argo CronWorkflows (scheduled Delivery Pipelines)",
		Long: "CronWorkflows are Argo Workflows' CronWorkflow objects: a Workflow run on a schedule by a hybrid\n" +
			"runtime's workflow controller. NAME is a CronWorkflow's name (NAMESPACE/NAME, or -n, when two\n" +
			"namespaces have one of that name).",
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&runtime, "runtime", envOr(EnvRuntime, DefaultRuntime), "the runtime (name or ID; env "+EnvRuntime+")")
	pf.StringVarP(&namespace, "namespace", "n", "", "the namespace (default: found by name; for create, lint and update, the manifest's, else default; update finds it by name)")

	run := func(f func(ctx context.Context, c *client.Client, args []string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			return appError(runtime, f(cmd.Context(), c, args))
		}
	}
	resolve := func(ctx context.Context, c *client.Client, arg string) (string, string, error) {
		return resolveNamespaced(arg, namespace, "cron workflow", "runtime "+runtime, "freshet cron-workflow list", func() ([]string, []string, error) {
			l, err := c.ListCronWorkflows(ctx, runtime, "")
			if err != nil {
				return nil, nil, err
			}
			var nss, names []string
			for _, w := range l.Items {
				nss, names = append(nss, w.Namespace), append(names, w.Name)
			}
			return nss, names, nil
		})
	}

	list := &cobra.Command{Use: "list", Short: "List the runtime's CronWorkflows", Args: cobra.NoArgs,
		RunE: run(func(ctx context.Context, c *client.Client, _ []string) error {
			l, err := c.ListCronWorkflows(ctx, runtime, namespace)
			if err != nil {
				return err
			}
			return printData(a.stdout, out, l.Items, func(tw *tabwriter.Writer) {
				row(tw, "NAME", "NAMESPACE", "AGE", "LAST RUN", "NEXT RUN", "SCHEDULES", "TIMEZONE", "SUSPENDED", "PHASE")
				for _, w := range l.Items {
					row(tw, w.Name, w.Namespace, ago(w.CreatedAt), sinceOrDash(w.LastScheduledTime), untilOrDash(w.NextScheduledTime),
						strings.Join(w.Schedules, ","), orDash(w.Timezone), strconv.FormatBool(w.Suspended), orDash(w.Phase))
				}
			})
		})}
	addOutputFlag(list, &out)

	get := &cobra.Command{Use: "get NAME", Short: "Show a CronWorkflow: its schedules, counts, runs and conditions", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, args []string) error {
			ns, name, err := resolve(ctx, c, args[0])
			if err != nil {
				return err
			}
			w, err := c.GetCronWorkflow(ctx, runtime, ns, name)
			if err != nil {
				return err
			}
			return printData(a.stdout, out, w, func(tw *tabwriter.Writer) { renderCronWorkflow(tw, w) })
		})}
	addOutputFlag(get, &out)

	var file string
	manifest := func() (client.CronWorkflowCreateRequest, error) {
		if file == "" {
			return client.CronWorkflowCreateRequest{}, usageError("give -f FILE (a CronWorkflow manifest, YAML or JSON; - for stdin)")
		}
		j, err := readManifest(file, a.stdin)
		return client.CronWorkflowCreateRequest{Namespace: namespace, CronWorkflow: j}, err
	}
	create := &cobra.Command{Use: "create -f FILE", Short: "Create a CronWorkflow from a manifest, checked first", Args: cobra.NoArgs,
		RunE: run(func(ctx context.Context, c *client.Client, _ []string) error {
			req, err := manifest()
			if err != nil {
				return err
			}
			w, err := c.CreateCronWorkflow(ctx, runtime, req)
			if err != nil {
				return err
			}
			if out != outTable {
				return printData(a.stdout, out, w, nil)
			}
			fmt.Fprintf(a.stdout, "CronWorkflow %s/%s created.\n", w.Namespace, w.Name)
			return nil
		})}
	create.Flags().StringVarP(&file, "file", "f", "", "the CronWorkflow manifest (YAML or JSON; - for stdin)")
	addOutputFlag(create, &out)

	lint := &cobra.Command{Use: "lint -f FILE", Short: "Check a CronWorkflow manifest as create would, creating nothing", Args: cobra.NoArgs,
		RunE: run(func(ctx context.Context, c *client.Client, _ []string) error {
			req, err := manifest()
			if err != nil {
				return err
			}
			w, err := c.LintCronWorkflow(ctx, runtime, req)
			if err != nil {
				return err
			}
			if out != outTable {
				return printData(a.stdout, out, w, nil)
			}
			fmt.Fprintf(a.stdout, "CronWorkflow %s/%s: no errors found.\n", w.Namespace, w.Name)
			return nil
		})}
	lint.Flags().StringVarP(&file, "file", "f", "", "the CronWorkflow manifest (YAML or JSON; - for stdin)")
	addOutputFlag(lint, &out)

	update := &cobra.Command{Use: "update -f FILE", Short: "Replace an existing CronWorkflow's spec with a manifest's, checked first (its status is kept)", Args: cobra.NoArgs,
		RunE: run(func(ctx context.Context, c *client.Client, _ []string) error {
			req, err := manifest()
			if err != nil {
				return err
			}
			var meta struct {
				Metadata struct{ Name, Namespace string } `json:"metadata"`
			}
			_ = json.Unmarshal(req.CronWorkflow, &meta)
			if meta.Metadata.Name == "" {
				return usageError("-f %s: the manifest names no CronWorkflow (metadata.name)", file)
			}
			ns, name := namespace, meta.Metadata.Name
			if ns == "" {
				ns = meta.Metadata.Namespace
			}
			if ns == "" {
				if ns, name, err = resolve(ctx, c, name); err != nil {
					return err
				}
			}
			w, err := c.UpdateCronWorkflow(ctx, runtime, ns, name, req)
			if err != nil {
				return err
			}
			if out != outTable {
				return printData(a.stdout, out, w, nil)
			}
			fmt.Fprintf(a.stdout, "CronWorkflow %s/%s updated.\n", w.Namespace, w.Name)
			return nil
		})}
	update.Flags().StringVarP(&file, "file", "f", "", "the CronWorkflow manifest (YAML or JSON; - for stdin); its metadata.name names the one to update")
	addOutputFlag(update, &out)

	del := &cobra.Command{Use: "delete NAME", Short: "Delete a CronWorkflow and its Workflows", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, args []string) error {
			ns, name, err := resolve(ctx, c, args[0])
			if err != nil {
				return err
			}
			if err := c.DeleteCronWorkflow(ctx, runtime, ns, name); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "CronWorkflow %s/%s deleted.\n", ns, name)
			return nil
		})}

	op := func(use, short, verb string) *cobra.Command {
		var opOut string
		c := &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(1)}
		c.RunE = run(func(ctx context.Context, cl *client.Client, args []string) error {
			ns, name, err := resolve(ctx, cl, args[0])
			if err != nil {
				return err
			}
			w, err := cl.CronWorkflowOperation(ctx, runtime, ns, name, strings.Fields(use)[0])
			if err != nil {
				return err
			}
			if opOut != outTable {
				return printData(a.stdout, opOut, w, nil)
			}
			fmt.Fprintf(a.stdout, "CronWorkflow %s/%s %s.\n", ns, name, verb)
			return nil
		})
		addOutputFlag(c, &opOut)
		return c
	}
	cmd.AddCommand(list, get, create, lint, update, del,
		op("suspend NAME", "Suspend a CronWorkflow: nothing is scheduled until it is resumed", "suspended"),
		op("resume NAME", "Resume a suspended CronWorkflow (not one its stopStrategy stopped)", "resumed"))
	return cmd
}

// renderCronWorkflow is `argo cron get`'s view.
func renderCronWorkflow(tw *tabwriter.Writer, w client.CronWorkflow) {
	row(tw, "Name:", w.Name)
	row(tw, "Namespace:", w.Namespace)
	row(tw, "Created:", w.CreatedAt.Local().Format(time.RFC3339))
	row(tw, "Schedules:", strings.Join(w.Schedules, ","))
	row(tw, "Timezone:", orDash(w.Timezone))
	row(tw, "Suspended:", strconv.FormatBool(w.Suspended))
	row(tw, "Phase:", orDash(w.Phase))
	if w.When != "" {
		row(tw, "When:", w.When)
	}
	if w.StopExpression != "" {
		row(tw, "StopStrategy:", w.StopExpression)
	}
	row(tw, "Succeeded:", strconv.FormatInt(w.Succeeded, 10))
	row(tw, "Failed:", strconv.FormatInt(w.Failed, 10))
	if w.ConcurrencyPolicy != "" {
		row(tw, "ConcurrencyPolicy:", w.ConcurrencyPolicy)
	}
	if w.StartingDeadlineSeconds != nil {
		row(tw, "StartingDeadlineSeconds:", strconv.FormatInt(*w.StartingDeadlineSeconds, 10))
	}
	if w.Template != "" {
		row(tw, "Template:", w.Template)
	}
	if w.LastScheduledTime != nil {
		row(tw, "LastScheduledTime:", w.LastScheduledTime.Local().Format(time.RFC3339))
	}
	if w.NextScheduledTime != nil {
		row(tw, "NextScheduledTime:", w.NextScheduledTime.Local().Format(time.RFC3339))
	}
	if len(w.Active) > 0 {
		row(tw, "Active Workflows:", strings.Join(w.Active, ", "))
	}
	for _, c := range w.Conditions {
		row(tw, "Condition:", c.Type+": "+c.Message)
	}
}

func sinceOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return time.Since(*t).Round(time.Second).String()
}

func untilOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return time.Until(*t).Round(time.Second).String()
}
