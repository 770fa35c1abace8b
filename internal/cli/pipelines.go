package cli

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/freshet-dev/freshet/client"
)

func (a *app) projectCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "project", Aliases: []string{"projects"}, Short: "Manage CI projects"}
	var out string
	printProjects := func(v any, ps []client.Project) error {
		return printData(a.stdout, out, v, func(tw *tabwriter.Writer) {
			row(tw, "ID", "NAME", "TAGS", "OWNER", "CREATED")
			for _, p := range ps {
				row(tw, p.ID, p.Name, strings.Join(p.Tags, ","), p.OwnerTeam, p.CreatedAt)
			}
		})
	}
	var projectTags []string
	var projectTeam, ownerFilter string
	create := &cobra.Command{Use: "create NAME [--tag T]… [--team TEAM]", Short: "Create a project", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			p, err := c.CreateOwnedProject(cmd.Context(), args[0], projectTeam, projectTags...)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Created project %s (%s).\n", p.Name, p.ID)
			return nil
		}}
	create.Flags().StringArrayVar(&projectTags, "tag", nil, "a tag attribute-based rules match the project by (repeatable)")
	create.Flags().StringVar(&projectTeam, "team", "", "the team (name or ID) that owns the project and its pipelines and builds")
	list := &cobra.Command{Use: "list", Short: "List projects", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			ps, err := listAll(cmd.Context(), 0, func(o client.ListOptions) (client.List[client.Project], error) {
				if ownerFilter != "" {
					return c.ListProjectsOwnedBy(cmd.Context(), ownerFilter, o)
				}
				return c.ListProjects(cmd.Context(), o)
			})
			if err != nil {
				return err
			}
			return printProjects(ps, ps)
		}}
	addOutputFlag(list, &out)
	list.Flags().StringVar(&ownerFilter, "owner", "", "only the projects this team (name or ID) owns")
	setOwner := &cobra.Command{Use: "set-owner NAME [TEAM]", Short: "Give a project (with its pipelines and builds) to a team; no TEAM: to none",
		Long: "Only an admin, or a member of both the team that owns the project and the new one who may update it, may change its owner.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			team := ""
			if len(args) == 2 {
				team = args[1]
			}
			p, err := c.SetProjectOwner(cmd.Context(), args[0], team)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Project %s is owned by %s.\n", p.Name, ownerOrNone(p.OwnerTeam))
			return nil
		}}
	get := getCommand(a, "get NAME", "Show a project", (*client.Client).GetProject,
		func(p client.Project) error { return printProjects(p, []client.Project{p}) })
	addOutputFlag(get, &out)
	del := a.actionCommand("delete NAME", "Delete a project with its pipelines and builds", func(ctx context.Context, c *client.Client, name string) (string, error) {
		return "Deleted project " + name + ".", c.DeleteProject(ctx, name)
	})
	cmd.AddCommand(create, list, get, setOwner, del)
	return cmd
}

func ownerOrNone(team string) string {
	if team == "" {
		return "no team"
	}
	return "team " + team
}

// parseKV reads K=V arguments into a map, naming the flag of a bad one.
func parseKV(flag string, kvs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError("--%s %q: use KEY=VALUE", flag, kv)
		}
		out[k] = v
	}
	return out, nil
}

