package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/freshet-dev/freshet/client"
)

// EnvRuntime selects the runtime `freshet app` talks to (the --runtime default).
const EnvRuntime = "FRESHET_RUNTIME"

// DefaultRuntime is the runtime `freshet up` runs in process.
const DefaultRuntime = "local"

// Defaults of `freshet app wait`.
const (
	DefaultAppWaitTimeout = 5 * time.Minute
	appWaitPoll           = time.Second
)

// Argo CD Application group/version and kind, for manifests built from flags.
const (
	appAPIVersion = "argoproj.io/v1alpha1"
	appKind       = "Application"
)

// appCreateOptions builds an Application from flags (`freshet app create NAME --repo …`).
type appCreateOptions struct {
	Repo          string
	Path          string
	Revision      string
	DestServer    string
	DestName      string
	DestNamespace string
	Project       string
	SyncPolicy    string
	AutoPrune     bool
	SelfHeal      bool
	SyncOptions   []string
}

// appSpecFlags are the flags of appCreateOptions: none of them may be combined with -f.
var appSpecFlags = []string{"repo", "path", "revision", "dest-server", "dest-name", "dest-namespace", "project", "sync-policy", "auto-prune", "self-heal", "sync-option"}

// BindFlags registers the options' flags.
func (o *appCreateOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Repo, "repo", "", "git repository URL of the manifests")
	fs.StringVar(&o.Path, "path", "", "directory of the manifests in the repository")
	fs.StringVar(&o.Revision, "revision", "", "branch, tag or commit to deploy (default: the repository's HEAD)")
	fs.StringVar(&o.DestServer, "dest-server", "", "API server URL of the destination cluster (https://kubernetes.default.svc: the runtime's own)")
	fs.StringVar(&o.DestName, "dest-name", "", "name of the destination cluster, instead of --dest-server")
	fs.StringVar(&o.DestNamespace, "dest-namespace", "", "namespace for the app's namespaced objects that set none")
	fs.StringVar(&o.Project, "project", "default", "the app's project")
	fs.StringVar(&o.SyncPolicy, "sync-policy", "manual", "manual, or automated: sync on every change in git")
	fs.BoolVar(&o.AutoPrune, "auto-prune", false, "automated sync deletes resources that left git")
	fs.BoolVar(&o.SelfHeal, "self-heal", false, "automated sync reverts changes made in the cluster")
	fs.StringArrayVar(&o.SyncOptions, "sync-option", nil, "a sync option KEY=VALUE, e.g. CreateNamespace=true (repeatable)")
}

// automated reports whether --sync-policy asks for automated sync.
func (o *appCreateOptions) automated() bool {
	switch strings.ToLower(o.SyncPolicy) {
	case "automated", "auto", "automatic":
		return true
	}
	return false
}

// Validate checks the options a manifest needs; the runtime validates the rest.
func (o *appCreateOptions) Validate() error {
	switch strings.ToLower(o.SyncPolicy) {
	case "automated", "auto", "automatic", "manual", "none", "":
	default:
		return usageError("--sync-policy %q: use manual or automated", o.SyncPolicy)
	}
	switch {
	case o.Repo == "":
		return usageError("--repo is required (or give the whole Application with -f FILE)")
	case o.DestServer == "" && o.DestName == "":
		return usageError("--dest-server or --dest-name is required (https://kubernetes.default.svc is the runtime's own cluster)")
	case o.DestServer != "" && o.DestName != "":
		return usageError("--dest-server %q and --dest-name %q: give one of them", o.DestServer, o.DestName)
	case o.AutoPrune && !o.automated():
		return usageError("--auto-prune needs --sync-policy automated")
	case o.SelfHeal && !o.automated():
		return usageError("--self-heal needs --sync-policy automated")
	}
	for _, opt := range o.SyncOptions {
		if k, _, ok := strings.Cut(opt, "="); !ok || k == "" {
			return usageError("--sync-option %q: use KEY=VALUE, e.g. CreateNamespace=true", opt)
		}
	}
	return nil
}

