package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/client"
)

// workflowWaitPoll is how often `freshet workflow submit --wait` reads the Workflow.
const workflowWaitPoll = time.Second

// maxManifestBytes bounds a manifest file the CLI reads.
const maxManifestBytes = 1 << 20

func (a *app) workflowCommand() *cobra.Command {
	var runtime, namespace, out string
	cmd := &cobra.Command{
		Use:     "workflow",
		Aliases: []string{"workflows", "wf"},
		Short:   "Submit and operate a runtime's Argo Workflows (Delivery Pipelines)",
		Long: "Workflows are Argo Workflows' Workflow objects, run by a hybrid runtime's workflow controller and\n" +
			"reached through the control plane. NAME is a Workflow's name (NAMESPACE/NAME, or -n, when two\n" +
			"namespaces have one of that name).",
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&runtime, "runtime", envOr(EnvRuntime, DefaultRuntime), "the runtime (name or ID; env "+EnvRuntime+")")
	pf.StringVarP(&namespace, "namespace", "n", "", "the namespace (default: found by name; for submit, the manifest's, else default)")

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
		return resolveNamespaced(arg, namespace, "workflow", "runtime "+runtime, "freshet workflow list", func() ([]string, []string, error) {
			l, err := c.ListWorkflows(ctx, runtime, "")
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

	var file, from, entrypoint, generateName string
	var params []string
	var wait bool
	submit := &cobra.Command{Use: "submit (-f FILE | --from workflowtemplate/NAME) [-p KEY=VALUE]... [--wait]",
		Short: "Submit a Workflow from a manifest, or from a WorkflowTemplate or ClusterWorkflowTemplate", Args: cobra.NoArgs,
		RunE: run(func(ctx context.Context, c *client.Client, _ []string) error {
			if (file == "") == (from == "") {
				return usageError("give -f FILE (a Workflow manifest) or --from workflowtemplate/NAME, not both")
			}
			req := client.WorkflowSubmitRequest{Namespace: namespace, From: from, Parameters: params, Entrypoint: entrypoint, GenerateName: generateName}
			if file != "" {
				j, err := readManifest(file, a.stdin)
				if err != nil {
					return err
				}
				req.Workflow = j
			}
			d, err := c.SubmitWorkflow(ctx, runtime, req)
			if err != nil {
				return err
			}
			if wait {
				if d, err = waitWorkflow(ctx, c, runtime, d); err != nil {
					return err
				}
			}
			if out != outTable {
				if err := printData(a.stdout, out, d, nil); err != nil {
					return err
				}
			} else if wait {
				fmt.Fprint(a.stdout, renderWorkflow(d))
			} else {
				fmt.Fprintf(a.stdout, "Workflow %s/%s submitted.\n", d.Namespace, d.Name)
			}
			if wait && d.Phase != "Succeeded" {
				return exitError{code: 1, err: fmt.Errorf("workflow %s/%s %s: %s", d.Namespace, d.Name, d.Phase, d.Message)}
			}
			return nil
		})}
	sf := submit.Flags()
	sf.StringVarP(&file, "file", "f", "", "the Workflow manifest (YAML or JSON; - for stdin)")
	sf.StringVar(&from, "from", "", "workflowtemplate/NAME, clusterworkflowtemplate/NAME or cronworkflow/NAME")
	sf.StringArrayVarP(&params, "parameter", "p", nil, "an argument KEY=VALUE (repeatable)")
	sf.StringVar(&entrypoint, "entrypoint", "", "override spec.entrypoint")
	sf.StringVar(&generateName, "generate-name", "", "with --from: the new Workflow's name prefix (default: the template's name and '-')")
	sf.BoolVar(&wait, "wait", false, "wait until the workflow has finished; exit 1 unless it Succeeded")
	addOutputFlag(submit, &out)

	list := &cobra.Command{Use: "list", Short: "List the runtime's Workflows, newest first", Args: cobra.NoArgs,
		RunE: run(func(ctx context.Context, c *client.Client, _ []string) error {
			l, err := c.ListWorkflows(ctx, runtime, namespace)
			if err != nil {
				return err
			}
			return printData(a.stdout, out, l.Items, func(tw *tabwriter.Writer) {
				row(tw, "NAME", "NAMESPACE", "STATUS", "AGE", "DURATION", "PROGRESS", "MESSAGE")
				for _, w := range l.Items {
					row(tw, w.Name, w.Namespace, w.Phase, ago(w.CreatedAt), spanOf(w.StartedAt, w.FinishedAt), orDash(w.Progress), w.Message)
				}
			})
		})}
	addOutputFlag(list, &out)

	get := &cobra.Command{Use: "get NAME", Short: "Show a Workflow and its node tree", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, args []string) error {
			ns, name, err := resolve(ctx, c, args[0])
			if err != nil {
				return err
			}
			d, err := c.GetWorkflow(ctx, runtime, ns, name)
			if err != nil {
				return err
			}
			if out != outTable {
				return printData(a.stdout, out, d, nil)
			}
			_, err = io.WriteString(a.stdout, renderWorkflow(d))
			return err
		})}
	addOutputFlag(get, &out)

	var node string
	var follow bool
	logs := &cobra.Command{Use: "logs NAME [--node N] [-f]", Short: "Print a Workflow's pod logs (NODE: line), live with -f", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, args []string) error {
			ns, name, err := resolve(ctx, c, args[0])
			if err != nil {
				return err
			}
			return c.WorkflowLogs(ctx, runtime, ns, name, node, follow, a.stdout)
		})}
	logs.Flags().StringVar(&node, "node", "", "only this node's log (its ID, name or display name)")
	logs.Flags().BoolVarP(&follow, "follow", "f", false, "stream new lines until the workflow has finished")

	op := func(use, short, verb string) *cobra.Command {
		var opOut string
		c := &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(1)}
		c.RunE = run(func(ctx context.Context, cl *client.Client, args []string) error {
			ns, name, err := resolve(ctx, cl, args[0])
			if err != nil {
				return err
			}
			opName := strings.Fields(use)[0]
			d, err := cl.WorkflowOperation(ctx, runtime, ns, name, opName)
			if err != nil {
				return err
			}
			if opOut != outTable {
				return printData(a.stdout, opOut, d, nil)
			}
			if opName == "resubmit" {
				fmt.Fprintf(a.stdout, "Workflow %s/%s resubmitted as %s.\n", ns, name, d.Name)
				return nil
			}
			fmt.Fprintf(a.stdout, "Workflow %s/%s %s.\n", ns, name, verb)
			return nil
		})
		addOutputFlag(c, &opOut)
		return c
	}
	cmd.AddCommand(submit, list, get, logs,
		op("terminate NAME", "Terminate a running Workflow: its pods are deleted, the exit handler does not run", "terminated"),
		op("stop NAME", "Stop a running Workflow: its pods are deleted, the exit handler runs", "stopped"),
		op("retry NAME", "Run a Failed or Errored Workflow again from its failed nodes", "retried"),
		op("resubmit NAME", "Submit a new Workflow with this one's spec", "resubmitted"),
		op("suspend NAME", "Hold a running Workflow: no new node starts", "suspended"),
		a.workflowResumeCommand(&runtime, resolve))
	return cmd
}