func (a *app) pipelineCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "pipeline", Aliases: []string{"pipelines"}, Short: "Manage and run CI pipelines"}
	var file string
	var contexts, vars, secretVars, labels, triggers []string
	var specRepo, specPath string
	var cfg client.PipelineConfig
	create := &cobra.Command{
		Use:   "create PROJECT/NAME -f pipeline.yml [--context CTX]… [--var K=V]…",
		Short: "Create a pipeline (or replace it with --replace)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			project, name, ok := strings.Cut(args[0], "/")
			if !ok || project == "" || name == "" {
				return usageError("%q: name the pipeline PROJECT/NAME", args[0])
			}
			var spec []byte
			var err error
			switch {
			case file != "" && specRepo != "":
				return usageError("give -f or --spec-repo, not both")
			case file != "":
				if spec, err = readFile(a, file); err != nil {
					return err
				}
			case specRepo == "":
				return usageError("-f (the pipeline's codefresh.yml) or --spec-repo is required")
			}
			cfg.Contexts = contexts
			if cfg.RunnerLabels, err = parseKV("runner-label", labels); err != nil {
				return err
			}
			plain, err := parseKV("var", vars)
			if err != nil {
				return err
			}
			secret, err := parseKV("secret-var", secretVars)
			if err != nil {
				return err
			}
			for k, v := range plain {
				cfg.Variables = append(cfg.Variables, client.Variable{Key: k, Value: v})
			}
			for k, v := range secret {
				cfg.Variables = append(cfg.Variables, client.Variable{Key: k, Value: v, Encrypted: true})
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			req := client.PipelineRequest{Project: project, Name: name, Spec: string(spec), SpecRepo: specRepo, SpecPath: specPath, Config: cfg}
			replace, _ := cmd.Flags().GetBool("replace")
			var p client.Pipeline
			if replace {
				p, err = c.UpdatePipeline(cmd.Context(), args[0], req)
			} else {
				p, err = c.CreatePipeline(cmd.Context(), req)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Pipeline %s (%s) saved.\n", p.FullName, p.ID)
			return a.addTriggers(cmd.Context(), c, p.ID, triggers)
		},
	}
	fs := create.Flags()
	fs.StringVarP(&file, "file", "f", "", "the pipeline spec (codefresh.yml dialect); - for stdin")
	fs.StringVar(&specRepo, "spec-repo", "", "keep the spec in this git repository instead (read at each build's revision)")
	fs.StringVar(&specPath, "spec-path", "codefresh.yml", "with --spec-repo: the spec's path in the repository")
	fs.StringVar(&cfg.SpecContext, "spec-context", "", "with --spec-repo: a context with GIT_TOKEN (or GIT_USERNAME and GIT_PASSWORD)")
	fs.StringArrayVar(&contexts, "context", nil, "a context whose values become variables (repeatable)")
	fs.StringArrayVar(&vars, "var", nil, "a pipeline variable K=V (repeatable)")
	fs.StringArrayVar(&secretVars, "secret-var", nil, "an encrypted pipeline variable K=V, masked in logs (repeatable)")
	fs.StringArrayVar(&labels, "runner-label", nil, "run only on runners with this label K=V (repeatable)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 0, "builds of this pipeline at once (0: unlimited)")
	fs.IntVar(&cfg.BranchConcurrency, "branch-concurrency", 0, "builds of one branch at once (0: unlimited)")
	fs.BoolVar(&cfg.TerminateOlder, "terminate-older", false, "a new build of a branch terminates its older builds")
	fs.StringArrayVar(&cfg.Tags, "tag", nil, "a tag attribute-based rules match the pipeline and its builds by (repeatable)")
	fs.Bool("replace", false, "replace an existing pipeline's spec and settings")
	fs.StringArrayVar(&triggers, "trigger", nil, "add a trigger: 'type=git;provider=github;repo=OWNER/NAME;events=push.heads' or 'type=cron;expression=0 3 * * *;branch=main' (repeatable)")

	var out string
	printPipelines := func(v any, ps []client.Pipeline) error {
		return printData(a.stdout, out, v, func(tw *tabwriter.Writer) {
			row(tw, "ID", "NAME", "CONTEXTS", "UPDATED")
			for _, p := range ps {
				row(tw, p.ID, p.FullName, strings.Join(p.Config.Contexts, ","), p.UpdatedAt)
			}
		})
	}
	var project string
	list := &cobra.Command{Use: "list [--project P]", Short: "List pipelines", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			ps, err := listAll(cmd.Context(), 0, func(o client.ListOptions) (client.List[client.Pipeline], error) {
				return c.ListPipelines(cmd.Context(), project, o)
			})
			if err != nil {
				return err
			}
			return printPipelines(ps, ps)
		}}
	list.Flags().StringVar(&project, "project", "", "only this project's pipelines")
	addOutputFlag(list, &out)
	get := getCommand(a, "get PROJECT/NAME", "Show a pipeline (with -o yaml, its spec)", (*client.Client).GetPipeline,
		func(p client.Pipeline) error { return printPipelines(p, []client.Pipeline{p}) })
	addOutputFlag(get, &out)
	del := a.actionCommand("delete PROJECT/NAME", "Delete a pipeline with its builds", func(ctx context.Context, c *client.Client, name string) (string, error) {
		return "Deleted pipeline " + name + ".", c.DeletePipeline(ctx, name)
	})

	var run client.RunRequest
	var runVars []string
	var follow bool
	runCmd := &cobra.Command{
		Use:   "run PROJECT/NAME [--branch B] [--sha S] [--var K=V]… [--follow]",
		Short: "Run a pipeline; with --follow, stream its log and exit non-zero when it fails",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if run.Variables, err = parseKV("var", runVars); err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			b, err := c.RunPipeline(cmd.Context(), args[0], run)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "Build %s (%s) queued.\n", b.Name, b.ID)
			if !follow {
				fmt.Fprintln(a.stdout, b.ID)
				return nil
			}
			return a.followBuild(cmd.Context(), c, b.ID)
		},
	}
	rf := runCmd.Flags()
	rf.StringVar(&run.Branch, "branch", "", "branch (CF_BRANCH)")
	rf.StringVar(&run.SHA, "sha", "", "commit (CF_REVISION)")
	rf.StringVar(&run.Repo, "repo", "", "repository owner/name (CF_REPO_OWNER, CF_REPO_NAME)")
	rf.StringArrayVar(&runVars, "var", nil, "a variable K=V for this build (repeatable)")
	rf.BoolVarP(&follow, "follow", "F", false, "stream the log until the build ends; exit non-zero unless it succeeds")
	cmd.AddCommand(create, list, get, del, runCmd, a.triggerCommand(), a.pipelineLintCommand())
	return cmd
}

