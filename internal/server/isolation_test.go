package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// tenants is two accounts that share nothing: A (the first account, with an admin, a member,
// API keys and audit records) and B (whose admin, eve, belongs to B only).
type tenants struct {
	s          *servertest.Server
	aAdmin     *client.Client
	aMemberID  string
	aKeyID     string
	aKeyToken  string
	bKey       string // B admin's API key
	bSession   string // B admin's session token
	aOnly      []string
	aAuditSize int
	sent       []string // everything B has put in a request: B knows it already

	aProject, aPipeline, aBuild, aRunner, aTrigger, aRuntime string
	aAccount, aWebhookAt                                     string
	alice                                                    *client.Client // A's member
	aInvitation                                              string         // alice's invitation to a third account
	aTeam, aRule                                             string         // A's team (alice is in it) and its rule
	aSession                                                 string         // the ID of A's admin's session
	aSubscription                                            string         // A's notification subscription (to aChannel)
}

const aSecretValue = "a-secret-value-xyz-123"

// A's registry context, the account's default: its password, URL and user are A's alone.
const (
	aRegistryPassword = "a-registry-password-789"
	aRegistryURL      = "a-registry.example/a-team"
	aRegistryUser     = "a-registry-user"
	aImageRepo        = aRegistryURL + "/a-secret-image"
)

var aImageDigest = "sha256:" + strings.Repeat("a1", 32)

// A's image reported through the API, its issue and its issue tracker.
// aWorkflowUID is the UID of A's archived workflow.
const aWorkflowUID = "a1a1a1a1-0000-4000-8000-a1a1a1a1a1a1"

var aReportedDigest = "sha256:" + strings.Repeat("a2", 32)

const (
	aReportedRepo  = "ghcr.io/a-reported/web"
	aReportedIssue = "ASECRET-77"
	aTracker       = "a-secret-tracker"
	aChannel       = "a-secret-channel"
	aEnvironment   = "a-secret-env"
	aProduct       = "a-secret-product"
	aHubSource     = "a-secret-hub"
)

const isolationSpec = "version: '1.0'\nsteps:\n  one:\n    commands: [\"echo one\"]\n"