// workflowResumeCommand is `freshet workflow resume NAME [--node N] [-p NAME=VALUE]… [--message M]`:
// an approval gate's answer (Argo's `argo node set` and `argo resume` in one).
func (a *app) workflowResumeCommand(runtime *string, resolve func(context.Context, *client.Client, string) (string, string, error)) *cobra.Command {
	var node, message, out string
	var params []string
	c := &cobra.Command{Use: "resume NAME [--node N] [-p NAME=VALUE]...",
		Short: "Resume a suspended Workflow and its waiting suspend nodes (or one, --node), supplying their output parameters",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := client.WorkflowResumeRequest{Node: node, Message: message}
			for i, p := range params {
				k, v, ok := strings.Cut(p, "=")
				if !ok || k == "" {
					return fmt.Errorf("--parameter %q (the %d.): give NAME=VALUE", p, i+1)
				}
				if req.Parameters == nil {
					req.Parameters = map[string]string{}
				}
				req.Parameters[k] = v
			}
			cl, err := a.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			err = func() error {
				ns, name, err := resolve(ctx, cl, args[0])
				if err != nil {
					return err
				}
				d, err := cl.ResumeWorkflow(ctx, *runtime, ns, name, req)
				if err != nil {
					return err
				}
				if out != outTable {
					return printData(a.stdout, out, d, nil)
				}
				fmt.Fprintf(a.stdout, "Workflow %s/%s resumed.\n", ns, name)
				return nil
			}()
			return appError(*runtime, err)
		}}
	c.Flags().StringVar(&node, "node", "", "resume only this suspend node (its display name, e.g. approve)")
	c.Flags().StringArrayVarP(&params, "parameter", "p", nil, "a value of the node's output parameters with valueFrom.supplied (NAME=VALUE, repeatable)")
	c.Flags().StringVar(&message, "message", "", "the resumed node's message")
	addOutputFlag(c, &out)
	return c
}