func readFile(a *app, name string) ([]byte, error) {
	if name == "-" {
		var b strings.Builder
		buf := make([]byte, 32<<10)
		for {
			n, err := a.stdin.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				return []byte(b.String()), nil
			}
		}
	}
	return os.ReadFile(name)
}

// followBuild streams a build's log; the exit code says how it ended.
func (a *app) followBuild(ctx context.Context, c *client.Client, id string) error {
	status := ""
	err := c.FollowLog(ctx, id, 0, func(ev client.LogEvent) error {
		if ev.Done {
			status = ev.Status
			return nil
		}
		_, err := a.stdout.Write(ev.Data)
		return err
	})
	if err != nil {
		return err
	}
	b, _ := c.GetBuild(ctx, id)
	fmt.Fprintf(a.stderr, "Build %s %s%s.\n", b.Name, status, reasonSuffix(b.Reason))
	if status != "success" {
		return exitError{code: 1, err: fmt.Errorf("build %s %s", id, status)}
	}
	return nil
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return ": " + r
}

func (a *app) buildCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "build", Aliases: []string{"builds"}, Short: "Inspect and control builds"}
	var out, pipeline, status, branch string
	var max int
	printBuilds := func(v any, bs []client.Build) error {
		return printData(a.stdout, out, v, func(tw *tabwriter.Writer) {
			row(tw, "ID", "NAME", "STATUS", "BRANCH", "TRIGGER", "CREATED", "DURATION")
			for _, b := range bs {
				row(tw, b.ID, b.Name, b.Status, b.Branch, b.Trigger, b.CreatedAt, duration(b))
			}
		})
	}
	list := &cobra.Command{Use: "list [--pipeline P] [--status S] [--branch B]", Short: "List builds, newest first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			bs, err := listAll(cmd.Context(), max, func(o client.ListOptions) (client.List[client.Build], error) {
				return c.ListBuilds(cmd.Context(), client.BuildFilter{ListOptions: o, Pipeline: pipeline, Status: status, Branch: branch})
			})
			if err != nil {
				return err
			}
			return printBuilds(bs, bs)
		}}
	list.Flags().StringVar(&pipeline, "pipeline", "", "only this pipeline's builds (PROJECT/NAME)")
	list.Flags().StringVar(&status, "status", "", "only builds with this status")
	list.Flags().StringVar(&branch, "branch", "", "only builds of this branch")
	list.Flags().IntVar(&max, "limit", 50, "list at most this many (0: all)")
	addOutputFlag(list, &out)
	get := &cobra.Command{Use: "get ID", Short: "Show a build, its steps and the images they pushed", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			b, err := c.GetBuild(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if out != outTable {
				return printData(a.stdout, out, b, nil)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "Build:\t%s (%s)\nStatus:\t%s%s\nBranch:\t%s\nRevision:\t%s\nTrigger:\t%s by %s\nCreated:\t%s\nDuration:\t%s\n\n",
				b.Name, b.ID, b.Status, reasonSuffix(b.Reason), b.Branch, b.SHA, b.Trigger, b.TriggeredBy, ts(b.CreatedAt), duration(b))
			row(tw, "STEP", "STAGE", "STATUS", "EXIT", "ATTEMPTS", "MESSAGE")
			for _, s := range b.Steps {
				row(tw, s.Name, s.Stage, s.Status, s.ExitCode, s.Attempts, s.Message)
			}
			if err := tw.Flush(); err != nil || len(b.Images) == 0 {
				return err
			}
			// The images the steps pushed: one line per tag (by digest when untagged).
			tw = tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw)
			row(tw, "IMAGE", "DIGEST", "SIZE", "STEP", "REGISTRY")
			for _, im := range b.Images {
				refs := make([]string, 0, len(im.Tags))
				for _, t := range im.Tags {
					refs = append(refs, im.Repository+":"+t)
				}
				if len(refs) == 0 {
					refs = append(refs, im.Repository)
				}
				for _, ref := range refs {
					row(tw, ref, shortDigest(im.Digest), byteSize(im.Size), im.Step, im.Registry)
				}
			}
			return tw.Flush()
		}}
	addOutputFlag(get, &out)
	var followLog bool
	logs := &cobra.Command{Use: "logs ID [-f]", Short: "Print a build's log; -f follows it live", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if followLog {
				return a.followBuild(cmd.Context(), c, args[0])
			}
			data, err := c.BuildLog(cmd.Context(), args[0], 0)
			if err != nil {
				return err
			}
			_, err = a.stdout.Write(data)
			return err
		}}
	logs.Flags().BoolVarP(&followLog, "follow", "f", false, "follow the log until the build ends")
	simple := func(use, short, done string, f func(ctx context.Context, c *client.Client, id string) error) *cobra.Command {
		return a.actionCommand(use+" ID", short, func(ctx context.Context, c *client.Client, id string) (string, error) {
			return "Build " + id + " " + done + ".", f(ctx, c, id)
		})
	}
	cancel := simple("cancel", "Terminate a build (the running step's processes are killed)", "is being terminated", func(ctx context.Context, c *client.Client, id string) error {
		return c.CancelBuild(ctx, id)
	})
	approve := simple("approve", "Approve a build waiting at a pending-approval step", "approved", func(ctx context.Context, c *client.Client, id string) error {
		return c.ApproveBuild(ctx, id, true)
	})
	deny := simple("deny", "Deny a build waiting at a pending-approval step", "denied", func(ctx context.Context, c *client.Client, id string) error {
		return c.ApproveBuild(ctx, id, false)
	})
	var fromFailed bool
	restart := &cobra.Command{Use: "restart ID [--from-failed]", Short: "Run a build again (from the failed step with --from-failed)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			b, err := c.RestartBuild(cmd.Context(), args[0], fromFailed)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Build %s (%s) queued.\n", b.Name, b.ID)
			return nil
		}}
	restart.Flags().BoolVar(&fromFailed, "from-failed", false, "skip the steps that succeeded")
	cmd.AddCommand(list, get, logs, cancel, restart, approve, deny)
	return cmd
}