// Manifest returns the Application named name as YAML.
func (o *appCreateOptions) Manifest(name string) ([]byte, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	m := client.ApplicationManifest{
		APIVersion: appAPIVersion,
		Kind:       appKind,
		Metadata:   client.AppMetadata{Name: name},
		Spec: client.AppSpec{
			Project:     o.Project,
			Source:      &client.AppSource{RepoURL: o.Repo, Path: o.Path, TargetRevision: o.Revision},
			Destination: client.AppDestination{Server: o.DestServer, Name: o.DestName, Namespace: o.DestNamespace},
		},
	}
	if o.automated() || len(o.SyncOptions) > 0 {
		m.Spec.SyncPolicy = &client.AppSyncPolicy{SyncOptions: o.SyncOptions}
		if o.automated() {
			m.Spec.SyncPolicy.Automated = &client.AppSyncPolicyAutomated{Prune: o.AutoPrune, SelfHeal: o.SelfHeal}
		}
	}
	var b bytes.Buffer
	if err := printData(&b, outYAML, m, nil); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (a *app) appCommand() *cobra.Command {
	var runtime, out string
	cmd := &cobra.Command{
		Use:     "app",
		Aliases: []string{"apps", "application", "applications"},
		Short:   "Manage a runtime's GitOps applications (Argo CD Applications)",
		Long: "Applications are Argo CD Applications run by a runtime's GitOps engine, reached through\n" +
			"the control plane. --runtime selects the runtime (default: " + DefaultRuntime + ", the one `freshet up` runs).",
	}
	cmd.PersistentFlags().StringVar(&runtime, "runtime", envOr(EnvRuntime, DefaultRuntime), "the runtime (name or ID; env "+EnvRuntime+")")

	// run gives f a client and turns errors of a runtime without the GitOps API into a hint.
	run := func(f func(ctx context.Context, c *client.Client, args []string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			return appError(runtime, f(cmd.Context(), c, args))
		}
	}

	var file string
	var upsert bool
	var gitSource string
	var co appCreateOptions
	var create *cobra.Command
	create = &cobra.Command{
		Use:   "create (NAME --repo URL --path P --dest-server S --dest-namespace NS … | -f FILE) [--upsert]",
		Short: "Create an application from flags or from an Application file (-f -: standard input)",
		Args:  cobra.MaximumNArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, args []string) error {
			var manifest []byte
			var err error
			if file != "" {
				for _, f := range appSpecFlags {
					if create.Flags().Changed(f) {
						return usageError("--%s cannot be combined with -f: put it in the file", f)
					}
				}
				if len(args) > 0 {
					return usageError("give NAME with flags or the Application with -f, not both")
				}
				if manifest, err = readFile(a, file); err != nil {
					return err
				}
			} else {
				if len(args) == 0 {
					return usageError("NAME is required (or give the whole Application with -f FILE)")
				}
				if manifest, err = co.Manifest(args[0]); err != nil {
					return err
				}
			}
			ap, err := c.CreateApplicationIn(ctx, runtime, gitSource, manifest, upsert)
			if err != nil {
				return err
			}
			verb := "Created"
			if upsert {
				verb = "Saved"
			}
			fmt.Fprintf(a.stdout, "%s application %s in runtime %s.\n", verb, ap.Name, runtime)
			return nil
		}),
	}
	create.Flags().StringVarP(&file, "file", "f", "", "an Argo CD Application (YAML or JSON); - for standard input")
	create.Flags().BoolVar(&upsert, "upsert", false, "replace the application if it exists")
	create.Flags().StringVar(&gitSource, "git-source", "", "commit the application into this Git Source of the runtime (default: the installation repository)")
	co.BindFlags(create.Flags())

	list := &cobra.Command{Use: "list", Short: "List the runtime's applications", Args: cobra.NoArgs,
		RunE: run(func(ctx context.Context, c *client.Client, _ []string) error {
			l, err := c.ListApplications(ctx, runtime)
			if err != nil {
				return err
			}
			return printApps(a.stdout, out, l.Items, l.Items)
		})}
	addOutputFlag(list, &out)

	get := &cobra.Command{Use: "get NAME", Short: "Show an application: source, destination, status, resources and their tree", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, args []string) error {
			ap, err := c.GetApplication(ctx, runtime, args[0])
			if err != nil {
				return err
			}
			if out != outTable {
				return printData(a.stdout, out, ap, nil)
			}
			tree, treeErr := c.ApplicationTree(ctx, runtime, args[0])
			return writeAppDetails(a.stdout, runtime, ap, tree.Items, treeErr)
		})}
	addOutputFlag(get, &out)

	diff := &cobra.Command{Use: "diff NAME", Short: "Show how the cluster differs from git; exit code 1 when it does", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, args []string) error {
			d, err := c.ApplicationDiff(ctx, runtime, args[0])
			if err != nil {
				return err
			}
			if out == outTable {
				writeDiffs(a.stdout, d.Items)
			} else if err := printData(a.stdout, out, d.Items, nil); err != nil {
				return err
			}
			if n := countDiffering(d.Items); n > 0 {
				return exitError{code: 1, err: fmt.Errorf("application %s: %d of %d resources differ from git", args[0], n, len(d.Items))}
			}
			return nil
		})}
	addOutputFlag(diff, &out)

	var sr client.SyncRequest
	syncCmd := &cobra.Command{Use: "sync NAME [--prune] [--dry-run] [--revision R] [--resource KIND/NAME]…",
		Short: "Sync an application and print what the sync did; exit code 1 unless it succeeded", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, args []string) error {
			res, err := c.SyncApplication(ctx, runtime, args[0], sr)
			if err != nil {
				return err
			}
			if err := printData(a.stdout, out, res, func(tw *tabwriter.Writer) { writeSyncResult(tw, res) }); err != nil {
				return err
			}
			return syncOutcome(args[0], res)
		})}
	sf := syncCmd.Flags()
	sf.BoolVar(&sr.Prune, "prune", false, "delete resources that are no longer in git")
	sf.BoolVar(&sr.DryRun, "dry-run", false, "only check what the sync would do (server-side dry run)")
	sf.StringVar(&sr.Revision, "revision", "", "sync to this branch, tag or commit instead of the target revision")
	sf.StringArrayVar(&sr.Resources, "resource", nil, "sync only this resource: KIND/NAME or GROUP/KIND/NAMESPACE/NAME (repeatable)")
	sf.StringArrayVar(&sr.Options, "sync-option", nil, "a sync option for this sync, e.g. CreateNamespace=true (repeatable)")
	addOutputFlag(syncCmd, &out)

	history := &cobra.Command{Use: "history NAME", Short: "List an application's syncs, oldest first", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, args []string) error {
			h, err := c.ApplicationHistory(ctx, runtime, args[0])
			if err != nil {
				return err
			}
			return printData(a.stdout, out, h.Items, func(tw *tabwriter.Writer) { writeHistory(tw, h.Items) })
		})}
	addOutputFlag(history, &out)

	var rollbackPrune bool
	rollback := &cobra.Command{Use: "rollback NAME ID [--prune]",
		Short: "Sync an application to the revision of a history entry (switches automated sync off)", Args: cobra.ExactArgs(2),
		RunE: run(func(ctx context.Context, c *client.Client, args []string) error {
			id, err := strconv.ParseInt(args[1], 10, 64)
			if err != nil || id < 1 {
				return usageError("history ID %q: want a number from 'freshet app history %s'", args[1], args[0])
			}
			rb, err := c.RollbackApplication(ctx, runtime, args[0], id, rollbackPrune)
			if err != nil {
				return err
			}
			if out != outTable {
				if err := printData(a.stdout, out, rb, nil); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.stdout, "Rolled application %s back to history entry %d (revision %s).\n", args[0], rb.Entry.ID, shortRev(rb.Entry.Revision))
				if rb.AutoSyncDisabled {
					fmt.Fprintf(a.stdout, "Automated sync of %s is now off, so that it stays at this revision (as in Argo CD); 'freshet app auto-sync %s' switches it back on.\n", args[0], args[0])
				}
				fmt.Fprintln(a.stdout)
				if rb.Result != nil {
					tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
					writeSyncResult(tw, *rb.Result)
					if err := tw.Flush(); err != nil {
						return err
					}
				}
			}
			if rb.Result == nil {
				return nil
			}
			return syncOutcome(args[0], *rb.Result)
		})}
	rollback.Flags().BoolVar(&rollbackPrune, "prune", false, "delete resources that are not in the rolled-back revision")
	addOutputFlag(rollback, &out)

	var cascade bool
	del := &cobra.Command{Use: "delete NAME [--cascade=false]", Short: "Delete an application and, unless --cascade=false, its resources", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, args []string) error {
			if err := c.DeleteApplication(ctx, runtime, args[0], cascade); err != nil {
				return err
			}
			if cascade {
				fmt.Fprintf(a.stdout, "Deleted application %s and its resources.\n", args[0])
			} else {
				fmt.Fprintf(a.stdout, "Deleted application %s; its resources stay in the cluster.\n", args[0])
			}
			return nil
		})}
	del.Flags().BoolVar(&cascade, "cascade", true, "also delete the application's resources from the cluster")

	var wantSync, wantHealth bool
	var timeout time.Duration
	wait := &cobra.Command{Use: "wait NAME [--sync] [--health] [--timeout 5m]",
		Short: "Wait until an application is synced and/or healthy (neither flag: both)", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, args []string) error {
			if !wantSync && !wantHealth {
				wantSync, wantHealth = true, true
			}
			ap, err := a.waitApp(ctx, c, runtime, args[0], appCondition{sync: wantSync, health: wantHealth}, timeout)
			if err != nil {
				return err
			}
			return printApps(a.stdout, out, ap, []client.Application{ap})
		})}
	wait.Flags().BoolVar(&wantSync, "sync", false, "wait until it is Synced")
	wait.Flags().BoolVar(&wantHealth, "health", false, "wait until it is Healthy")
	wait.Flags().DurationVar(&timeout, "timeout", DefaultAppWaitTimeout, "give up after this long (0: never)")
	addOutputFlag(wait, &out)

	var hard bool
	refresh := &cobra.Command{Use: "refresh NAME [--hard]", Short: "Compare an application with git and the cluster now", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, args []string) error {
			ap, err := c.RefreshApplication(ctx, runtime, args[0], hard)
			if err != nil {
				return err
			}
			return printApps(a.stdout, out, ap, []client.Application{ap})
		})}
	refresh.Flags().BoolVar(&hard, "hard", false, "also forget cached git refs and rendered manifests")
	addOutputFlag(refresh, &out)

	terminate := &cobra.Command{Use: "terminate-op NAME", Short: "Stop an application's running sync", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, args []string) error {
			ok, err := c.TerminateSync(ctx, runtime, args[0])
			if err != nil {
				return err
			}
			if ok {
				fmt.Fprintf(a.stdout, "Terminated the running sync of application %s.\n", args[0])
			} else {
				fmt.Fprintf(a.stdout, "Application %s has no running sync.\n", args[0])
			}
			return nil
		})}

	var disable bool
	autoSync := &cobra.Command{Use: "auto-sync NAME [--disable]", Short: "Switch automated sync back on after a rollback (or off)", Args: cobra.ExactArgs(1),
		RunE: run(func(ctx context.Context, c *client.Client, args []string) error {
			ap, err := c.SetAutoSync(ctx, runtime, args[0], !disable)
			if err != nil {
				return err
			}
			state := "on"
			if ap.Status.AutoSyncDisabled {
				state = "off"
			}
			fmt.Fprintf(a.stdout, "Automated sync of application %s is %s.\n", args[0], state)
			return nil
		})}
	autoSync.Flags().BoolVar(&disable, "disable", false, "switch it off instead")

	cmd.AddCommand(create, list, get, diff, syncCmd, history, rollback, del, wait, refresh, terminate, autoSync)
	return cmd
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// appError explains a 404 that did not come from the API (no error code): the control plane
// or the runtime does not serve the applications API at all.
func appError(runtime string, err error) error {
	var ae *client.Error
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound && ae.Code == "" {
		return fmt.Errorf("runtime %s does not serve the applications API (%s); is it a Freshet version with GitOps?", runtime, ae.Message)
	}
	return err
}