func (a *app) workflowTemplateCommand() *cobra.Command {
	var runtime, namespace, out string
	var cluster bool
	cmd := &cobra.Command{
		Use:     "workflow-template",
		Aliases: []string{"workflow-templates", "wftmpl"},
		Short:   "List and show a runtime's WorkflowTemplates and ClusterWorkflowTemplates",
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&runtime, "runtime", envOr(EnvRuntime, DefaultRuntime), "the runtime (name or ID; env "+EnvRuntime+")")
	pf.StringVarP(&namespace, "namespace", "n", "", "the namespace (default: every namespace; for get, found by name)")
	run := func(f func(ctx context.Context, c *client.Client, args []string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			return appError(runtime, f(cmd.Context(), c, args))
		}
	}
	list := &cobra.Command{Use: "list", Short: "List the templates (ClusterWorkflowTemplates first)", Args: cobra.NoArgs,
		RunE: run(func(ctx context.Context, c *client.Client, _ []string) error {
			l, err := c.ListWorkflowTemplates(ctx, runtime, namespace)
			if err != nil {
				return err
			}
			return printData(a.stdout, out, l.Items, func(tw *tabwriter.Writer) {
				row(tw, "NAME", "NAMESPACE", "KIND", "ENTRYPOINT", "PARAMETERS")
				for _, t := range l.Items {
					var ps []string
					for _, p := range t.Parameters {
						ps = append(ps, p.Name)
					}
					row(tw, t.Name, orDash(t.Namespace), t.Kind, orDash(t.Entrypoint), orDash(strings.Join(ps, ",")))
				}
			})
		})}
	addOutputFlag(list, &out)
	get := &cobra.Command{Use: "get NAME", Short: "Show a template: its parameters and templates", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, args []string) error {
			ns, name := namespace, args[0]
			if n, rest, ok := strings.Cut(args[0], "/"); ok {
				ns, name = n, rest
			}
			if ns == "" && !cluster {
				l, err := c.ListWorkflowTemplates(ctx, runtime, "")
				if err != nil {
					return err
				}
				var found []client.WorkflowTemplate
				for _, t := range l.Items {
					if t.Name == name {
						found = append(found, t)
					}
				}
				switch len(found) {
				case 0:
					return exitError{code: 1, err: fmt.Errorf("no workflow template %q in runtime %s ('freshet workflow-template list' shows them)", name, runtime)}
				case 1:
					ns, cluster = found[0].Namespace, found[0].Namespace == ""
				default:
					return usageError("workflow template %q is in several namespaces (or cluster-wide): give NAMESPACE/NAME, -n or --cluster", name)
				}
			}
			t, err := c.GetWorkflowTemplate(ctx, runtime, ns, name, cluster)
			if err != nil {
				return err
			}
			return printData(a.stdout, out, t, func(tw *tabwriter.Writer) {
				row(tw, "Name:", t.Name)
				row(tw, "Namespace:", orDash(t.Namespace))
				row(tw, "Kind:", t.Kind)
				row(tw, "Entrypoint:", orDash(t.Entrypoint))
				row(tw, "Templates:", strings.Join(t.Templates, ", "))
				for _, p := range t.Parameters {
					v := "(required)"
					if p.Value != nil {
						v = *p.Value
					}
					row(tw, "Parameter:", p.Name+"="+v)
				}
			})
		})}
	get.Flags().BoolVar(&cluster, "cluster", false, "a ClusterWorkflowTemplate")
	addOutputFlag(get, &out)
	cmd.AddCommand(list, get)
	return cmd
}

// readManifest reads a YAML or JSON manifest (file "-": in) and returns it as JSON.
func readManifest(file string, in io.Reader) ([]byte, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(io.LimitReader(in, maxManifestBytes+1))
	} else {
		var f *os.File
		if f, err = os.Open(file); err == nil {
			data, err = io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
			f.Close()
		}
	}
	if err != nil {
		return nil, usageError("-f %s: %v", file, err)
	}
	if len(data) > maxManifestBytes {
		return nil, usageError("-f %s: larger than 1 MiB", file)
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, usageError("-f %s: not YAML or JSON: %v", file, err)
	}
	return j, nil
}

// waitWorkflow reads the Workflow until it has finished.
func waitWorkflow(ctx context.Context, c *client.Client, runtime string, d client.WorkflowDetail) (client.WorkflowDetail, error) {
	for {
		switch d.Phase {
		case "Succeeded", "Failed", "Error":
			return d, nil
		}
		select {
		case <-ctx.Done():
			return d, ctx.Err()
		case <-time.After(workflowWaitPoll):
		}
		var err error
		if d, err = c.GetWorkflow(ctx, runtime, d.Namespace, d.Name); err != nil {
			return d, err
		}
	}
}

func spanOf(start, end *time.Time) string {
	if start == nil {
		return "-"
	}
	e := time.Now()
	if end != nil {
		e = *end
	}
	return e.Sub(*start).Round(time.Second).String()
}

func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return time.Since(t).Round(time.Second).String()
}