func setupTenants(t *testing.T, d store.Dialect) *tenants {
	ctx := context.Background()
	s := servertest.Start(t, d)
	tn := &tenants{s: s, aAdmin: s.Admin}
	alice, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: "alice@first.test", Role: "member", Password: "alice-password"})
	if err != nil {
		t.Fatal(err)
	}
	tn.aMemberID = alice.ID
	k, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "a-deploy"})
	if err != nil {
		t.Fatal(err)
	}
	tn.aKeyID, tn.aKeyToken = k.ID, k.Token
	aMe, _ := s.Admin.Me(ctx)

	// Account B is provisioned by the platform with eve as its admin: no user of A ever touches it.
	prov, err := s.Identity().Provision(ctx, "bravo", "eve@bravo.test", "eve-password")
	if err != nil {
		t.Fatal(err)
	}
	b := prov.Account
	eve := s.Login(t, "eve@bravo.test", "eve-password")
	bk, err := eve.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "b-admin"})
	if err != nil {
		t.Fatal(err)
	}
	tn.bKey = bk.Token
	res, err := client.New(s.URL).Login(ctx, client.LoginRequest{Email: "eve@bravo.test", Password: "eve-password"})
	if err != nil {
		t.Fatal(err)
	}
	tn.bSession = res.Token
	if bme, _ := s.Client(tn.bKey).Me(ctx); bme.Account.ID != b.ID || len(bme.Accounts) != 1 {
		t.Fatalf("eve's key is not in B alone: %+v", bme)
	}
	// A third account invites A's member: the invitation is alice's, and B must not reach it.
	if _, err := s.Identity().Provision(ctx, "charlie", "carl@charlie.test", "carl-password"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Login(t, "carl@charlie.test", "carl-password").CreateUser(ctx, client.CreateUserRequest{Email: "alice@first.test", Role: "viewer"}); err != nil {
		t.Fatal(err)
	}
	tn.alice = s.Login(t, "alice@first.test", "alice-password")
	invs, err := tn.alice.ListInvitations(ctx)
	if err != nil || len(invs.Items) != 1 {
		t.Fatalf("alice's invitations: %+v, %v", invs, err)
	}
	tn.aInvitation = invs.Items[0].ID
	// A's single sign-on, with a client secret B must never see.
	if _, err := s.Admin.SetSSO(ctx, client.SSOConfigRequest{Issuer: "https://idp.a-secret-issuer.test", ClientID: "a-sso-client-secret-id",
		ClientSecret: "a-sso-client-secret-value", AllowedDomains: []string{"first.test"}}); err != nil {
		t.Fatal(err)
	}
	tn.aOnly = append(tn.aOnly, "a-secret-issuer", "a-sso-client-secret")
	// A's team, with alice, and a rule for it (on a kind nothing else here uses).
	team, err := s.Admin.CreateTeam(ctx, "a-team-secret")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Admin.AddTeamMember(ctx, team.ID, "alice@first.test"); err != nil {
		t.Fatal(err)
	}
	rule, err := s.Admin.CreateRule(ctx, client.CreateRuleRequest{Team: team.ID, Action: "read", Kind: "gitsources", Runtime: "a-rt-attr"})
	if err != nil {
		t.Fatal(err)
	}
	tn.aTeam, tn.aRule = team.ID, rule.ID
	sessions, err := s.Admin.ListSessions(ctx)
	if err != nil || len(sessions.Items) != 1 {
		t.Fatalf("A's admin's sessions: %+v, %v", sessions, err)
	}
	tn.aSession = sessions.Items[0].ID

	// A's CI objects: a project, a pipeline using a secret context, a queued build, a runner.
	pr, err := s.Admin.CreateProject(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.CreateContext(ctx, client.ContextRequest{Name: "a-secret", Type: "secret", Values: map[string]string{"TOKEN": aSecretValue}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.CreateContext(ctx, client.ContextRequest{Name: "a-registry", Type: "registry",
		Registry: &client.RegistryContext{URL: aRegistryURL, Username: aRegistryUser, Password: aRegistryPassword, Default: true}}); err != nil {
		t.Fatal(err)
	}
	pl, err := s.Admin.CreatePipeline(ctx, client.PipelineRequest{Project: "alpha", Name: "p1", Spec: isolationSpec,
		Config: client.PipelineConfig{Contexts: []string{"a-secret"}}})
	if err != nil {
		t.Fatal(err)
	}
	bl, err := s.Admin.RunPipeline(ctx, pl.ID, client.RunRequest{Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	rn, err := s.Admin.RegisterRunner(ctx, client.RegisterRunnerRequest{Name: "a-runner"})
	if err != nil {
		t.Fatal(err)
	}
	trg, err := s.Admin.CreateTrigger(ctx, pl.ID, client.TriggerRequest{Type: "git", Provider: "github",
		Git: &client.GitTrigger{Repo: "acme/app", Events: []string{"push.heads"}}})
	if err != nil {
		t.Fatal(err)
	}
	art, err := s.Admin.RegisterRuntime(ctx, client.RegisterRuntimeRequest{Name: "a-runtime"})
	if err != nil {
		t.Fatal(err)
	}
	tn.aProject, tn.aPipeline, tn.aBuild, tn.aRunner, tn.aTrigger, tn.aRuntime = pr.ID, pl.ID, bl.ID, rn.ID, trg.ID, art.ID
	// A's team owns A's project and runtime: B's lists and reads must not show it.
	if _, err := s.Admin.SetProjectOwner(ctx, pr.ID, tn.aTeam); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.SetRuntimeOwner(ctx, art.ID, tn.aTeam); err != nil {
		t.Fatal(err)
	}
	// An image A's build pushed (recorded as the runner protocol records it; the build stays
	// queued for the checks below).
	if _, err := s.DB().PutBuildImage(ctx, store.BuildImage{ID: store.NewID(store.PrefixImage), AccountID: aMe.Account.ID, BuildID: bl.ID, Step: "one",
		Registry: "a-registry", Repository: aImageRepo, Tags: []string{"a-tag"}, Digest: aImageDigest, Size: 1, Branch: "main", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Admin.GetBuild(ctx, bl.ID); err != nil || len(b.Images) != 1 {
		t.Fatalf("A's build images: %+v, %v", b.Images, err)
	}
	tn.aAccount = aMe.Account.ID
	// A's runtime reports an application with a deployment; A has a GitOps webhook secret.
	reportApps(t, s.URL, art.Token, aReport())
	// ... and a finished workflow, which the control plane archives.
	wfAt := time.Now().UTC().Add(-time.Hour).Truncate(time.Second) // within the run statistics' window
	reportApps(t, s.URL, art.Token, runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.WorkflowFinished, At: wfAt,
		Workflow: &runtimev1.WorkflowRecord{Namespace: "a-pipelines", Name: "a-secret-pipeline-run", UID: aWorkflowUID, Phase: "Succeeded",
			StartedAt: wfAt.Add(-time.Minute), FinishedAt: wfAt, Trigger: runtimev1.WorkflowTriggerSubmit, TriggeredBy: "alice@alpha.test",
			Nodes: []runtimev1.WorkflowNodeRecord{{ID: "a-secret-pipeline-run", Name: "a-secret-pipeline-run", Type: "Steps", Phase: "Succeeded"}}}}}})
	if aw, err := s.Admin.ListArchivedWorkflows(ctx, client.ArchiveFilter{}); err != nil || len(aw.Items) != 1 || aw.Items[0].UID != aWorkflowUID {
		t.Fatalf("A's archived workflows: %+v, %v", aw, err)
	}
	if st, err := s.Admin.WorkflowRunStats(ctx, 90); err != nil || !strings.Contains(fmt.Sprint(st.Days), " 1 0 0}") {
		t.Fatalf("A's workflow run statistics: %+v, %v", st, err)
	}
	// ... and a Helm release of its cluster.
	reportApps(t, s.URL, art.Token, runtimev1.ReportRequest{Events: []runtimev1.AppEvent{{Type: runtimev1.HelmReleaseChanged, At: wfAt,
		HelmRelease: &runtimev1.HelmReleaseRecord{Cluster: "in-cluster", Namespace: "a-helm-ns", Name: "a-secret-release", Chart: "a-secret-chart",
			ChartVersion: "1.0.0", Status: "deployed", Revision: 1, History: []runtimev1.HelmRevision{{Revision: 1, Status: "deployed", Chart: "a-secret-chart"}}}}}})
	if hr, err := s.Admin.ListHelmReleases(ctx, client.HelmReleaseFilter{}); err != nil || len(hr.Items) != 1 || hr.Items[0].Name != "a-secret-release" {
		t.Fatalf("A's Helm releases: %+v, %v", hr, err)
	}
	aApps := appsOf(t, s.Admin)
	if len(aApps) != 1 {
		t.Fatalf("A's applications: %+v", aApps)
	}
	st, hook, _ := call(t, "POST", s.URL+"/api/v1/gitops/webhook", tn.aKeyToken, []byte(`{}`))
	if st != 200 {
		t.Fatalf("A's GitOps webhook: %d %v", st, hook)
	}
	tn.aWebhookAt, _ = hook["createdAt"].(string)
	aHookSecret, _ := hook["secret"].(string)
	// The deployment reaches A's analytics through the outbox, the bus and the consumers.
	var aDeployment string
	for deadline := time.Now().Add(20 * time.Second); aDeployment == ""; time.Sleep(20 * time.Millisecond) {
		ds, err := s.Admin.ListDeployments(ctx, client.DeploymentFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds.Items) == 1 && ds.Items[0].Application == "a-shop-web" {
			aDeployment = ds.Items[0].ID
		} else if time.Now().After(deadline) {
			t.Fatalf("A's deployments: %+v", ds.Items)
		}
	}
	nov := client.DORAQuery{Since: time.Date(2023, 11, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2023, 12, 1, 0, 0, 0, 0, time.UTC)}
	if r, err := s.Admin.DORA(ctx, nov); err != nil || r.Deployments != 1 || r.Successful != 1 {
		t.Fatalf("A's DORA report of November 2023 (the B cases query the same): %+v, %v", r, err)
	}

	// The tracker answers only for project ZZZ: nothing is fetched for A's issue.
	if _, err := s.Admin.CreateIssueTracker(ctx, client.CreateIssueTrackerRequest{Name: aTracker, Kind: "jira", URL: "https://a-secret-tracker.example",
		Token: "a-tracker-token", Scope: []string{"ZZZ"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.ReportImage(ctx, client.ReportImageRequest{Image: aReportedRepo + ":1", Digest: aReportedDigest, Commit: "aaaaaaa",
		Issues: []string{aReportedIssue}}); err != nil {
		t.Fatal(err)
	}

	if _, err := s.Admin.CreateNotificationChannel(ctx, client.CreateNotificationChannelRequest{Name: aChannel, Kind: "webhook",
		URL: "https://a-secret-hook.example/in", Secret: "a-channel-secret"}); err != nil {
		t.Fatal(err)
	}
	sub, err := s.Admin.CreateNotificationSubscription(ctx, client.CreateNotificationSubscriptionRequest{Channel: aChannel, Events: []string{"deployment"},
		Application: "a-notified-app"})
	if err != nil {
		t.Fatal(err)
	}
	tn.aSubscription = sub.ID
	if _, err := s.Admin.CreateEnvironment(ctx, client.EnvironmentRequest{Name: aEnvironment, Kind: "prod", Order: 1,
		Targets: []client.EnvironmentTarget{{Cluster: "a-secret-cluster", Namespace: "a-secret-ns-*"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.CreateProduct(ctx, client.CreateProductRequest{Name: aProduct, Patterns: []string{"a-secret-glob-*"}}); err != nil {
		t.Fatal(err)
	}

	// A's hub source, stored as the API stores one (its repository is not reachable under the
	// test server's policy: its status carries A's URL in an error, which B must not see).
	if err := s.DB().Tx(ctx, func(tx *store.Tx) error {
		return tx.CreateHubSource(ctx, store.HubSource{ID: store.NewID(store.PrefixHubSource), AccountID: aMe.Account.ID, Name: aHubSource,
			URL: "https://a-secret-hub.example/templates.git", Path: "workflows", CreatedAt: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}

	audit, err := s.Admin.ListAudit(ctx, client.AuditFilter{ListOptions: client.ListOptions{Limit: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	tn.aAuditSize = len(audit.Items)
	tn.aOnly = []string{aMe.Account.ID, aMe.User.ID, aMe.User.Email, alice.ID, alice.Email, k.ID, k.Prefix, k.Token,
		pr.ID, pl.ID, bl.ID, rn.ID, rn.Token, aSecretValue, aRegistryPassword, aRegistryURL, aRegistryUser, aImageRepo, aImageDigest,
		trg.ID, trg.Secret, art.ID, art.Token, tn.aTeam, "a-team-secret", tn.aRule, "a-rt-attr", tn.aSession,
		aApps[0].ID, "a-shop-web", "a-secret-repo", "a-team-label", "a-payments", "a-project-x", aHookSecret, tn.aInvitation, aDeployment,
		aReportedDigest, aReportedRepo, aReportedIssue, aTracker, "a-tracker-token",
		aChannel, "a-secret-hook.example", "a-channel-secret", "a-notified-app", sub.ID, aWorkflowUID, "a-secret-pipeline-run",
		"a-secret-release", "a-secret-chart", aEnvironment, "a-secret-cluster", "a-secret-ns-", aProduct, "a-secret-glob-", "a-annotated-product", aHubSource, "a-secret-hub.example"}
	for _, e := range audit.Items {
		tn.aOnly = append(tn.aOnly, e.ID)
	}
	return tn
}

// leak fails the test if text contains anything only account A has.
func (tn *tenants) leak(t *testing.T, what, text string) {
	t.Helper()
	for _, s := range tn.aOnly {
		if strings.Contains(text, s) && !tn.knownToB(s) {
			t.Errorf("%s: account B sees %q of account A in: %.300s", what, s, text)
		}
	}
}

func (tn *tenants) knownToB(s string) bool {
	for _, x := range tn.sent {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

// unchanged fails the test if account A's state differs from the setup.
func (tn *tenants) unchanged(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	users, err := tn.aAdmin.ListUsers(ctx, client.ListOptions{})
	if err != nil || len(users.Items) != 2 {
		t.Fatalf("A's users changed: %+v, %v", users.Items, err)
	}
	for _, u := range users.Items {
		if (u.ID == tn.aMemberID && u.Role != "member") || (u.ID != tn.aMemberID && u.Role != "admin") {
			t.Errorf("A's user %s has role %s", u.Email, u.Role)
		}
	}
	if _, err := tn.s.Client(tn.aKeyToken).Me(ctx); err != nil {
		t.Errorf("A's API key stopped working: %v", err)
	}
	acct, err := tn.aAdmin.Account(ctx)
	if err != nil || acct.Name != "first" {
		t.Errorf("A's account changed: %+v, %v", acct, err)
	}
	if _, err := tn.aAdmin.Me(ctx); err != nil {
		t.Errorf("A's admin session ended: %v", err)
	}
	if me, err := tn.alice.Me(ctx); err != nil || len(me.Accounts) != 1 {
		t.Errorf("A's member joined another account: %+v, %v", me.Accounts, err)
	}
	if invs, err := tn.alice.ListInvitations(ctx); err != nil || !slices.ContainsFunc(invs.Items, func(i client.Invitation) bool { return i.ID == tn.aInvitation }) {
		t.Errorf("alice's invitation changed: %+v, %v", invs, err)
	}
	if b, err := tn.aAdmin.GetBuild(ctx, tn.aBuild); err != nil || b.Status != "queued" {
		t.Errorf("A's build changed: %+v, %v", b.Status, err)
	}
	if p, err := tn.aAdmin.GetPipeline(ctx, tn.aPipeline); err != nil || p.Spec != isolationSpec {
		t.Errorf("A's pipeline changed: %v", err)
	}
	if c, err := tn.aAdmin.GetContext(ctx, "a-secret", true); err != nil || c.Values["TOKEN"] != aSecretValue {
		t.Errorf("A's secret changed: %v", err)
	}
	if c, err := tn.aAdmin.GetContext(ctx, "a-registry", true); err != nil || c.Registry == nil ||
		*c.Registry != (client.RegistryContext{URL: aRegistryURL, Username: aRegistryUser, Password: aRegistryPassword, Default: true}) {
		t.Errorf("A's registry changed: %+v, %v", c.Registry, err)
	}
	if b, err := tn.aAdmin.GetBuild(ctx, tn.aBuild); err != nil || len(b.Images) != 1 || b.Images[0].Digest != aImageDigest {
		t.Errorf("A's build images changed: %+v, %v", b.Images, err)
	}
	if rs, err := tn.aAdmin.ListRunners(ctx); err != nil || len(rs.Items) != 1 {
		t.Errorf("A's runners changed: %+v, %v", rs.Items, err)
	}
	if _, err := tn.aAdmin.GetProject(ctx, tn.aProject); err != nil {
		t.Errorf("A's project is gone: %v", err)
	}
	if rt, err := tn.aAdmin.GetRuntime(ctx, tn.aRuntime); err != nil || rt.Name != "a-runtime" {
		t.Errorf("A's runtime changed: %+v, %v", rt, err)
	}
	if ts, err := tn.aAdmin.ListTriggers(ctx, tn.aPipeline); err != nil || len(ts.Items) != 1 {
		t.Errorf("A's triggers changed: %+v, %v", ts.Items, err)
	}
	if bs, err := tn.aAdmin.ListBuilds(ctx, client.BuildFilter{}); err != nil || len(bs.Items) != 1 {
		t.Errorf("A's builds changed: %d, %v", len(bs.Items), err)
	}
	if apps := appsOf(t, tn.aAdmin); len(apps) != 1 || apps[0].HealthStatus != "Healthy" || apps[0].Project != "a-project-x" || len(apps[0].History.Nodes) != 1 {
		t.Errorf("A's applications changed: %+v", apps)
	}
	if st, hook, _ := call(t, "GET", tn.s.URL+"/api/v1/gitops/webhook", tn.aKeyToken, nil); st != 200 || hook["configured"] != true || hook["createdAt"] != tn.aWebhookAt {
		t.Errorf("A's GitOps webhook changed: %d %v", st, hook)
	}
	if team, err := tn.aAdmin.GetTeam(ctx, tn.aTeam); err != nil || len(team.Members) != 1 || team.Members[0].UserID != tn.aMemberID {
		t.Errorf("A's team changed: %+v, %v", team, err)
	}
	if rules, err := tn.aAdmin.ListRules(ctx, client.ListOptions{}); err != nil || len(rules.Items) != 1 || rules.Items[0].ID != tn.aRule {
		t.Errorf("A's rules changed: %+v, %v", rules.Items, err)
	}
	if ims, err := tn.aAdmin.ListImages(ctx, client.ImageFilter{Digest: aReportedDigest}); err != nil || len(ims.Items) != 1 ||
		ims.Items[0].Commit == nil || ims.Items[0].Commit.SHA != "aaaaaaa" || len(ims.Items[0].Issues) != 1 || ims.Items[0].Issues[0].Key != aReportedIssue {
		t.Errorf("A's reported image changed: %+v, %v", ims.Items, err)
	}
	if ts, err := tn.aAdmin.ListIssueTrackers(ctx); err != nil || len(ts.Items) != 1 || ts.Items[0].Name != aTracker {
		t.Errorf("A's issue trackers changed: %+v, %v", ts.Items, err)
	}
	if cs, err := tn.aAdmin.ListNotificationChannels(ctx); err != nil || len(cs.Items) != 1 || cs.Items[0].Name != aChannel || !cs.Items[0].HasSecret {
		t.Errorf("A's notification channels changed: %+v, %v", cs.Items, err)
	}
	if ss, err := tn.aAdmin.ListNotificationSubscriptions(ctx); err != nil || len(ss.Items) != 1 || ss.Items[0].ID != tn.aSubscription {
		t.Errorf("A's notification subscriptions changed: %+v, %v", ss.Items, err)
	}
}

// restCase attacks one route from account B and returns the answer's status and body.
type restCase func(t *testing.T, tn *tenants) (status int, body string)

func raw(t *testing.T, tn *tenants, method, path, token, body string) (int, string) {
	tn.sent = append(tn.sent, path, body)
	var b []byte
	if body != "" || method == "POST" || method == "PATCH" {
		b = []byte(body)
	}
	status, out, _ := call(t, method, tn.s.URL+path, token, b)
	j, _ := json.Marshal(out)
	return status, string(j)
}

func expect(t *testing.T, what string, status int, allowed ...int) {
	t.Helper()
	for _, a := range allowed {
		if status == a {
			return
		}
	}
	t.Errorf("%s: status %d, want one of %v", what, status, allowed)
}

var restCases = map[string]restCase{
	"GET /api/v1/openapi.yaml": func(t *testing.T, tn *tenants) (int, string) {
		return raw(t, tn, "GET", "/api/v1/openapi.yaml", tn.bKey, "")
	},
	"GET /api/v1/docs": func(t *testing.T, tn *tenants) (int, string) {
		return raw(t, tn, "GET", "/api/v1/docs", tn.bKey, "")
	},
	"POST /api/v1/auth/login": func(t *testing.T, tn *tenants) (int, string) {
		// Eve asks for a session in account A.
		st, body := raw(t, tn, "POST", "/api/v1/auth/login", "", `{"email":"eve@bravo.test","password":"eve-password","account":"first"}`)
		expect(t, "login into A", st, 400)
		return st, body
	},
	"POST /api/v1/auth/logout": func(t *testing.T, tn *tenants) (int, string) {
		res, _ := client.New(tn.s.URL).Login(context.Background(), client.LoginRequest{Email: "eve@bravo.test", Password: "eve-password"})
		return raw(t, tn, "POST", "/api/v1/auth/logout", res.Token, `{}`)
	},
	"POST /api/v1/auth/switch-account": func(t *testing.T, tn *tenants) (int, string) {
		me, _ := tn.aAdmin.Me(context.Background())
		st, body := raw(t, tn, "POST", "/api/v1/auth/switch-account", tn.bSession, fmt.Sprintf(`{"account":%q}`, me.Account.ID))
		expect(t, "switch into A", st, 400)
		return st, body
	},
	"GET /api/v1/me": func(t *testing.T, tn *tenants) (int, string) {
		return raw(t, tn, "GET", "/api/v1/me", tn.bKey, "")
	},
	"GET /api/v1/account": func(t *testing.T, tn *tenants) (int, string) {
		return raw(t, tn, "GET", "/api/v1/account", tn.bKey, "")
	},
	"GET /api/v1/plan": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "GET", "/api/v1/plan", tn.bKey, "")
		expect(t, "B's own plan", st, 200)
		return st, body
	},
	"GET /api/v1/usage": func(t *testing.T, tn *tenants) (int, string) {
		// B's usage meters B's records only (the CSV export is the same days).
		st, body := raw(t, tn, "GET", "/api/v1/usage?since=400d", tn.bKey, "")
		expect(t, "B's own usage", st, 200)
		return st, body
	},
	"DELETE /api/v1/account": func(t *testing.T, tn *tenants) (int, string) {
		// B's admin deletes "B's account" named like A: B's own account is the only one a caller
		// can delete, and A's name does not confirm it.
		st, body := raw(t, tn, "DELETE", "/api/v1/account?confirm=first", tn.bKey, "")
		expect(t, "delete B's account confirming with A's name", st, 400)
		return st, body
	},
	"POST /api/v1/accounts": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "POST", "/api/v1/accounts", tn.bKey, `{"name":"first"}`)
		expect(t, "create an account named like A", st, 409)
		return st, body
	},
	"GET /api/v1/users": func(t *testing.T, tn *tenants) (int, string) {
		return raw(t, tn, "GET", "/api/v1/users?limit=1000", tn.bKey, "")
	},
	"POST /api/v1/users": func(t *testing.T, tn *tenants) (int, string) {
		// Adding A's member with a password: an invitation that answers like a new user, sets no
		// password and makes alice a member of nothing (unchanged checks that) until she accepts.
		st, body := raw(t, tn, "POST", "/api/v1/users", tn.bKey, `{"email":"alice@first.test","role":"admin","password":"taken-over-1"}`)
		expect(t, "add A's user to B", st, 201)
		if _, err := client.New(tn.s.URL).Login(context.Background(), client.LoginRequest{Email: "alice@first.test", Password: "taken-over-1"}); err == nil {
			t.Error("B set the password of A's user")
		}
		nst, nbody := raw(t, tn, "POST", "/api/v1/users", tn.bKey, `{"email":"zed@bravo.test","role":"admin","password":"zed-password-1"}`)
		if nst != st || !sameKeys(body, nbody) {
			t.Errorf("adding A's user answers %d %s; adding a new one %d %s", st, body, nst, nbody)
		}
		return st, body
	},
	"GET /api/v1/invitations": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "GET", "/api/v1/invitations", tn.bKey, "")
		expect(t, "B's own invitations", st, 200)
		return st, body
	},
	"POST /api/v1/invitations/{id}/accept": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "POST", "/api/v1/invitations/"+tn.aInvitation+"/accept", tn.bSession, `{}`)
		expect(t, "accept alice's invitation", st, 404)
		return st, body
	},
	"POST /api/v1/invitations/{id}/decline": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "POST", "/api/v1/invitations/"+tn.aInvitation+"/decline", tn.bSession, `{}`)
		expect(t, "decline alice's invitation", st, 404)
		return st, body
	},
	"GET /api/v1/users/{id}": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "GET", "/api/v1/users/"+tn.aMemberID, tn.bKey, "")
		expect(t, "read A's user", st, 404)
		return st, body
	},
	"PATCH /api/v1/users/{id}": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "PATCH", "/api/v1/users/"+tn.aMemberID, tn.bKey, `{"role":"viewer"}`)
		expect(t, "change A's user", st, 404)
		return st, body
	},
	"DELETE /api/v1/users/{id}": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "DELETE", "/api/v1/users/"+tn.aMemberID, tn.bKey, "")
		expect(t, "delete A's user", st, 404)
		return st, body
	},
	"GET /api/v1/apikeys": func(t *testing.T, tn *tenants) (int, string) {
		return raw(t, tn, "GET", "/api/v1/apikeys?limit=1000", tn.bKey, "")
	},
	"POST /api/v1/apikeys": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "POST", "/api/v1/apikeys", tn.bKey, `{"name":"b-extra","role":"admin"}`)
		expect(t, "create a key in B", st, 201)
		return st, body
	},
	"DELETE /api/v1/apikeys/{id}": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "DELETE", "/api/v1/apikeys/"+tn.aKeyID, tn.bKey, "")
		expect(t, "revoke A's key", st, 404)
		return st, body
	},
	"POST /api/v1/me/password": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "POST", "/api/v1/me/password", tn.bSession, `{"currentPassword":"alice-password","newPassword":"taken-over-1"}`)
		expect(t, "change a password with A's member's password", st, 400)
		return st, body
	},
	"GET /api/v1/me/sessions": func(t *testing.T, tn *tenants) (int, string) {
		return raw(t, tn, "GET", "/api/v1/me/sessions", tn.bKey, "")
	},
	"DELETE /api/v1/me/sessions/{id}": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "DELETE", "/api/v1/me/sessions/"+tn.aSession, tn.bKey, "")
		expect(t, "end A's admin's session", st, 404)
		return st, body
	},
	"POST /api/v1/users/{id}/password-reset": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "POST", "/api/v1/users/"+tn.aMemberID+"/password-reset", tn.bKey, `{}`)
		expect(t, "reset A's member's password", st, 400, 404)
		st2, body2 := raw(t, tn, "POST", "/api/v1/users/alice@first.test/password-reset", tn.bKey, `{}`)
		expect(t, "reset A's member's password by email", st2, 400, 404)
		return st, body + body2
	},
	"POST /api/v1/auth/password-reset": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "POST", "/api/v1/auth/password-reset", "", `{"token":"fpr_aaaaaaaa_`+strings.Repeat("a", 40)+`","newPassword":"taken-over-1"}`)
		expect(t, "a made-up reset token", st, 401)
		return st, body
	},
	"GET /auth/sso/{account}/login": func(t *testing.T, tn *tenants) (int, string) {
		// (A's own login page redirects anyone to A's IdP by design; here: an unknown account.)
		st, body := raw(t, tn, "GET", "/auth/sso/no-such-account/login", "", "")
		expect(t, "start a login at an unknown account", st, 400)
		return st, body
	},
	"GET /auth/sso/callback": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "GET", "/auth/sso/callback?state=made-up&code=x", "", "")
		expect(t, "a made-up SSO state", st, 401)
		return st, body
	},
	"POST /auth/sso/token": func(t *testing.T, tn *tenants) (int, string) {
		// A made-up one-time code with a well-formed verifier: no session of anyone's.
		st, body := raw(t, tn, "POST", "/auth/sso/token", "", `{"code":"made-up-code","verifier":"`+strings.Repeat("v", 43)+`"}`)
		expect(t, "a made-up CLI login code", st, 401)
		return st, body
	},
	"POST /auth/sso/{account}/device": func(t *testing.T, tn *tenants) (int, string) {
		// (Anyone may ask for a device login into A, by design: it is worth nothing until a
		// member of A approves it through A's IdP. Here: an unknown account.)
		st, body := raw(t, tn, "POST", "/auth/sso/no-such-account/device", "", "")
		expect(t, "start a device login at an unknown account", st, 400)
		return st, body
	},
	"POST /auth/sso/device/token": func(t *testing.T, tn *tenants) (int, string) {
		// A made-up device code: no session of anyone's.
		st, body := raw(t, tn, "POST", "/auth/sso/device/token", tn.bKey, `{"deviceCode":"made-up-device-code"}`)
		expect(t, "poll a made-up device code", st, 401)
		if !strings.Contains(body, "expired_token") {
			t.Errorf("made-up device code: %s, want expired_token", body)
		}
		return st, body
	},
	"GET /auth/sso/device": func(t *testing.T, tn *tenants) (int, string) {
		// A made-up user code shows no one's request.
		st, body := raw(t, tn, "GET", "/auth/sso/device?user_code=BCDF-GHJK", "", "")
		expect(t, "look up a made-up user code", st, 400)
		return st, body
	},
	"DELETE /api/v1/sso": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "DELETE", "/api/v1/sso", tn.bKey, "")
		expect(t, "B deletes its own (absent) SSO", st, 404)
		return st, body
	},
	"GET /api/v1/sso": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "GET", "/api/v1/sso", tn.bKey, "")
		expect(t, "B reads its own (absent) SSO", st, 404)
		return st, body
	},
	"PUT /api/v1/sso": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "PUT", "/api/v1/sso", tn.bKey, `{"issuer":"https://idp.bravo.test","clientId":"b-client","clientSecret":"b-secret","allowedDomains":["bravo.test"]}`)
		expect(t, "B sets its own SSO", st, 200)
		return st, body
	},
	"GET /api/v1/teams": func(t *testing.T, tn *tenants) (int, string) {
		return raw(t, tn, "GET", "/api/v1/teams?limit=1000", tn.bKey, "")
	},
	"POST /api/v1/teams": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "POST", "/api/v1/teams", tn.bKey, `{"name":"b-team"}`)
		expect(t, "create a team in B", st, 201)
		return st, body
	},
	"GET /api/v1/teams/{team}": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "GET", "/api/v1/teams/"+tn.aTeam, tn.bKey, "")
		expect(t, "read A's team", st, 404)
		return st, body
	},
	"DELETE /api/v1/teams/{team}": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "DELETE", "/api/v1/teams/"+tn.aTeam, tn.bKey, "")
		expect(t, "delete A's team", st, 404)
		return st, body
	},
	"POST /api/v1/teams/{team}/members": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "POST", "/api/v1/teams/"+tn.aTeam+"/members", tn.bKey, `{"user":"eve@bravo.test"}`)
		expect(t, "join A's team", st, 404)
		// B's own team cannot take A's member either.
		st2, body2 := raw(t, tn, "POST", "/api/v1/teams/b-team/members", tn.bKey, `{"user":"`+tn.aMemberID+`"}`)
		expect(t, "put A's member in B's team", st2, 400, 404)
		return st, body + body2
	},
	"DELETE /api/v1/teams/{team}/members/{user}": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "DELETE", "/api/v1/teams/"+tn.aTeam+"/members/"+tn.aMemberID, tn.bKey, "")
		expect(t, "take A's member out of A's team", st, 404)
		return st, body
	},
	"GET /api/v1/rules": func(t *testing.T, tn *tenants) (int, string) {
		return raw(t, tn, "GET", "/api/v1/rules?limit=1000", tn.bKey, "")
	},
	"POST /api/v1/rules": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "POST", "/api/v1/rules", tn.bKey, `{"team":"`+tn.aTeam+`","action":"read","kind":"pipelines"}`)
		expect(t, "a rule for A's team", st, 400)
		st2, body2 := raw(t, tn, "POST", "/api/v1/rules", tn.bKey, `{"user":"`+tn.aMemberID+`","action":"read","kind":"pipelines"}`)
		expect(t, "a rule for A's member", st2, 400)
		return st, body + body2
	},
	"DELETE /api/v1/rules/{id}": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "DELETE", "/api/v1/rules/"+tn.aRule, tn.bKey, "")
		expect(t, "delete A's rule", st, 404)
		return st, body
	},
	"GET /api/v1/authz/explain": func(t *testing.T, tn *tenants) (int, string) {
		st, body := raw(t, tn, "GET", "/api/v1/authz/explain?action=read&resource=pipelines/"+tn.aPipeline+"&user="+tn.aMemberID, tn.bKey, "")
		expect(t, "explain for A's member", st, 400, 404)
		st2, body2 := raw(t, tn, "GET", "/api/v1/authz/explain?action=read&resource=pipelines/"+tn.aPipeline, tn.bKey, "")
		expect(t, "explain on A's pipeline", st2, 404)
		return st, body + body2
	},
	"GET /api/v1/audit": func(t *testing.T, tn *tenants) (int, string) {
		me, _ := tn.aAdmin.Me(context.Background())
		st, body := raw(t, tn, "GET", "/api/v1/audit?limit=1000&actor="+me.User.ID, tn.bKey, "")
		expect(t, "filter B's audit by A's admin", st, 200)
		st2, body2 := raw(t, tn, "GET", "/api/v1/audit?limit=1000", tn.bKey, "")
		return st2, body + body2
	},
}