// appCondition is what `freshet app wait` waits for.
type appCondition struct{ sync, health bool }

func (w appCondition) String() string {
	var s []string
	if w.sync {
		s = append(s, client.SyncStatusSynced)
	}
	if w.health {
		s = append(s, client.HealthHealthy)
	}
	return strings.Join(s, " and ")
}

// met reports whether st satisfies the condition, with no sync running.
func (w appCondition) met(st client.AppStatus) bool {
	if st.Operation != nil && st.Operation.Phase == client.PhaseRunning {
		return false
	}
	return (!w.sync || st.Sync == client.SyncStatusSynced) && (!w.health || st.Health.Status == client.HealthHealthy)
}

// describeState is an application's state in one line, for wait.
func describeState(st client.AppStatus) string {
	s := fmt.Sprintf("sync %s, health %s", orUnknown(st.Sync), orUnknown(st.Health.Status))
	if st.Health.Message != "" {
		s += " (" + st.Health.Message + ")"
	}
	if op := st.Operation; op != nil && op.Phase == client.PhaseRunning {
		s += ", a sync is running"
	} else if op != nil && (op.Phase == client.PhaseFailed || op.Phase == client.PhaseError) {
		s += ", last sync " + op.Phase
		if op.Message != "" {
			s += ": " + op.Message
		}
	}
	for _, c := range st.Conditions {
		if strings.HasSuffix(c.Type, "Error") {
			s += "; " + c.Type + ": " + c.Message
		}
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return client.SyncStatusUnknown
	}
	return s
}