// renderWorkflow is `argo get`'s view: the workflow, then its node tree.
func renderWorkflow(d client.WorkflowDetail) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\n", d.Name)
	fmt.Fprintf(tw, "Namespace:\t%s\n", d.Namespace)
	status := phaseIcon(d.Phase) + " " + d.Phase
	if d.Message != "" {
		status += " (" + d.Message + ")"
	}
	fmt.Fprintf(tw, "Status:\t%s\n", status)
	if d.Template != "" {
		fmt.Fprintf(tw, "Template:\t%s\n", d.Template)
	}
	if d.StartedAt != nil {
		fmt.Fprintf(tw, "Started:\t%s\n", d.StartedAt.Local().Format(time.RFC3339))
	}
	if d.FinishedAt != nil {
		fmt.Fprintf(tw, "Finished:\t%s\n", d.FinishedAt.Local().Format(time.RFC3339))
	}
	fmt.Fprintf(tw, "Duration:\t%s\n", spanOf(d.StartedAt, d.FinishedAt))
	if d.Progress != "" {
		fmt.Fprintf(tw, "Progress:\t%s\n", d.Progress)
	}
	for _, p := range d.Parameters {
		fmt.Fprintf(tw, "Parameter:\t%s=%s\n", p.Name, p.Value)
	}
	tw.Flush()
	if len(d.Nodes) == 0 {
		return b.String()
	}
	byID := map[string]client.WorkflowNode{}
	child := map[string]bool{}
	for _, n := range d.Nodes {
		byID[n.ID] = n
		for _, c := range n.Children {
			child[c] = true
		}
	}
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	row(tw, "STEP", "TEMPLATE", "PODNAME", "DURATION", "MESSAGE")
	seen := map[string]bool{}
	var walk func(id, indent string)
	walk = func(id, indent string) {
		n, ok := byID[id]
		if !ok || seen[id] {
			return
		}
		seen[id] = true
		row(tw, indent+nodeIcon(n.Phase)+" "+n.DisplayName, orDash(n.TemplateName), orDash(n.PodName), spanOf(n.StartedAt, n.FinishedAt), n.Message)
		for _, c := range n.Children {
			walk(c, indent+"  ")
		}
	}
	for _, n := range d.Nodes {
		if !child[n.ID] {
			walk(n.ID, "")
		}
	}
	tw.Flush()
	renderGates(&b, d)
	return b.String()
}

// renderGates lists what each approval gate waiting in d asks (its supplied parameters) and
// the command that answers it.
func renderGates(b *strings.Builder, d client.WorkflowDetail) {
	for _, n := range d.Nodes {
		if len(n.Supplied) == 0 {
			continue
		}
		fmt.Fprintf(b, "\nWaiting for approval at %s:\n", n.DisplayName)
		tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
		cmd := "freshet workflow resume " + d.Name + " --node " + n.DisplayName
		for _, p := range n.Supplied {
			var about []string
			if len(p.Enum) > 0 {
				about = append(about, "one of "+strings.Join(p.Enum, ", "))
			}
			if p.Default != nil {
				about = append(about, fmt.Sprintf("default %q", *p.Default))
			} else {
				about = append(about, "required")
				cmd += " -p " + p.Name + "=VALUE"
			}
			if p.Description != "" {
				about = append(about, p.Description)
			}
			fmt.Fprintf(tw, "  %s\t%s\n", p.Name, strings.Join(about, "; "))
		}
		tw.Flush()
		fmt.Fprintf(b, "  answer: %s\n", cmd)
	}
}

func nodeIcon(phase string) string {
	switch phase {
	case "Succeeded":
		return "✔"
	case "Skipped", "Omitted":
		return "○"
	}
	return phaseIcon(phase)
}

// resolveNamespaced finds the namespace of the object arg names: NAMESPACE/NAME as given (it
// must agree with -n), NAME in -n's namespace, or else the one namespace where list finds an
// object of that name. kind names the objects and where the place listed ("runtime r1"), in
// the messages; listCmd is the command that lists them.
func resolveNamespaced(arg, namespace, kind, where, listCmd string, list func() (namespaces []string, names []string, err error)) (string, string, error) {
	if ns, name, ok := strings.Cut(arg, "/"); ok {
		if namespace != "" && namespace != ns {
			return "", "", usageError("%s names namespace %s, -n %s another", arg, ns, namespace)
		}
		return ns, name, nil
	}
	if namespace != "" {
		return namespace, arg, nil
	}
	nss, names, err := list()
	if err != nil {
		return "", "", err
	}
	var found []string
	for i, n := range names {
		if n == arg {
			found = append(found, nss[i])
		}
	}
	switch len(found) {
	case 0:
		return "", "", exitError{code: 1, err: fmt.Errorf("no %s %q in %s ('%s' shows them)", kind, arg, where, listCmd)}
	case 1:
		return found[0], arg, nil
	}
	return "", "", usageError("%s %q is in namespaces %s: give NAMESPACE/NAME or -n", kind, arg, strings.Join(found, ", "))
}