// both runs every case and answers the first status with every body.
func both(cases ...restCase) restCase {
	return func(t *testing.T, tn *tenants) (int, string) {
		var st int
		var bodies []string
		for i, c := range cases {
			s, b := c(t, tn)
			if i == 0 {
				st = s
			}
			bodies = append(bodies, b)
		}
		return st, strings.Join(bodies, "\n")
	}
}

func init() {
	notFound := func(method, path, body string) restCase {
		return func(t *testing.T, tn *tenants) (int, string) {
			path = strings.NewReplacer("{project}", tn.aProject, "{pipeline}", tn.aPipeline, "{build}", tn.aBuild, "{runner}", tn.aRunner,
				"{trigger}", tn.aTrigger, "{runtime}", tn.aRuntime).Replace(path)
			st, out := raw(t, tn, method, path, tn.bKey, body)
			expect(t, method+" "+path, st, 404)
			return st, out
		}
	}
	for k, v := range map[string]restCase{
		"GET /api/v1/projects": func(t *testing.T, tn *tenants) (int, string) {
			return raw(t, tn, "GET", "/api/v1/projects", tn.bKey, "")
		},
		"GET /api/v1/projects/{project}":    notFound("GET", "/api/v1/projects/{project}", ""),
		"DELETE /api/v1/projects/{project}": notFound("DELETE", "/api/v1/projects/{project}", ""),
		// Neither A's project to B's team nor B's project to A's team (a name B can guess).
		"PUT /api/v1/projects/{project}/owner": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "PUT", "/api/v1/projects/"+tn.aProject+"/owner", tn.bKey, `{"team":"b-team"}`)
			expect(t, "give A's project to B's team", st, 404)
			raw(t, tn, "POST", "/api/v1/projects", tn.bKey, `{"name":"b-owned"}`)
			st2, out2 := raw(t, tn, "PUT", "/api/v1/projects/b-owned/owner", tn.bKey, `{"team":"`+tn.aTeam+`"}`)
			expect(t, "give B's project to A's team", st2, 400)
			return st, out + out2
		},
		"GET /api/v1/pipelines": func(t *testing.T, tn *tenants) (int, string) {
			return raw(t, tn, "GET", "/api/v1/pipelines", tn.bKey, "")
		},
		"GET /api/v1/pipelines/{pipeline}":       notFound("GET", "/api/v1/pipelines/{pipeline}", ""),
		"PUT /api/v1/pipelines/{pipeline}":       notFound("PUT", "/api/v1/pipelines/{pipeline}", `{"spec":"version: '1.0'\nsteps:\n  x:\n    commands: [\"id\"]\n"}`),
		"DELETE /api/v1/pipelines/{pipeline}":    notFound("DELETE", "/api/v1/pipelines/{pipeline}", ""),
		"POST /api/v1/pipelines/{pipeline}/runs": notFound("POST", "/api/v1/pipelines/{pipeline}/runs", `{}`),
		"GET /api/v1/builds":                     func(t *testing.T, tn *tenants) (int, string) { return raw(t, tn, "GET", "/api/v1/builds", tn.bKey, "") },
		"GET /api/v1/builds/stats":               notFound("GET", "/api/v1/builds/stats?pipeline={pipeline}", ""),
		"GET /api/v1/builds/{id}":                notFound("GET", "/api/v1/builds/{build}", ""),
		"GET /api/v1/builds/{id}/logs":           notFound("GET", "/api/v1/builds/{build}/logs?follow=1", ""),
		"POST /api/v1/builds/{id}/cancel":        notFound("POST", "/api/v1/builds/{build}/cancel", `{}`),
		"POST /api/v1/builds/{id}/restart":       notFound("POST", "/api/v1/builds/{build}/restart", `{}`),
		"POST /api/v1/builds/{id}/approve":       notFound("POST", "/api/v1/builds/{build}/approve", `{}`),
		"POST /api/v1/builds/{id}/deny":          notFound("POST", "/api/v1/builds/{build}/deny", `{}`),
		"GET /api/v1/contexts": func(t *testing.T, tn *tenants) (int, string) {
			return raw(t, tn, "GET", "/api/v1/contexts", tn.bKey, "")
		},
		"GET /api/v1/contexts/{name}": both(notFound("GET", "/api/v1/contexts/a-secret?decrypt=true", ""),
			notFound("GET", "/api/v1/contexts/a-registry?decrypt=true", ""), notFound("GET", "/api/v1/contexts/a-registry", "")),
		"PUT /api/v1/contexts/{name}": both(notFound("PUT", "/api/v1/contexts/a-secret", `{"values":{"TOKEN":"stolen"}}`),
			// Pointing A's registry (and its stored password) at B's host.
			notFound("PUT", "/api/v1/contexts/a-registry", `{"registry":{"url":"b-host.example","password":"*****","default":true}}`)),
		"DELETE /api/v1/contexts/{name}":             both(notFound("DELETE", "/api/v1/contexts/a-secret", ""), notFound("DELETE", "/api/v1/contexts/a-registry", "")),
		"GET /api/v1/pipelines/{pipeline}/triggers":  notFound("GET", "/api/v1/pipelines/{pipeline}/triggers", ""),
		"POST /api/v1/pipelines/{pipeline}/triggers": notFound("POST", "/api/v1/pipelines/{pipeline}/triggers", `{"type":"cron","expression":"@hourly"}`),
		"DELETE /api/v1/triggers/{id}":               notFound("DELETE", "/api/v1/triggers/{trigger}", ""),
		"POST /api/v1/webhooks/{provider}/{trigger}": func(t *testing.T, tn *tenants) (int, string) {
			// A delivery for A's trigger signed with a wrong secret queues nothing.
			body := `{"ref":"refs/heads/main","after":"` + strings.Repeat("a", 40) + `","repository":{"full_name":"acme/app"}}`
			st, out, _ := call(t, "POST", tn.s.URL+"/api/v1/webhooks/github/"+tn.aTrigger, "", []byte(body),
				"X-GitHub-Event", "push", "X-GitHub-Delivery", "d-1", "X-Hub-Signature-256", "sha256="+strings.Repeat("0", 64))
			expect(t, "forged delivery", st, 401)
			j, _ := json.Marshal(out)
			return st, string(j)
		},
		"POST /api/v1/pipelines/lint": func(t *testing.T, tn *tenants) (int, string) {
			return raw(t, tn, "POST", "/api/v1/pipelines/lint", tn.bKey, `{"spec":"version: '1.0'\nsteps:\n  a:\n    type: deplyo\n"}`)
		},
		"GET /api/v1/runtimes": func(t *testing.T, tn *tenants) (int, string) {
			return raw(t, tn, "GET", "/api/v1/runtimes", tn.bKey, "")
		},
		"GET /api/v1/runtimes/{runtime}":        notFound("GET", "/api/v1/runtimes/{runtime}", ""),
		"DELETE /api/v1/runtimes/{runtime}":     notFound("DELETE", "/api/v1/runtimes/{runtime}", ""),
		"POST /api/v1/runtimes/{runtime}/token": notFound("POST", "/api/v1/runtimes/{runtime}/token", `{}`),
		"PUT /api/v1/runtimes/{runtime}/owner":  notFound("PUT", "/api/v1/runtimes/{runtime}/owner", `{"team":""}`),
		"POST /api/v1/runtimes": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "POST", "/api/v1/runtimes", tn.bKey, `{"name":"a-runtime"}`)
			expect(t, "B's own runtime named like A's", st, 201)
			return st, out
		},
		"POST /api/v1/runtimes/hosted": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "POST", "/api/v1/runtimes/hosted", tn.bKey, `{"name":"b-hosted"}`)
			expect(t, "B's own hosted runtime", st, 201)
			return st, out
		},
		"GET /api/v1/archived-workflows": func(t *testing.T, tn *tenants) (int, string) {
			st, body := raw(t, tn, "GET", "/api/v1/archived-workflows", tn.bKey, "")
			expect(t, "B's archive", st, 200)
			if st2, _ := raw(t, tn, "GET", "/api/v1/archived-workflows?runtime="+tn.aRuntime, tn.bKey, ""); st2 != 404 {
				t.Errorf("B lists A's runtime's archive: %d", st2)
			}
			return st, body
		},
		"GET /api/v1/archived-workflows/stats": func(t *testing.T, tn *tenants) (int, string) {
			st, body := raw(t, tn, "GET", "/api/v1/archived-workflows/stats?days=90", tn.bKey, "")
			expect(t, "B's workflow run statistics", st, 200)
			if strings.Contains(body, `"succeeded":1`) {
				t.Errorf("B's statistics count A's workflow: %s", body)
			}
			return st, body
		},
		"GET /api/v1/archived-workflows/{id}": func(t *testing.T, tn *tenants) (int, string) {
			st, body := raw(t, tn, "GET", "/api/v1/archived-workflows/"+aWorkflowUID, tn.bKey, "")
			expect(t, "A's archived workflow by UID", st, 404)
			return st, body
		},
		"GET /api/v1/helm-releases": func(t *testing.T, tn *tenants) (int, string) {
			st, body := raw(t, tn, "GET", "/api/v1/helm-releases?namespace=a-helm-ns", tn.bKey, "")
			expect(t, "B's Helm releases", st, 200)
			if st2, _ := raw(t, tn, "GET", "/api/v1/helm-releases?runtime="+tn.aRuntime, tn.bKey, ""); st2 != 404 {
				t.Errorf("B lists A's runtime's Helm releases: %d", st2)
			}
			return st, body
		},
		"GET /api/v1/helm-releases/{namespace}/{name}": func(t *testing.T, tn *tenants) (int, string) {
			st, body := raw(t, tn, "GET", "/api/v1/helm-releases/a-helm-ns/a-secret-release", tn.bKey, "")
			expect(t, "A's Helm release", st, 404)
			return st, body
		},
		"GET /api/v1/deployments": func(t *testing.T, tn *tenants) (int, string) {
			return raw(t, tn, "GET", "/api/v1/deployments?runtime="+tn.aRuntime+"&since=3650d", tn.bKey, "")
		},
		"GET /api/v1/dora": func(t *testing.T, tn *tenants) (int, string) {
			st, body := raw(t, tn, "GET", "/api/v1/dora?runtime="+tn.aRuntime+"&since=2023-11-01T00:00:00Z&until=2023-12-01T00:00:00Z", tn.bKey, "")
			if st == 200 && !strings.Contains(body, `"deployments":0`) {
				t.Errorf("B's DORA report over A's runtime counts deployments: %s", body)
			}
			return st, body
		},
		"GET /api/v1/images": func(t *testing.T, tn *tenants) (int, string) {
			st, body := raw(t, tn, "GET", "/api/v1/images?limit=1000", tn.bKey, "")
			if st2, body2 := raw(t, tn, "GET", "/api/v1/images?digest="+aReportedDigest, tn.bKey, ""); st2 != 200 || strings.Contains(body2, aReportedDigest) {
				t.Errorf("B's images of A's digest: %d %s", st2, body2)
			}
			return st, body
		},
		"POST /api/v1/images": func(t *testing.T, tn *tenants) (int, string) {
			// B reports an image with A's digest: its own row; A's keeps its commit and issues.
			st, out := raw(t, tn, "POST", "/api/v1/images", tn.bKey, `{"image":"ghcr.io/b/web@`+aReportedDigest+`","commit":"bbbbbbb","issues":["BEE-1"]}`)
			expect(t, "B's own image report", st, 200)
			return st, out
		},
		"GET /api/v1/issue-trackers": func(t *testing.T, tn *tenants) (int, string) {
			return raw(t, tn, "GET", "/api/v1/issue-trackers", tn.bKey, "")
		},
		"POST /api/v1/issue-trackers": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "POST", "/api/v1/issue-trackers", tn.bKey, `{"name":"b-tracker","kind":"gitlab"}`)
			expect(t, "B's own tracker", st, 201)
			return st, out
		},
		"DELETE /api/v1/issue-trackers/{name}": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "DELETE", "/api/v1/issue-trackers/"+aTracker, tn.bKey, "")
			expect(t, "deleting A's tracker", st, 404)
			return st, out
		},
		"GET /api/v1/environments": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "GET", "/api/v1/environments", tn.bKey, "")
			expect(t, "B's own environments", st, 200)
			return st, out
		},
		"POST /api/v1/environments": func(t *testing.T, tn *tenants) (int, string) {
			// B may name an environment like A's: names are per account.
			st, out := raw(t, tn, "POST", "/api/v1/environments", tn.bKey, `{"name":"`+aEnvironment+`","kind":"non-prod","targets":[{"cluster":"b-cluster"}]}`)
			expect(t, "B's environment named like A's", st, 201)
			return st, strings.ReplaceAll(out, aEnvironment, "(b's own)")
		},
		"GET /api/v1/environments/{name}": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "GET", "/api/v1/environments/a-secret-env-other", tn.bKey, "")
			expect(t, "reading an environment B has not", st, 404)
			return st, out
		},
		"PUT /api/v1/environments/{name}": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "PUT", "/api/v1/environments/"+aEnvironment+"x", tn.bKey, `{"kind":"prod","targets":[{"cluster":"b-cluster"}]}`)
			expect(t, "updating an environment B has not", st, 404)
			return st, out
		},
		"DELETE /api/v1/environments/{name}": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "DELETE", "/api/v1/environments/a-secret-env-other", tn.bKey, "")
			expect(t, "deleting an environment B has not", st, 404)
			return st, out
		},
		"GET /api/v1/products": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "GET", "/api/v1/products", tn.bKey, "")
			expect(t, "B's own products", st, 200)
			return st, out
		},
		"POST /api/v1/products": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "POST", "/api/v1/products", tn.bKey, `{"name":"b-product","patterns":["b-*"]}`)
			expect(t, "B's own product", st, 201)
			return st, out
		},
		"GET /api/v1/products/{name}": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "GET", "/api/v1/products/"+aProduct, tn.bKey, "")
			expect(t, "reading A's product", st, 404)
			st2, out2 := raw(t, tn, "GET", "/api/v1/products/a-annotated-product", tn.bKey, "")
			expect(t, "reading the product A's application names", st2, 404)
			return st, out + out2
		},
		"PUT /api/v1/products/{name}": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "PUT", "/api/v1/products/"+aProduct, tn.bKey, `{"patterns":["b-*"]}`)
			expect(t, "replacing A's product", st, 404)
			return st, out
		},
		"DELETE /api/v1/products/{name}": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "DELETE", "/api/v1/products/"+aProduct, tn.bKey, "")
			expect(t, "deleting A's product", st, 404)
			return st, out
		},
		"GET /api/v1/hub/templates": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "GET", "/api/v1/hub/templates", tn.bKey, "")
			expect(t, "B's own catalogue", st, 200)
			return st, out
		},
		"GET /api/v1/hub/templates/{name}": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "GET", "/api/v1/hub/templates/git-clone", tn.bKey, "")
			expect(t, "a builtin template", st, 200)
			return st, out
		},
		"POST /api/v1/hub/templates/{name}/use": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "POST", "/api/v1/hub/templates/git-clone/use", tn.bKey, `{"runtime":"a-rt","gitSource":"a-source"}`)
			expect(t, "using a template on A's runtime", st, 404)
			return st, out
		},
		"GET /api/v1/hub/sources": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "GET", "/api/v1/hub/sources", tn.bKey, "")
			expect(t, "B's own hub sources", st, 200)
			return st, out
		},
		"POST /api/v1/hub/sources": func(t *testing.T, tn *tenants) (int, string) {
			// B's source named like A's: names are per account (the URL is refused by policy).
			st, out := raw(t, tn, "POST", "/api/v1/hub/sources", tn.bKey, `{"name":"`+aHubSource+`","url":"http://127.0.0.1:1/b.git"}`)
			expect(t, "B's hub source on loopback", st, 400)
			return st, strings.ReplaceAll(out, aHubSource, "(b's own)")
		},
		"DELETE /api/v1/hub/sources/{name}": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "DELETE", "/api/v1/hub/sources/"+aHubSource, tn.bKey, "")
			expect(t, "deleting A's hub source", st, 404)
			return st, out
		},
		"GET /api/v1/notifications/channels": func(t *testing.T, tn *tenants) (int, string) {
			return raw(t, tn, "GET", "/api/v1/notifications/channels", tn.bKey, "")
		},
		"POST /api/v1/notifications/channels": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "POST", "/api/v1/notifications/channels", tn.bKey, `{"name":"b-channel","kind":"webhook","url":"https://b-hook.example/in"}`)
			expect(t, "B's own channel", st, 201)
			return st, out
		},
		"DELETE /api/v1/notifications/channels/{name}": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "DELETE", "/api/v1/notifications/channels/"+aChannel, tn.bKey, "")
			expect(t, "deleting A's channel", st, 404)
			return st, out
		},
		"POST /api/v1/notifications/channels/{name}/test": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "POST", "/api/v1/notifications/channels/"+aChannel+"/test", tn.bKey, "")
			expect(t, "testing A's channel", st, 404)
			return st, out
		},
		"GET /api/v1/notifications/subscriptions": func(t *testing.T, tn *tenants) (int, string) {
			return raw(t, tn, "GET", "/api/v1/notifications/subscriptions", tn.bKey, "")
		},
		"POST /api/v1/notifications/subscriptions": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "POST", "/api/v1/notifications/subscriptions", tn.bKey, `{"channel":"`+aChannel+`","events":["deployment"]}`)
			expect(t, "subscribing A's channel", st, 400)
			return st, out
		},
		"DELETE /api/v1/notifications/subscriptions/{id}": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "DELETE", "/api/v1/notifications/subscriptions/"+tn.aSubscription, tn.bKey, "")
			expect(t, "deleting A's subscription", st, 404)
			return st, out
		},
		"GET /api/v1/notifications/deliveries": func(t *testing.T, tn *tenants) (int, string) {
			return raw(t, tn, "GET", "/api/v1/notifications/deliveries?channel="+aChannel, tn.bKey, "")
		},
		"GET /api/v1/runners": func(t *testing.T, tn *tenants) (int, string) {
			return raw(t, tn, "GET", "/api/v1/runners", tn.bKey, "")
		},
		"POST /api/v1/runners/{id}/drain": notFound("POST", "/api/v1/runners/{runner}/drain", `{}`),
		"DELETE /api/v1/runners/{id}":     notFound("DELETE", "/api/v1/runners/{runner}", ""),
		"POST /api/v1/projects": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "POST", "/api/v1/projects", tn.bKey, `{"name":"alpha"}`)
			expect(t, "B's own project named like A's", st, 201)
			return st, out
		},
		"POST /api/v1/pipelines": func(t *testing.T, tn *tenants) (int, string) {
			body := fmt.Sprintf(`{"project":%q,"name":"steal","spec":%q,"config":{"contexts":["a-secret"]}}`, tn.aProject, isolationSpec)
			st, out := raw(t, tn, "POST", "/api/v1/pipelines", tn.bKey, body)
			expect(t, "a pipeline in A's project", st, 400, 404)
			return st, out
		},
		"POST /api/v1/contexts": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "POST", "/api/v1/contexts", tn.bKey, `{"name":"b-secret","type":"secret","values":{"TOKEN":"b-own"}}`)
			expect(t, "B's own context", st, 201)
			// B's own default registry: A's stays A's default (unchanged checks).
			st2, out2 := raw(t, tn, "POST", "/api/v1/contexts", tn.bKey, `{"name":"b-registry","type":"registry","registry":{"url":"b-registry.example","default":true}}`)
			expect(t, "B's own default registry", st2, 201)
			return st, out + out2
		},
		"POST /api/v1/runners": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "POST", "/api/v1/runners", tn.bKey, `{"name":"a-runner"}`)
			expect(t, "B's own runner named like A's", st, 201)
			return st, out
		},
		"GET /api/v1/gitops/webhook": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "GET", "/api/v1/gitops/webhook", tn.bKey, "")
			expect(t, "B's own GitOps webhook", st, 200)
			return st, out
		},
		"POST /api/v1/gitops/webhook": func(t *testing.T, tn *tenants) (int, string) {
			st, out := raw(t, tn, "POST", "/api/v1/gitops/webhook", tn.bKey, `{"secret":"b-own-secret-0123456789"}`)
			expect(t, "B sets its own GitOps webhook secret", st, 200)
			return st, out
		},
		"POST /api/v1/webhooks/gitops/{provider}/{account}": func(t *testing.T, tn *tenants) (int, string) {
			// Deliveries to A's GitOps webhook signed with a wrong secret, and with B's own.
			raw(t, tn, "POST", "/api/v1/gitops/webhook", tn.bKey, `{"secret":"b-own-secret-0123456789"}`)
			body := []byte(`{"ref":"refs/heads/main","after":"` + strings.Repeat("a", 40) + `","repository":{"full_name":"acme/app","clone_url":"https://git.example/acme/app.git"}}`)
			var st int
			var out map[string]any
			for _, secret := range []string{"wrong-secret-0123456789", "b-own-secret-0123456789"} {
				st, out, _ = call(t, "POST", tn.s.URL+"/api/v1/webhooks/gitops/github/"+tn.aAccount, "", body,
					"X-GitHub-Event", "push", "X-GitHub-Delivery", "d-1", "X-Hub-Signature-256", githubSignature(body, secret))
				expect(t, "forged GitOps delivery", st, 401)
			}
			j, _ := json.Marshal(out)
			return st, string(j)
		},
	} {
		restCases[k] = v
	}
}