// waitApp polls an application until cond is met. Errors that may pass (the runtime is
// restarting, the app is not loaded yet) are retried until the timeout; others end the wait.
// Each change of state is reported on stderr.
func (a *app) waitApp(ctx context.Context, c *client.Client, runtime, name string, cond appCondition, timeout time.Duration) (client.Application, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var (
		last    client.Application
		seen    bool
		lastErr error
		shown   string
	)
	t := time.NewTicker(appWaitPoll)
	defer t.Stop()
	for {
		ap, err := c.GetApplication(ctx, runtime, name)
		switch {
		case err == nil:
			last, seen, lastErr = ap, true, nil
			if cond.met(ap.Status) {
				return ap, nil
			}
			if s := describeState(ap.Status); s != shown {
				fmt.Fprintf(a.stderr, "%s: %s\n", name, s)
				shown = s
			}
		case ctx.Err() != nil:
		case !retryable(err):
			return client.Application{}, err
		default:
			if lastErr == nil || describe(err) != describe(lastErr) {
				fmt.Fprintf(a.stderr, "%s: %s (retrying)\n", name, describe(err))
			}
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if cerr := context.Cause(ctx); !errors.Is(cerr, context.DeadlineExceeded) {
				return client.Application{}, cerr
			}
			msg := fmt.Sprintf("timed out after %s waiting for application %s to be %s", timeout, name, cond)
			if seen {
				msg += "; last state: " + describeState(last.Status)
			}
			if lastErr != nil {
				msg += "; last error: " + describe(lastErr)
			}
			return client.Application{}, errors.New(msg)
		case <-t.C:
		}
	}
}