// shortDigest is a digest as images are usually shown: the algorithm and 12 hex digits.
func shortDigest(d string) string {
	alg, hex, ok := strings.Cut(d, ":")
	if !ok || len(hex) <= 12 {
		return d
	}
	return alg + ":" + hex[:12]
}

// byteSize is n bytes in the largest unit that keeps it ≥ 1 (powers of 1024, as registries and
// docker count image sizes).
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n)/unit, 0
	for f >= unit && i < 4 {
		f, i = f/unit, i+1
	}
	return fmt.Sprintf("%.1f %ciB", f, "KMGTP"[i])
}

func duration(b client.Build) string {
	if b.StartedAt == nil {
		return "-"
	}
	end := time.Now()
	if b.FinishedAt != nil {
		end = *b.FinishedAt
	}
	return end.Sub(*b.StartedAt).Round(100 * time.Millisecond).String()
}

func (a *app) contextCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "context", Aliases: []string{"contexts"}, Short: "Manage shared configuration, secrets and container registries"}
	var typ, file, out string
	var kvs []string
	var decrypt bool
	var reg registryFlags
	values := func() (map[string]string, error) {
		vals, err := parseKV("kv", kvs)
		if err != nil {
			return nil, err
		}
		if file != "" {
			data, err := readFile(a, file)
			if err != nil {
				return nil, err
			}
			var fromFile map[string]string
			if err := yaml.Unmarshal(data, &fromFile); err != nil {
				return nil, fmt.Errorf("%s: %w (want a YAML mapping of KEY: value)", file, err)
			}
			for k, v := range fromFile {
				if _, set := vals[k]; !set {
					vals[k] = v
				}
			}
		}
		return vals, nil
	}
	create := &cobra.Command{
		Use: "create NAME --type config|secret --kv K=V… [-f file.yaml]\n" +
			"  freshet context create registry NAME --url URL [--username U] [--password-stdin | --password P] [--default] [--ca-file FILE]\n" +
			"  freshet context create git NAME --provider github|gitlab|gitea|bitbucket [--url API_URL] [--username U] [--password-stdin | --password TOKEN]",
		Short: "Create a context: configuration or secrets (--type), a container registry, or a git provider",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if len(args) == 2 {
				if args[0] != "registry" && args[0] != "git" {
					return usageError("create %s %s: give NAME, registry NAME for a registry context or git NAME for a git context", args[0], args[1])
				}
				name, typ = args[1], args[0]
			}
			if typ == "git" {
				if len(kvs) > 0 || file != "" {
					return usageError("a git context has no values: give --provider, --url, --username and --password-stdin instead of --kv or -f")
				}
				return a.createGit(cmd, &reg, name)
			}
			if typ != "registry" && cmd.Flags().Changed("provider") {
				return usageError("--provider: only for git contexts (freshet context create git NAME --provider …)")
			}
			if typ == "registry" {
				if len(kvs) > 0 || file != "" {
					return usageError("a registry context has no values: give --url, --username and --password instead of --kv or -f")
				}
				return a.createRegistry(cmd, &reg, name)
			}
			if set := reg.changed(cmd.Flags()); len(set) > 0 {
				return usageError("%s: only for registry contexts (freshet context create registry NAME --url URL …)", strings.Join(set, ", "))
			}
			vals, err := values()
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			ctxv, err := c.CreateContext(cmd.Context(), client.ContextRequest{Name: name, Type: typ, Values: vals})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Created %s context %s with %d keys.\n", ctxv.Type, ctxv.Name, len(ctxv.Values))
			return nil
		}}
	create.Flags().StringVar(&typ, "type", "config", "config, secret, kubernetes or helm-repository (secret values are encrypted and masked); registry and git are the same as create registry|git NAME")
	create.Flags().StringArrayVar(&kvs, "kv", nil, "a value K=V (repeatable)")
	create.Flags().StringVarP(&file, "file", "f", "", "a YAML mapping of KEY: value")
	reg.BindFlags(create.Flags())
	update := &cobra.Command{
		Use: "update NAME --kv K=V… [-f file.yaml]\n" +
			"  freshet context update NAME [--url URL] [--username U] [--password-stdin | --password P] [--default[=false]] [--ca-file FILE]\n" +
			"  freshet context update NAME [--provider P] [--url API_URL] [--username U] [--password-stdin | --password TOKEN]",
		Short: "Replace a context's values, or change a registry or git context (the password or token is kept unless the URL changes)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			if set := reg.changed(cmd.Flags()); len(set) > 0 || cmd.Flags().Changed("provider") {
				if len(kvs) > 0 || file != "" {
					return usageError("%s with --kv or -f: a registry or git context has no values, other contexts no registry", strings.Join(set, ", "))
				}
				cur, err := c.GetContext(cmd.Context(), args[0], false)
				if err != nil {
					return err
				}
				if g := cur.Git; g != nil {
					// The token comes back masked: sent back so, the server keeps the stored one.
					if err := reg.applyGit(a, cmd.Flags(), g); err != nil {
						return err
					}
					updated, err := c.UpdateContext(cmd.Context(), args[0], client.ContextRequest{Git: g})
					if err != nil {
						return err
					}
					fmt.Fprintf(a.stdout, "Updated git context %s: %s.\n", args[0], gitSummary(updated.Git))
					return nil
				}
				if cmd.Flags().Changed("provider") {
					return usageError("--provider: context %s is a %s context; it is only for git contexts", args[0], cur.Type)
				}
				if cur.Registry == nil {
					return usageError("%s: context %s is a %s context; these flags are only for registry contexts", strings.Join(set, ", "), args[0], cur.Type)
				}
				// The password comes back masked: sent back so, the server keeps the stored one.
				r := *cur.Registry
				if err := reg.apply(a, cmd.Flags(), &r); err != nil {
					return err
				}
				updated, err := c.UpdateContext(cmd.Context(), args[0], client.ContextRequest{Registry: &r})
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "Updated registry context %s: %s.\n", args[0], registrySummary(updated.Registry))
				return nil
			}
			vals, err := values()
			if err != nil {
				return err
			}
			if _, err := c.UpdateContext(cmd.Context(), args[0], client.ContextRequest{Values: vals}); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Updated context %s.\n", args[0])
			return nil
		}}
	update.Flags().StringArrayVar(&kvs, "kv", nil, "a value K=V (repeatable)")
	update.Flags().StringVarP(&file, "file", "f", "", "a YAML mapping of KEY: value")
	reg.BindFlags(update.Flags())
	printContexts := func(v any, cs []client.Context) error {
		return printData(a.stdout, out, v, func(tw *tabwriter.Writer) {
			row(tw, "NAME", "TYPE", "KEYS", "UPDATED")
			for _, c := range cs {
				if c.Registry != nil {
					row(tw, c.Name, c.Type, registrySummary(c.Registry), c.UpdatedAt)
					continue
				}
				if c.Git != nil {
					row(tw, c.Name, c.Type, gitSummary(c.Git), c.UpdatedAt)
					continue
				}
				keys := make([]string, 0, len(c.Values))
				for k := range c.Values {
					keys = append(keys, k)
				}
				row(tw, c.Name, c.Type, strings.Join(sorted(keys), ","), c.UpdatedAt)
			}
		})
	}
	list := &cobra.Command{Use: "list", Short: "List contexts (secret values and registry passwords masked)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			l, err := c.ListContexts(cmd.Context())
			if err != nil {
				return err
			}
			return printContexts(l.Items, l.Items)
		}}
	addOutputFlag(list, &out)
	get := &cobra.Command{Use: "get NAME [--decrypt]", Short: "Show a context; --decrypt shows secret values and a registry's password (admins; audited)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			ctxv, err := c.GetContext(cmd.Context(), args[0], decrypt)
			if err != nil {
				return err
			}
			if out != outTable {
				return printData(a.stdout, out, ctxv, nil)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			row(tw, "KEY", "VALUE")
			if r := ctxv.Registry; r != nil {
				row(tw, "url", r.URL)
				row(tw, "username", r.Username)
				row(tw, "password", r.Password)
				row(tw, "ca", caSummary(r.CA))
				row(tw, "default", r.Default)
				return tw.Flush()
			}
			if g := ctxv.Git; g != nil {
				row(tw, "provider", g.Provider)
				row(tw, "url", g.URL)
				row(tw, "username", g.Username)
				row(tw, "token", g.Token)
				return tw.Flush()
			}
			keys := make([]string, 0, len(ctxv.Values))
			for k := range ctxv.Values {
				keys = append(keys, k)
			}
			for _, k := range sorted(keys) {
				row(tw, k, ctxv.Values[k])
			}
			return tw.Flush()
		}}
	get.Flags().BoolVar(&decrypt, "decrypt", false, "show secret values in plain text")
	addOutputFlag(get, &out)
	del := a.actionCommand("delete NAME", "Delete a context", func(ctx context.Context, c *client.Client, name string) (string, error) {
		return "Deleted context " + name + ".", c.DeleteContext(ctx, name)
	})
	cmd.AddCommand(create, update, list, get, del)
	return cmd
}

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}