// gqlCases attack each GraphQL query field from account B.
var gqlCases = map[string]string{
	"hubTemplates":     `{ hubTemplates { name source versions } }`,
	"hubTemplate":      `{ builtin: hubTemplate(name: "git-clone") { name version parameters { name default required } } a: hubTemplate(name: "a-secret-template") { name } }`,
	"products":         `{ products { name patterns defined applications createdAt } }`,
	"helmReleases":     `{ all: helmReleases { id name chart runtime } ns: helmReleases(namespace: "a-helm-ns", cluster: "in-cluster") { id name chart history { revision } } }`,
	"workflowRunStats": `{ workflowRunStats(days: 90) { since days { date succeeded failed error } } }`,
	"helmRelease":      `{ helmRelease(namespace: "a-helm-ns", name: "a-secret-release") { id name chart history { revision chart } } }`,
	"images":           `{ all: images(first: 1000) { nodes { id repository digest tags commit { sha message } issues { key title } } } byCommit: images(filter: {commit: "aaaaaaa"}) { nodes { id } } }`,
	"product":          `{ a: product(name: "a-secret-product") { name patterns } b: product(name: "a-annotated-product") { name environments { name applications { name } } } }`,
	"me":               `{ me { user { id email } account { id name } role accounts { id name role } invitations { id account { id name } role invitedBy } } }`,
	"account":          `{ account { id name createdAt } }`,
	"users":            `{ users(first: 1000) { nodes { id email name role } pageInfo { endCursor hasNextPage } } }`,
	"apiKeys":          `{ apiKeys(first: 1000) { nodes { id name prefix userId } } }`,
	"auditEvents":      `{ auditEvents(first: 1000) { nodes { id actor actorId action resourceId detail } } }`,
	"teams":            `{ teams(first: 1000) { nodes { id name members { userId email } } } }`,
	"sessions":         `{ sessions { id account { id name } current } }`,
	"rules":            `{ rules(first: 1000) { nodes { id team user action kind runtime summary } } }`,
	// B's own decisions name nothing of A's rules (A's rule governs gitsources in A only); asking
	// about A's member or A's pipeline is refused (the REST case checks how).
	"authzExplain": `{ gitsources: authzExplain(action: "read", resource: "gitsources/a-rt-attr") { allowed governed reasons rule }
		clusters: authzExplain(action: "delete", resource: "clusters/x") { allowed governed reasons } }`,
	"runtimes": `{ runtimes { id name type status components { name health } clusters { name server } } }`,
	"runtime":  `{ byName: runtime(name: "a-runtime") { id name } byID: runtime(name: "RUNTIME_ID") { id name } }`,
	"applications": `{ all: applications(first: 500) { nodes { id name runtime runtimeId project repoUrl labels { key value } } }
		byRuntime: applications(filter: {runtime: "RUNTIME_ID"}) { nodes { id name } }
		byName: applications(filter: {runtime: "a-runtime", labels: ["a-team-label=a-payments"], search: "shop"}) { nodes { id name } } }`,
	"applicationCounts": `{ all: applicationCounts { total health { status count } sync { status count } }
		byRuntime: applicationCounts(filter: {runtime: "RUNTIME_ID"}) { total } }`,
	"application": `{ byName: application(runtime: "a-runtime", name: "a-shop-web") { id name repoUrl history { nodes { id } } tree { uid } }
		byID: application(runtime: "RUNTIME_ID", name: "a-shop-web") { id name repoUrl history { nodes { id } } tree { uid } } }`,
	"deployments": `{ all: deployments(first: 1000, filter: {since: "3650d"}) { nodes { id application runtime project } }
		byRuntime: deployments(filter: {runtime: "RUNTIME_ID", application: "a-shop-web", since: "3650d"}) { nodes { id } } }`,
	"dora": `{ dora(filter: {runtime: "RUNTIME_ID", since: "2023-11-01T00:00:00Z", until: "2023-12-01T00:00:00Z"}) { deployments successful
		deploymentFrequency { value band } series { start deployments incidents openIncidents timeToRestoreSeconds } } }`,
}

