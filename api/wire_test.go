package api_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/testenv/fill"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/wire")

// wireDir holds one golden file per wire type: {"full": every field set, "zero": the zero
// value, i.e. the fields that are always sent}. The web UI's TypeScript types are checked
// against the same files (web/src/api/wire.test.ts), so a field added, renamed or removed on
// either side fails a test.
const wireDir = "testdata/wire"

// wireTypes are the JSON types of the REST API (client/, which the server encodes) and of the
// app-proxy (api/appproxyv1), by package and name.
var wireTypes = map[string]any{
	"client.Account":                               client.Account{},
	"client.AccountMembership":                     client.AccountMembership{},
	"client.User":                                  client.User{},
	"client.Me":                                    client.Me{},
	"client.Invitation":                            client.Invitation{},
	"client.APIKey":                                client.APIKey{},
	"client.CreatedAPIKey":                         client.CreatedAPIKey{},
	"client.AuditEvent":                            client.AuditEvent{},
	"client.List":                                  client.List[client.Account]{},
	"client.LoginRequest":                          client.LoginRequest{},
	"client.LoginResponse":                         client.LoginResponse{},
	"client.CreateAccountRequest":                  client.CreateAccountRequest{},
	"client.SwitchAccountRequest":                  client.SwitchAccountRequest{},
	"client.CreateUserRequest":                     client.CreateUserRequest{},
	"client.CreatedUser":                           client.CreatedUser{},
	"client.UpdateUserRequest":                     client.UpdateUserRequest{},
	"client.CreateAPIKeyRequest":                   client.CreateAPIKeyRequest{},
	"client.Runtime":                               client.Runtime{},
	"client.RuntimeRefusal":                        client.RuntimeRefusal{},
	"client.RuntimeComponent":                      client.RuntimeComponent{},
	"client.RuntimeCluster":                        client.RuntimeCluster{},
	"client.VersionSkew":                           client.VersionSkew{},
	"client.RegisterRuntimeRequest":                client.RegisterRuntimeRequest{},
	"client.RegisteredRuntime":                     client.RegisteredRuntime{},
	"client.Project":                               client.Project{},
	"client.ProjectRequest":                        client.ProjectRequest{},
	"client.PipelineConfig":                        client.PipelineConfig{},
	"client.Variable":                              client.Variable{},
	"client.Pipeline":                              client.Pipeline{},
	"client.PipelineRequest":                       client.PipelineRequest{},
	"client.RunRequest":                            client.RunRequest{},
	"client.LintIssue":                             client.LintIssue{},
	"client.LintResult":                            client.LintResult{},
	"client.Build":                                 client.Build{},
	"client.Step":                                  client.Step{},
	"client.Image":                                 client.Image{},
	"client.RestartRequest":                        client.RestartRequest{},
	"client.ApprovalRequest":                       client.ApprovalRequest{},
	"client.Context":                               client.Context{},
	"client.ContextRequest":                        client.ContextRequest{},
	"client.RegistryContext":                       client.RegistryContext{},
	"client.GitContext":                            client.GitContext{},
	"client.Runner":                                client.Runner{},
	"client.RegisterRunnerRequest":                 client.RegisterRunnerRequest{},
	"client.RegisteredRunner":                      client.RegisteredRunner{},
	"client.GitTrigger":                            client.GitTrigger{},
	"client.Trigger":                               client.Trigger{},
	"client.TriggerRequest":                        client.TriggerRequest{},
	"client.CreatedTrigger":                        client.CreatedTrigger{},
	"client.Team":                                  client.Team{},
	"client.TeamOwns":                              client.TeamOwns{},
	"client.SetOwnerRequest":                       client.SetOwnerRequest{},
	"client.SSOConfig":                             client.SSOConfig{},
	"client.SSOConfigRequest":                      client.SSOConfigRequest{},
	"client.SSOTokenRequest":                       client.SSOTokenRequest{},
	"client.DeviceAuthorization":                   client.DeviceAuthorization{},
	"client.DeviceTokenRequest":                    client.DeviceTokenRequest{},
	"client.TeamMember":                            client.TeamMember{},
	"client.CreateTeamRequest":                     client.CreateTeamRequest{},
	"client.TeamMemberRequest":                     client.TeamMemberRequest{},
	"client.Rule":                                  client.Rule{},
	"client.CreateRuleRequest":                     client.CreateRuleRequest{},
	"client.AuthzExplanation":                      client.AuthzExplanation{},
	"client.ChangePasswordRequest":                 client.ChangePasswordRequest{},
	"client.PasswordResetToken":                    client.PasswordResetToken{},
	"client.ResetPasswordRequest":                  client.ResetPasswordRequest{},
	"client.Session":                               client.Session{},
	"client.Deployment":                            client.Deployment{},
	"client.DeploymentCommit":                      client.DeploymentCommit{},
	"client.DeployedImage":                         client.DeployedImage{},
	"client.DeployedCommit":                        client.DeployedCommit{},
	"client.DeploymentCommitRange":                 client.DeploymentCommitRange{},
	"client.ImageCommit":                           client.ImageCommit{},
	"client.ImageIssue":                            client.ImageIssue{},
	"client.ReportedImage":                         client.ReportedImage{},
	"client.ReportImageRequest":                    client.ReportImageRequest{},
	"client.IssueTracker":                          client.IssueTracker{},
	"client.CreateIssueTrackerRequest":             client.CreateIssueTrackerRequest{},
	"client.EnvironmentTarget":                     client.EnvironmentTarget{},
	"client.Environment":                           client.Environment{},
	"client.EnvironmentRequest":                    client.EnvironmentRequest{},
	"client.Product":                               client.Product{},
	"client.CreateProductRequest":                  client.CreateProductRequest{},
	"client.ProductImage":                          client.ProductImage{},
	"client.ProductApplication":                    client.ProductApplication{},
	"client.ProductEnvironment":                    client.ProductEnvironment{},
	"client.ProductImageChange":                    client.ProductImageChange{},
	"client.ProductPromotion":                      client.ProductPromotion{},
	"client.ProductView":                           client.ProductView{},
	"client.HubParameter":                          client.HubParameter{},
	"client.HubEntry":                              client.HubEntry{},
	"client.HubTemplate":                           client.HubTemplate{},
	"client.HubTemplateDetail":                     client.HubTemplateDetail{},
	"client.HubSource":                             client.HubSource{},
	"client.HubCatalogue":                          client.HubCatalogue{},
	"client.HubSourceRequest":                      client.HubSourceRequest{},
	"client.HubUseRequest":                         client.HubUseRequest{},
	"client.HubUseResult":                          client.HubUseResult{},
	"client.NotificationChannel":                   client.NotificationChannel{},
	"client.NotificationSMTP":                      client.NotificationSMTP{},
	"client.CreateNotificationChannelRequest":      client.CreateNotificationChannelRequest{},
	"client.NotificationSubscription":              client.NotificationSubscription{},
	"client.CreateNotificationSubscriptionRequest": client.CreateNotificationSubscriptionRequest{},
	"client.NotificationDelivery":                  client.NotificationDelivery{},
	"client.NotificationAttempt":                   client.NotificationAttempt{},
	"client.DORAMetric":                            client.DORAMetric{},
	"client.DORABucket":                            client.DORABucket{},
	"client.DORAReport":                            client.DORAReport{},
	"client.BuildStats":                            client.BuildStats{},
	"client.BuildStatsDay":                         client.BuildStatsDay{},
	"client.WorkflowRunStats":                      client.WorkflowRunStats{},
	"client.WorkflowRunDay":                        client.WorkflowRunDay{},
	"client.PipelineBuildStats":                    client.PipelineBuildStats{},
	"client.Plan":                                  client.Plan{},
	"client.PlanLimit":                             client.PlanLimit{},
	"client.Usage":                                 client.Usage{},
	"client.UsageDay":                              client.UsageDay{},
	"client.HelmRelease":                           client.HelmRelease{},
	"client.HelmRevision":                          client.HelmRevision{},

	"appproxyv1.List":                          appproxyv1.List[appproxyv1.Cluster]{},
	"appproxyv1.Application":                   appproxyv1.Application{},
	"appproxyv1.ApplicationManifest":           appproxyv1.ApplicationManifest{},
	"appproxyv1.AppMetadata":                   appproxyv1.AppMetadata{},
	"appproxyv1.AppSpec":                       appproxyv1.AppSpec{},
	"appproxyv1.AppSource":                     appproxyv1.AppSource{},
	"appproxyv1.AppDestination":                appproxyv1.AppDestination{},
	"appproxyv1.AppSyncPolicy":                 appproxyv1.AppSyncPolicy{},
	"appproxyv1.AppSyncPolicyAutomated":        appproxyv1.AppSyncPolicyAutomated{},
	"appproxyv1.AppIgnoreDifferences":          appproxyv1.AppIgnoreDifferences{},
	"appproxyv1.AppInfo":                       appproxyv1.AppInfo{},
	"appproxyv1.AppStatus":                     appproxyv1.AppStatus{},
	"appproxyv1.Health":                        appproxyv1.Health{},
	"appproxyv1.CommitInfo":                    appproxyv1.CommitInfo{},
	"appproxyv1.CommitRange":                   appproxyv1.CommitRange{},
	"appproxyv1.SourceLocation":                appproxyv1.SourceLocation{},
	"appproxyv1.AppCondition":                  appproxyv1.AppCondition{},
	"appproxyv1.ResourceKey":                   appproxyv1.ResourceKey{},
	"appproxyv1.AppResource":                   appproxyv1.AppResource{},
	"appproxyv1.ResourceDiff":                  appproxyv1.ResourceDiff{},
	"appproxyv1.SyncRequest":                   appproxyv1.SyncRequest{},
	"appproxyv1.SyncResult":                    appproxyv1.SyncResult{},
	"appproxyv1.ResourceResult":                appproxyv1.ResourceResult{},
	"appproxyv1.HookResult":                    appproxyv1.HookResult{},
	"appproxyv1.HistoryEntry":                  appproxyv1.HistoryEntry{},
	"appproxyv1.RollbackRequest":               appproxyv1.RollbackRequest{},
	"appproxyv1.RollbackResult":                appproxyv1.RollbackResult{},
	"appproxyv1.AutoSyncRequest":               appproxyv1.AutoSyncRequest{},
	"appproxyv1.TerminateResult":               appproxyv1.TerminateResult{},
	"appproxyv1.TreeNode":                      appproxyv1.TreeNode{},
	"appproxyv1.TreeNetwork":                   appproxyv1.TreeNetwork{},
	"appproxyv1.ResourceDetail":                appproxyv1.ResourceDetail{},
	"appproxyv1.ResourceEvent":                 appproxyv1.ResourceEvent{},
	"appproxyv1.RestartResult":                 appproxyv1.RestartResult{},
	"appproxyv1.Rollout":                       appproxyv1.Rollout{},
	"appproxyv1.RolloutDetail":                 appproxyv1.RolloutDetail{},
	"appproxyv1.RolloutStep":                   appproxyv1.RolloutStep{},
	"appproxyv1.RolloutRevision":               appproxyv1.RolloutRevision{},
	"appproxyv1.AnalysisRun":                   appproxyv1.AnalysisRun{},
	"appproxyv1.AnalysisMetric":                appproxyv1.AnalysisMetric{},
	"appproxyv1.Measurement":                   appproxyv1.Measurement{},
	"appproxyv1.RolloutPromoteRequest":         appproxyv1.RolloutPromoteRequest{},
	"appproxyv1.RolloutUndoRequest":            appproxyv1.RolloutUndoRequest{},
	"appproxyv1.NotifyRequest":                 appproxyv1.NotifyRequest{},
	"appproxyv1.Sensor":                        appproxyv1.Sensor{},
	"appproxyv1.SensorDependency":              appproxyv1.SensorDependency{},
	"appproxyv1.SensorTrigger":                 appproxyv1.SensorTrigger{},
	"appproxyv1.EventCondition":                appproxyv1.EventCondition{},
	"appproxyv1.EventSource":                   appproxyv1.EventSource{},
	"appproxyv1.EventSourceEvent":              appproxyv1.EventSourceEvent{},
	"appproxyv1.DeliveryPipelineCommitRequest": appproxyv1.DeliveryPipelineCommitRequest{},
	"appproxyv1.PipelineEvent":                 appproxyv1.PipelineEvent{},
	"appproxyv1.DeliveryPipelineCommit":        appproxyv1.DeliveryPipelineCommit{},
	"appproxyv1.WorkflowArtifact":              appproxyv1.WorkflowArtifact{},
	"appproxyv1.NotifyResult":                  appproxyv1.NotifyResult{},
	"appproxyv1.GitSource":                     appproxyv1.GitSource{},
	"appproxyv1.GitSourceMetadata":             appproxyv1.GitSourceMetadata{},
	"appproxyv1.GitSourceSpec":                 appproxyv1.GitSourceSpec{},
	"appproxyv1.ProviderRepo":                  appproxyv1.ProviderRepo{},
	"appproxyv1.Cluster":                       appproxyv1.Cluster{},
	"appproxyv1.ClusterCredential":             appproxyv1.ClusterCredential{},
	"appproxyv1.AddedCluster":                  appproxyv1.AddedCluster{},
	"appproxyv1.Workflow":                      appproxyv1.Workflow{},
	"appproxyv1.CronWorkflow":                  appproxyv1.CronWorkflow{},
	"appproxyv1.CronWorkflowCondition":         appproxyv1.CronWorkflowCondition{},
	"appproxyv1.CronWorkflowCreateRequest":     appproxyv1.CronWorkflowCreateRequest{},
	"appproxyv1.WorkflowDetail":                appproxyv1.WorkflowDetail{},
	"appproxyv1.WorkflowNode":                  appproxyv1.WorkflowNode{},
	"appproxyv1.WorkflowParameter":             appproxyv1.WorkflowParameter{},
	"appproxyv1.WorkflowSubmitRequest":         appproxyv1.WorkflowSubmitRequest{},
	"appproxyv1.WorkflowResumeRequest":         appproxyv1.WorkflowResumeRequest{},
	"appproxyv1.WorkflowSuppliedParameter":     appproxyv1.WorkflowSuppliedParameter{},
	"appproxyv1.WorkflowTemplate":              appproxyv1.WorkflowTemplate{},
	"appproxyv1.WorkflowTemplateParameter":     appproxyv1.WorkflowTemplateParameter{},
	"appproxyv1.WorkflowTemplateCommitRequest": appproxyv1.WorkflowTemplateCommitRequest{},
	"appproxyv1.WorkflowTemplateCommit":        appproxyv1.WorkflowTemplateCommit{},
	"client.ArchivedWorkflow":                  client.ArchivedWorkflow{},
	"client.ArchivedWorkflowNode":              client.ArchivedWorkflowNode{},
}