// retryable reports whether a failed request may succeed when repeated: the server or runtime
// is unreachable or restarting, or the application is not there yet.
func retryable(err error) bool {
	var ae *client.Error
	if errors.As(err, &ae) {
		switch ae.Status {
		case http.StatusNotFound:
			return ae.Code == "not_found" // not a missing route
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusTooManyRequests:
			return true
		}
		return false
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// syncOutcome is the command's error for a sync that did not succeed.
func syncOutcome(name string, r client.SyncResult) error {
	if r.Phase == client.PhaseSucceeded {
		return nil
	}
	msg := fmt.Sprintf("sync of application %s ended %s", name, orUnknown(r.Phase))
	if r.Message != "" {
		msg += ": " + r.Message
	}
	return exitError{code: 1, err: errors.New(msg)}
}

var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// shortRev abbreviates a commit SHA to 7 characters; branch and tag names are kept.
func shortRev(rev string) string {
	if fullSHA.MatchString(rev) {
		return rev[:7]
	}
	return rev
}

func destination(d client.AppDestination) string {
	cluster := d.Server
	if cluster == "" {
		cluster = d.Name
	}
	if d.Namespace == "" {
		return cluster
	}
	return cluster + " (" + d.Namespace + ")"
}

func project(ap client.Application) string {
	if p := ap.AppSpec().Project; p != "" {
		return p
	}
	return ap.Status.Project
}

func printApps(w io.Writer, format string, v any, apps []client.Application) error {
	return printData(w, format, v, func(tw *tabwriter.Writer) {
		row(tw, "NAME", "PROJECT", "SYNC", "HEALTH", "REVISION", "REPO", "PATH", "DESTINATION")
		for _, ap := range apps {
			spec := ap.AppSpec()
			src := spec.EffectiveSource()
			if src == nil {
				src = &client.AppSource{}
			}
			row(tw, ap.Name, project(ap), ap.Status.Sync, ap.Status.Health.Status, shortRev(ap.Status.Revision),
				src.RepoURL, src.Path, destination(spec.Destination))
		}
	})
}

// syncPolicy describes an application's sync policy in a few words.
func syncPolicy(ap client.Application) string {
	p := ap.AppSpec().SyncPolicy
	if !p.IsAutomated() {
		return "manual"
	}
	s := "automated"
	var opts []string
	if p.Automated.Prune {
		opts = append(opts, "prune")
	}
	if p.Automated.SelfHeal {
		opts = append(opts, "self-heal")
	}
	if len(opts) > 0 {
		s += " (" + strings.Join(opts, ", ") + ")"
	}
	if ap.Status.AutoSyncDisabled {
		s += ", switched off by a rollback"
	}
	return s
}

// writeAppDetails is `freshet app get`: a summary, conditions, the last operation, the
// resources and the resource tree (or why the tree is missing).
func writeAppDetails(w io.Writer, runtime string, ap client.Application, tree []client.TreeNode, treeErr error) error {
	st, spec := ap.Status, ap.AppSpec()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	src := spec.EffectiveSource()
	if src == nil {
		src = &client.AppSource{}
	}
	target := src.TargetRevision
	if target == "" {
		target = "HEAD"
	}
	fmt.Fprintf(tw, "Name:\t%s\nRuntime:\t%s\nProject:\t%s\n", ap.Name, runtime, project(ap))
	switch {
	case ap.Owner != "" && ap.OwnerKind == "ApplicationSet":
		fmt.Fprintf(tw, "Owner:\tApplicationSet %s (generated by it, created, updated and deleted by it)\n", ap.Owner)
	case ap.Owner != "":
		fmt.Fprintf(tw, "Owner:\t%s (app of apps: rendered by it, created and pruned by its syncs)\n", ap.Owner)
	case ap.File != "":
		fmt.Fprintf(tw, "File:\t%s (installation repository)\n", ap.File)
	}
	fmt.Fprintf(tw, "Repo:\t%s\n", src.RepoURL)
	if src.Chart != "" {
		fmt.Fprintf(tw, "Chart:\t%s\n", src.Chart)
	} else {
		fmt.Fprintf(tw, "Path:\t%s\n", src.Path)
	}
	fmt.Fprintf(tw, "Target revision:\t%s\n", target)
	fmt.Fprintf(tw, "Destination:\t%s\n", destination(spec.Destination))
	fmt.Fprintf(tw, "Sync policy:\t%s\n", syncPolicy(ap))
	synced := orUnknown(st.Sync)
	if st.Revision != "" {
		prep := " to "
		if st.Sync != client.SyncStatusSynced {
			prep = " from "
		}
		synced += prep + target + " (" + shortRev(st.Revision) + ")"
	}
	fmt.Fprintf(tw, "Sync status:\t%s\n", synced)
	if cm := st.Commit; cm != nil {
		fmt.Fprintf(tw, "Commit:\t%s %q by %s, %s\n", shortRev(cm.SHA), cm.Subject(), cm.Author, ts(cm.AuthorTime))
	}
	health := orUnknown(st.Health.Status)
	if st.Health.Message != "" {
		health += ": " + st.Health.Message
	}
	fmt.Fprintf(tw, "Health:\t%s\n", health)
	fmt.Fprintf(tw, "Reconciled:\t%s\n", ts(st.ReconciledAt))
	if op := st.Operation; op != nil {
		kind := "sync"
		if op.DryRun {
			kind = "dry-run sync"
		}
		fmt.Fprintf(tw, "Operation:\t%s by %s to %s: %s, started %s%s\n", kind, orUnknown(op.InitiatedBy), shortRev(op.Revision), op.Phase, ts(op.StartedAt), tookSuffix(op.StartedAt, op.FinishedAt))
		if op.Message != "" {
			fmt.Fprintf(tw, "Operation message:\t%s\n", op.Message)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(st.Conditions) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		row(tw, "CONDITION", "SOURCE", "SINCE", "MESSAGE")
		for _, c := range st.Conditions {
			row(tw, c.Type, c.Source.String(), c.Since, c.Message)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row(tw, "GROUP", "KIND", "NAMESPACE", "NAME", "STATUS", "HEALTH", "MESSAGE")
	for _, r := range st.Resources {
		h, status := "", r.Status
		if r.Health != nil {
			h = r.Health.Status
		}
		if r.RequiresPruning {
			status += " (requires pruning)"
		}
		if r.Hook {
			status += " (hook)"
		}
		msg := r.Message
		if msg == "" && r.Health != nil {
			msg = r.Health.Message
		}
		row(tw, r.Group, r.Kind, r.Namespace, r.Name, status, h, msg)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if treeErr != nil {
		fmt.Fprintf(w, "Resource tree: unavailable: %s\n", describe(treeErr))
		return nil
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	writeTree(tw, tree)
	return tw.Flush()
}

func tookSuffix(start, end time.Time) string {
	if start.IsZero() || end.IsZero() {
		return ""
	}
	d := end.Sub(start)
	if d < time.Second {
		return " (took " + d.Round(time.Millisecond).String() + ")"
	}
	return " (took " + d.Round(100*time.Millisecond).String() + ")"
}

// writeTree writes managed resources and the objects they own, indented under their owners:
//
//	Deployment/guestbook
//	└─ ReplicaSet/guestbook-5d9c
//	   └─ Pod/guestbook-5d9c-x7b2k
func writeTree(tw io.Writer, nodes []client.TreeNode) {
	row(tw, "RESOURCE", "NAMESPACE", "SYNC", "HEALTH", "MESSAGE")
	for i := range nodes {
		writeNode(tw, &nodes[i], "", "")
	}
}

func writeNode(tw io.Writer, n *client.TreeNode, prefix, childPrefix string) {
	msg := n.Health.Message
	if len(n.Images) > 0 && msg == "" {
		msg = strings.Join(n.Images, ", ")
	}
	row(tw, prefix+n.Kind+"/"+n.Name, n.Namespace, n.Sync, n.Health.Status, msg)
	for i, ch := range n.Children {
		if ch == nil {
			continue
		}
		if i == len(n.Children)-1 {
			writeNode(tw, ch, childPrefix+"└─ ", childPrefix+"   ")
		} else {
			writeNode(tw, ch, childPrefix+"├─ ", childPrefix+"│  ")
		}
	}
}

func countDiffering(diffs []client.ResourceDiff) int {
	n := 0
	for _, d := range diffs {
		if d.Status != client.DiffSynced {
			n++
		}
	}
	return n
}

// writeDiffs prints the unified diff of every resource that differs, as `argocd app diff`
// does; nothing when none does.
func writeDiffs(w io.Writer, diffs []client.ResourceDiff) {
	for _, d := range diffs {
		if d.Status == client.DiffSynced {
			continue
		}
		gk := d.Kind
		if d.Group != "" {
			gk = d.Group + "/" + d.Kind
		}
		name := d.Name
		if d.Namespace != "" {
			name = d.Namespace + "/" + d.Name
		}
		what := d.Status
		switch d.Status {
		case client.DiffMissing:
			what = "Missing: not in the cluster"
		case client.DiffRequiresPruning:
			what = "RequiresPruning: not in git any more"
		}
		fmt.Fprintf(w, "===== %s %s (%s) ======\n", gk, name, what)
		if loc := d.Source.String(); loc != "" {
			fmt.Fprintf(w, "# from %s\n", loc)
		}
		if d.Message != "" {
			fmt.Fprintf(w, "# %s\n", d.Message)
		}
		if d.Diff != "" {
			fmt.Fprint(w, d.Diff)
			if !strings.HasSuffix(d.Diff, "\n") {
				fmt.Fprintln(w)
			}
		}
		fmt.Fprintln(w)
	}
}

// writeSyncResult writes a sync's outcome and what it did to each resource and hook.
func writeSyncResult(tw io.Writer, r client.SyncResult) {
	phase := orUnknown(r.Phase)
	if r.DryRun {
		phase += " (dry run)"
	}
	fmt.Fprintf(tw, "Revision:\t%s\nPhase:\t%s\n", r.Revision, phase)
	if r.Message != "" {
		fmt.Fprintf(tw, "Message:\t%s\n", r.Message)
	}
	fmt.Fprintf(tw, "Initiated by:\t%s\nStarted:\t%s%s\n\n", orUnknown(r.InitiatedBy), ts(r.StartedAt), tookSuffix(r.StartedAt, r.FinishedAt))
	row(tw, "KIND", "NAME", "RESULT", "WAVE", "MESSAGE")
	for _, h := range r.Hooks {
		row(tw, h.Kind, h.Name, h.Type+" hook "+h.Phase, h.Wave, h.Message)
	}
	for _, rr := range r.Resources {
		row(tw, rr.Kind, rr.Name, rr.Result, rr.Wave, rr.Message)
	}
}

// writeHistory writes an application's syncs, oldest first.
func writeHistory(tw io.Writer, entries []client.HistoryEntry) {
	row(tw, "ID", "DATE", "REVISION", "PHASE", "INITIATED BY", "AUTHOR", "MESSAGE")
	for _, e := range entries {
		date := e.FinishedAt
		if date.IsZero() {
			date = e.StartedAt
		}
		author, msg := "", e.Message
		if e.Commit != nil {
			author, msg = e.Commit.Author, e.Commit.Subject()
		}
		by := e.InitiatedBy
		if e.User != "" {
			by += " (" + e.User + ")"
		}
		row(tw, e.ID, date, shortRev(e.Revision), e.Phase, by, author, msg)
	}
}