func TestTenantIsolation(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) { testTenantIsolation(t, d) })
	}
}

func testTenantIsolation(t *testing.T, d store.Dialect) {
	tn := setupTenants(t, d)
	ctx := context.Background()

	// Every REST route must have a case: a new route cannot skip this test.
	var routes []string
	for _, r := range tn.s.Routes() {
		routes = append(routes, r.Method+" "+r.Path)
	}
	sort.Strings(routes)
	for _, key := range routes {
		t.Run("rest "+key, func(t *testing.T) {
			c, ok := restCases[key]
			if !ok {
				t.Fatalf("route %s has no tenant-isolation case: add one to restCases", key)
			}
			status, body := c(t, tn)
			if status >= 500 {
				t.Errorf("status %d: %s", status, body)
			}
			tn.leak(t, key, body)
			tn.unchanged(t)
		})
	}
	for key := range restCases {
		if !contains(routes, key) {
			t.Errorf("restCases has %s, which is not a route", key)
		}
	}

	// Every GraphQL query (and mutation) field must have a case.
	var schema struct {
		Schema struct {
			QueryType    struct{ Fields []struct{ Name string } }
			MutationType *struct{ Fields []struct{ Name string } }
		} `json:"__schema"`
	}
	if err := tn.s.Client(tn.bKey).GraphQL(ctx, `{ __schema { queryType { fields { name } } mutationType { fields { name } } } }`, nil, &schema); err != nil {
		t.Fatal(err)
	}
	fields := schema.Schema.QueryType.Fields
	if m := schema.Schema.MutationType; m != nil {
		fields = append(fields, m.Fields...)
	}
	if len(fields) == 0 {
		t.Fatal("introspection found no fields")
	}
	for _, f := range fields {
		t.Run("graphql "+f.Name, func(t *testing.T) {
			q, ok := gqlCases[f.Name]
			if !ok {
				t.Fatalf("GraphQL field %s has no tenant-isolation case: add one to gqlCases", f.Name)
			}
			q = strings.ReplaceAll(q, "RUNTIME_ID", tn.aRuntime)
			tn.sent = append(tn.sent, q)
			var out json.RawMessage
			err := tn.s.Client(tn.bKey).GraphQL(ctx, q, nil, &out)
			if err != nil {
				t.Fatalf("query %s: %v", f.Name, err)
			}
			tn.leak(t, "graphql "+f.Name, string(out))
			if (f.Name == "runtime" || f.Name == "application") && !strings.Contains(string(out), `"byID":null`) {
				t.Errorf("B reads A's %s by ID: %s", f.Name, out)
			}
			if f.Name == "applications" && strings.Count(string(out), `"nodes":[]`) != 3 {
				t.Errorf("B lists A's applications: %s", out)
			}
			if (f.Name == "deployments" && strings.Count(string(out), `"nodes":[]`) != 2) || (f.Name == "dora" && !strings.Contains(string(out), `"deployments":0`)) {
				t.Errorf("B reads A's deployments: %s", out)
			}
			if (f.Name == "workflowRunStats" && (strings.Contains(string(out), `"succeeded":1`) || !strings.Contains(string(out), `"succeeded":0`))) ||
				(f.Name == "helmReleases" && strings.Count(string(out), `[]`) != 2) || (f.Name == "helmRelease" && !strings.Contains(string(out), `"helmRelease":null`)) ||
				(f.Name == "images" && !strings.Contains(string(out), `"byCommit":{"nodes":[]}`)) {
				t.Errorf("B reads A's %s: %s", f.Name, out)
			}
			if f.Name == "applicationCounts" && strings.Count(string(out), `"total":0`) != 2 {
				t.Errorf("B counts A's applications: %s", out)
			}
			tn.unchanged(t)
		})
	}
	// A itself counts its applications (the attacks above counted none).
	var counts struct {
		ApplicationCounts struct {
			Total  int
			Health []struct {
				Status string
				Count  int
			}
		}
	}
	if err := tn.aAdmin.GraphQL(ctx, `{ applicationCounts { total health { status count } } }`, nil, &counts); err != nil || counts.ApplicationCounts.Total == 0 ||
		len(counts.ApplicationCounts.Health) == 0 || counts.ApplicationCounts.Health[0].Count == 0 {
		t.Errorf("A's application counts: %+v, %v", counts, err)
	}
	// A's audit log records nothing B did, and B's probes changed nothing there.
	audit, err := tn.aAdmin.ListAudit(ctx, client.AuditFilter{ListOptions: client.ListOptions{Limit: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range audit.Items {
		if strings.Contains(e.Actor, "eve@") {
			t.Errorf("A's audit log has B's action %+v", e)
		}
	}
}

// sameKeys reports whether two JSON objects have the same fields.
func sameKeys(a, b string) bool {
	var x, y map[string]any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return slices.Equal(slices.Sorted(maps.Keys(x)), slices.Sorted(maps.Keys(y)))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