// notWire are struct types of those packages that are not JSON bodies of the API, and why.
var notWire = map[string]string{
	"client.Client":                     "the client itself",
	"client.Error":                      "built from the error body {\"error\": {...}} and the HTTP status",
	"client.GraphQLError":               "GraphQL's own error format",
	"client.ListOptions":                "query parameters",
	"client.AuditFilter":                "query parameters",
	"client.BuildFilter":                "query parameters",
	"client.LogEvent":                   "a server-sent event of the log stream, not JSON",
	"client.ExplainRequest":             "query parameters",
	"client.DeploymentFilter":           "query parameters",
	"client.ImageFilter":                "query parameters",
	"client.NotificationDeliveryFilter": "query parameters",
	"client.DORAQuery":                  "query parameters",
	"client.HelmReleaseFilter":          "query parameters",
	"client.ArchiveFilter":              "query parameters",
	"client.HubFilter":                  "query parameters",
}

// sources are the packages whose struct types must each be a wireType or notWire.
var sources = map[string]string{"client": "../client", "appproxyv1": "appproxyv1"}

// TestWireGolden writes (-update) or checks testdata/wire/<pkg>.<Type>.json for every wire type.
func TestWireGolden(t *testing.T) {
	declared := declaredStructs(t)
	for name := range declared {
		if _, ok := wireTypes[name]; !ok && notWire[name] == "" {
			t.Errorf("%s is declared but neither in wireTypes (and so in %s and the web UI's check) nor in notWire", name, wireDir)
		}
	}
	for name := range wireTypes {
		if !declared[name] {
			t.Errorf("wireTypes has %s, which is not a struct type of its package", name)
		}
	}
	for name := range notWire {
		if !declared[name] {
			t.Errorf("notWire has %s, which is not a struct type of its package", name)
		}
	}
	if *update {
		old, _ := filepath.Glob(filepath.Join(wireDir, "*.json"))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(wireDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, v := range wireTypes {
		typ := reflect.TypeOf(v)
		full := reflect.New(typ)
		fill.Set(full.Interface())
		checkFields(t, name, typ, full.Elem())
		got, err := json.MarshalIndent(struct {
			Full any `json:"full"`
			Zero any `json:"zero"`
		}{full.Interface(), reflect.Zero(typ).Interface()}, "", "  ")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got = append(got, '\n')
		file := filepath.Join(wireDir, name+".json")
		if *update {
			if err := os.WriteFile(file, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("%s: %v (run go test ./api -run TestWireGolden -update)", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the JSON of %s changed; if that is intended, run go test ./api -run TestWireGolden -update, "+
				"make the web UI's types match (cd web && npm test) and say so in docs. Now:\n%s", file, name, got)
		}
	}
	files, _ := filepath.Glob(filepath.Join(wireDir, "*.json"))
	for _, f := range files {
		if _, ok := wireTypes[strings.TrimSuffix(filepath.Base(f), ".json")]; !ok {
			t.Errorf("%s is no wire type's: remove it (-update does)", f)
		}
	}
}

// checkFields: every field of a wire type is named in JSON (an untagged field goes out as its
// Go name) and set in the full value (else its golden file would not show it).
func checkFields(t *testing.T, name string, typ reflect.Type, full reflect.Value) {
	t.Helper()
	for i := range typ.NumField() {
		sf := typ.Field(i)
		switch {
		case !sf.IsExported():
		case sf.Anonymous && sf.Tag.Get("json") == "":
			checkFields(t, name, sf.Type, full.Field(i))
		case sf.Tag.Get("json") == "":
			t.Errorf("%s.%s has no JSON name", name, sf.Name)
		case full.Field(i).IsZero():
			t.Errorf("%s.%s is not set in the full value", name, sf.Name)
		}
	}
}

// declaredStructs lists the exported struct types (not aliases) the sources declare.
func declaredStructs(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for pkg, dir := range sources {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range af.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.TYPE {
					continue
				}
				for _, s := range gd.Specs {
					ts := s.(*ast.TypeSpec)
					if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Assign == 0 && ts.Name.IsExported() {
						out[pkg+"."+ts.Name.Name] = true
					}
				}
			}
		}
	}
	if !out["appproxyv1.AppStatus"] || !out["client.Build"] {
		t.Fatalf("the sources' struct types are not found: %v", slices.Sorted(maps.Keys(out)))
	}
	return out
}
