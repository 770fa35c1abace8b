// The UI's types of the API against the Go wire types. api/wire_test.go writes one golden file
// per Go type to api/testdata/wire ({"full": every field set, "zero": the zero value, i.e. what
// is always sent}); `wire` below pairs each with the TypeScript type the UI reads or sends it
// as, and the type checker (npm run build, and npm test through Vitest's typecheck) refuses
// drift either way:
//   - a field Go sends that the TS type lacks, or a TS field Go never sends;
//   - a TS field required that Go leaves out when empty, or optional that Go always sends
//     (unless the pairing allows it);
//   - a string, number, boolean, list or object where Go sends another kind of value.
// The message names the field: Argument of type '"no drift"' is not assignable to parameter of
// type '"drift: appproxyv1.SyncResult.user: Go sends it, the TS type lacks it"'. The tests below
// fail when a golden file is paired with nothing (a new Go type) or with another file's name.
import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import type * as apps from './apps';
import type * as gitops from './gitops';
import type * as gov from './governance';
import type * as ro from './rollouts';
import type * as t from './types';
import type * as prd from './products';
import type * as hb from './hub';
import type * as an from './analytics';
import type * as wf from './workflows';
import type { LintIssue } from '../lib/lint';

import client_Account from '../../../api/testdata/wire/client.Account.json';
import client_AccountMembership from '../../../api/testdata/wire/client.AccountMembership.json';
import client_User from '../../../api/testdata/wire/client.User.json';
import client_Me from '../../../api/testdata/wire/client.Me.json';
import client_Invitation from '../../../api/testdata/wire/client.Invitation.json';
import client_APIKey from '../../../api/testdata/wire/client.APIKey.json';
import client_CreatedAPIKey from '../../../api/testdata/wire/client.CreatedAPIKey.json';
import client_AuditEvent from '../../../api/testdata/wire/client.AuditEvent.json';
import client_List from '../../../api/testdata/wire/client.List.json';
import client_LoginRequest from '../../../api/testdata/wire/client.LoginRequest.json';
import client_LoginResponse from '../../../api/testdata/wire/client.LoginResponse.json';
import client_CreateAccountRequest from '../../../api/testdata/wire/client.CreateAccountRequest.json';
import client_SwitchAccountRequest from '../../../api/testdata/wire/client.SwitchAccountRequest.json';
import client_CreateUserRequest from '../../../api/testdata/wire/client.CreateUserRequest.json';
import client_CreatedUser from '../../../api/testdata/wire/client.CreatedUser.json';
import client_UpdateUserRequest from '../../../api/testdata/wire/client.UpdateUserRequest.json';
import client_CreateAPIKeyRequest from '../../../api/testdata/wire/client.CreateAPIKeyRequest.json';
import client_Runtime from '../../../api/testdata/wire/client.Runtime.json';
import client_RuntimeComponent from '../../../api/testdata/wire/client.RuntimeComponent.json';
import client_RuntimeCluster from '../../../api/testdata/wire/client.RuntimeCluster.json';
import client_RuntimeRefusal from '../../../api/testdata/wire/client.RuntimeRefusal.json';
import client_VersionSkew from '../../../api/testdata/wire/client.VersionSkew.json';
import client_RegisterRuntimeRequest from '../../../api/testdata/wire/client.RegisterRuntimeRequest.json';
import client_RegisteredRuntime from '../../../api/testdata/wire/client.RegisteredRuntime.json';
import client_Project from '../../../api/testdata/wire/client.Project.json';
import client_ProjectRequest from '../../../api/testdata/wire/client.ProjectRequest.json';
import client_PipelineConfig from '../../../api/testdata/wire/client.PipelineConfig.json';
import client_Variable from '../../../api/testdata/wire/client.Variable.json';
import client_Pipeline from '../../../api/testdata/wire/client.Pipeline.json';
import client_PipelineRequest from '../../../api/testdata/wire/client.PipelineRequest.json';
import client_LintIssue from '../../../api/testdata/wire/client.LintIssue.json';
import client_LintResult from '../../../api/testdata/wire/client.LintResult.json';
import client_RunRequest from '../../../api/testdata/wire/client.RunRequest.json';
import client_Build from '../../../api/testdata/wire/client.Build.json';
import client_BuildStats from '../../../api/testdata/wire/client.BuildStats.json';
import client_BuildStatsDay from '../../../api/testdata/wire/client.BuildStatsDay.json';
import client_Plan from '../../../api/testdata/wire/client.Plan.json';
import client_PlanLimit from '../../../api/testdata/wire/client.PlanLimit.json';
import client_Usage from '../../../api/testdata/wire/client.Usage.json';
import client_UsageDay from '../../../api/testdata/wire/client.UsageDay.json';
import client_PipelineBuildStats from '../../../api/testdata/wire/client.PipelineBuildStats.json';
import client_WorkflowRunStats from '../../../api/testdata/wire/client.WorkflowRunStats.json';
import client_WorkflowRunDay from '../../../api/testdata/wire/client.WorkflowRunDay.json';
import client_Step from '../../../api/testdata/wire/client.Step.json';
import client_Image from '../../../api/testdata/wire/client.Image.json';
import client_RestartRequest from '../../../api/testdata/wire/client.RestartRequest.json';
import client_ApprovalRequest from '../../../api/testdata/wire/client.ApprovalRequest.json';
import client_Context from '../../../api/testdata/wire/client.Context.json';
import client_ContextRequest from '../../../api/testdata/wire/client.ContextRequest.json';
import client_RegistryContext from '../../../api/testdata/wire/client.RegistryContext.json';
import client_GitContext from '../../../api/testdata/wire/client.GitContext.json';
import client_Runner from '../../../api/testdata/wire/client.Runner.json';
import client_RegisterRunnerRequest from '../../../api/testdata/wire/client.RegisterRunnerRequest.json';
import client_RegisteredRunner from '../../../api/testdata/wire/client.RegisteredRunner.json';
import client_GitTrigger from '../../../api/testdata/wire/client.GitTrigger.json';
import client_Trigger from '../../../api/testdata/wire/client.Trigger.json';
import client_TriggerRequest from '../../../api/testdata/wire/client.TriggerRequest.json';
import client_CreatedTrigger from '../../../api/testdata/wire/client.CreatedTrigger.json';
import appproxyv1_List from '../../../api/testdata/wire/appproxyv1.List.json';
import appproxyv1_Application from '../../../api/testdata/wire/appproxyv1.Application.json';
import appproxyv1_ApplicationManifest from '../../../api/testdata/wire/appproxyv1.ApplicationManifest.json';
import appproxyv1_AppMetadata from '../../../api/testdata/wire/appproxyv1.AppMetadata.json';
import appproxyv1_AppSpec from '../../../api/testdata/wire/appproxyv1.AppSpec.json';
import appproxyv1_AppSource from '../../../api/testdata/wire/appproxyv1.AppSource.json';
import appproxyv1_AppDestination from '../../../api/testdata/wire/appproxyv1.AppDestination.json';
import appproxyv1_AppSyncPolicy from '../../../api/testdata/wire/appproxyv1.AppSyncPolicy.json';
import appproxyv1_AppSyncPolicyAutomated from '../../../api/testdata/wire/appproxyv1.AppSyncPolicyAutomated.json';
import appproxyv1_AppIgnoreDifferences from '../../../api/testdata/wire/appproxyv1.AppIgnoreDifferences.json';
import appproxyv1_AppInfo from '../../../api/testdata/wire/appproxyv1.AppInfo.json';
import appproxyv1_AppStatus from '../../../api/testdata/wire/appproxyv1.AppStatus.json';
import appproxyv1_Health from '../../../api/testdata/wire/appproxyv1.Health.json';
import appproxyv1_CommitInfo from '../../../api/testdata/wire/appproxyv1.CommitInfo.json';
import appproxyv1_CommitRange from '../../../api/testdata/wire/appproxyv1.CommitRange.json';
import appproxyv1_SourceLocation from '../../../api/testdata/wire/appproxyv1.SourceLocation.json';
import appproxyv1_AppCondition from '../../../api/testdata/wire/appproxyv1.AppCondition.json';
import appproxyv1_ResourceKey from '../../../api/testdata/wire/appproxyv1.ResourceKey.json';
import appproxyv1_AppResource from '../../../api/testdata/wire/appproxyv1.AppResource.json';
import appproxyv1_ResourceDiff from '../../../api/testdata/wire/appproxyv1.ResourceDiff.json';
import appproxyv1_SyncRequest from '../../../api/testdata/wire/appproxyv1.SyncRequest.json';
import appproxyv1_SyncResult from '../../../api/testdata/wire/appproxyv1.SyncResult.json';
import appproxyv1_ResourceResult from '../../../api/testdata/wire/appproxyv1.ResourceResult.json';
import appproxyv1_HookResult from '../../../api/testdata/wire/appproxyv1.HookResult.json';
import appproxyv1_HistoryEntry from '../../../api/testdata/wire/appproxyv1.HistoryEntry.json';
import appproxyv1_RollbackRequest from '../../../api/testdata/wire/appproxyv1.RollbackRequest.json';
import appproxyv1_RollbackResult from '../../../api/testdata/wire/appproxyv1.RollbackResult.json';
import appproxyv1_AutoSyncRequest from '../../../api/testdata/wire/appproxyv1.AutoSyncRequest.json';
import appproxyv1_TerminateResult from '../../../api/testdata/wire/appproxyv1.TerminateResult.json';
import appproxyv1_TreeNode from '../../../api/testdata/wire/appproxyv1.TreeNode.json';
import appproxyv1_TreeNetwork from '../../../api/testdata/wire/appproxyv1.TreeNetwork.json';
import appproxyv1_ResourceDetail from '../../../api/testdata/wire/appproxyv1.ResourceDetail.json';
import appproxyv1_ResourceEvent from '../../../api/testdata/wire/appproxyv1.ResourceEvent.json';
import appproxyv1_RestartResult from '../../../api/testdata/wire/appproxyv1.RestartResult.json';
import appproxyv1_Rollout from '../../../api/testdata/wire/appproxyv1.Rollout.json';
import appproxyv1_RolloutDetail from '../../../api/testdata/wire/appproxyv1.RolloutDetail.json';
import appproxyv1_RolloutStep from '../../../api/testdata/wire/appproxyv1.RolloutStep.json';
import appproxyv1_RolloutRevision from '../../../api/testdata/wire/appproxyv1.RolloutRevision.json';
import appproxyv1_AnalysisRun from '../../../api/testdata/wire/appproxyv1.AnalysisRun.json';
import appproxyv1_AnalysisMetric from '../../../api/testdata/wire/appproxyv1.AnalysisMetric.json';
import appproxyv1_Measurement from '../../../api/testdata/wire/appproxyv1.Measurement.json';
import appproxyv1_RolloutPromoteRequest from '../../../api/testdata/wire/appproxyv1.RolloutPromoteRequest.json';
import appproxyv1_RolloutUndoRequest from '../../../api/testdata/wire/appproxyv1.RolloutUndoRequest.json';
import appproxyv1_Workflow from '../../../api/testdata/wire/appproxyv1.Workflow.json';
import appproxyv1_WorkflowDetail from '../../../api/testdata/wire/appproxyv1.WorkflowDetail.json';
import appproxyv1_WorkflowNode from '../../../api/testdata/wire/appproxyv1.WorkflowNode.json';
import appproxyv1_WorkflowParameter from '../../../api/testdata/wire/appproxyv1.WorkflowParameter.json';
import appproxyv1_WorkflowSubmitRequest from '../../../api/testdata/wire/appproxyv1.WorkflowSubmitRequest.json';
import appproxyv1_WorkflowResumeRequest from '../../../api/testdata/wire/appproxyv1.WorkflowResumeRequest.json';
import appproxyv1_WorkflowSuppliedParameter from '../../../api/testdata/wire/appproxyv1.WorkflowSuppliedParameter.json';
import appproxyv1_WorkflowTemplate from '../../../api/testdata/wire/appproxyv1.WorkflowTemplate.json';
import appproxyv1_WorkflowTemplateParameter from '../../../api/testdata/wire/appproxyv1.WorkflowTemplateParameter.json';
import client_ArchivedWorkflow from '../../../api/testdata/wire/client.ArchivedWorkflow.json';
import client_ArchivedWorkflowNode from '../../../api/testdata/wire/client.ArchivedWorkflowNode.json';
import appproxyv1_GitSource from '../../../api/testdata/wire/appproxyv1.GitSource.json';
import appproxyv1_GitSourceMetadata from '../../../api/testdata/wire/appproxyv1.GitSourceMetadata.json';
import appproxyv1_GitSourceSpec from '../../../api/testdata/wire/appproxyv1.GitSourceSpec.json';
import appproxyv1_ProviderRepo from '../../../api/testdata/wire/appproxyv1.ProviderRepo.json';
import appproxyv1_Cluster from '../../../api/testdata/wire/appproxyv1.Cluster.json';
import client_DORABucket from '../../../api/testdata/wire/client.DORABucket.json';
import client_DORAMetric from '../../../api/testdata/wire/client.DORAMetric.json';
import client_DORAReport from '../../../api/testdata/wire/client.DORAReport.json';
import client_HelmRelease from '../../../api/testdata/wire/client.HelmRelease.json';
import client_HelmRevision from '../../../api/testdata/wire/client.HelmRevision.json';
import client_DeployedImage from '../../../api/testdata/wire/client.DeployedImage.json';
import client_Deployment from '../../../api/testdata/wire/client.Deployment.json';
import client_ImageCommit from '../../../api/testdata/wire/client.ImageCommit.json';
import client_ImageIssue from '../../../api/testdata/wire/client.ImageIssue.json';
import client_ReportedImage from '../../../api/testdata/wire/client.ReportedImage.json';
import client_ReportImageRequest from '../../../api/testdata/wire/client.ReportImageRequest.json';
import client_IssueTracker from '../../../api/testdata/wire/client.IssueTracker.json';
import client_CreateIssueTrackerRequest from '../../../api/testdata/wire/client.CreateIssueTrackerRequest.json';
import client_EnvironmentTarget from '../../../api/testdata/wire/client.EnvironmentTarget.json';
import client_Environment from '../../../api/testdata/wire/client.Environment.json';
import client_EnvironmentRequest from '../../../api/testdata/wire/client.EnvironmentRequest.json';
import client_Product from '../../../api/testdata/wire/client.Product.json';
import client_CreateProductRequest from '../../../api/testdata/wire/client.CreateProductRequest.json';
import client_ProductImage from '../../../api/testdata/wire/client.ProductImage.json';
import client_ProductApplication from '../../../api/testdata/wire/client.ProductApplication.json';
import client_ProductEnvironment from '../../../api/testdata/wire/client.ProductEnvironment.json';
import client_ProductImageChange from '../../../api/testdata/wire/client.ProductImageChange.json';
import client_ProductPromotion from '../../../api/testdata/wire/client.ProductPromotion.json';
import client_ProductView from '../../../api/testdata/wire/client.ProductView.json';
import client_HubParameter from '../../../api/testdata/wire/client.HubParameter.json';
import client_HubEntry from '../../../api/testdata/wire/client.HubEntry.json';
import client_HubTemplate from '../../../api/testdata/wire/client.HubTemplate.json';
import client_HubTemplateDetail from '../../../api/testdata/wire/client.HubTemplateDetail.json';
import client_HubSource from '../../../api/testdata/wire/client.HubSource.json';
import client_HubCatalogue from '../../../api/testdata/wire/client.HubCatalogue.json';
import client_HubSourceRequest from '../../../api/testdata/wire/client.HubSourceRequest.json';
import client_HubUseRequest from '../../../api/testdata/wire/client.HubUseRequest.json';
import client_HubUseResult from '../../../api/testdata/wire/client.HubUseResult.json';
import appproxyv1_CronWorkflow from '../../../api/testdata/wire/appproxyv1.CronWorkflow.json';
import appproxyv1_CronWorkflowCondition from '../../../api/testdata/wire/appproxyv1.CronWorkflowCondition.json';
import appproxyv1_CronWorkflowCreateRequest from '../../../api/testdata/wire/appproxyv1.CronWorkflowCreateRequest.json';
import appproxyv1_WorkflowTemplateCommit from '../../../api/testdata/wire/appproxyv1.WorkflowTemplateCommit.json';
import appproxyv1_WorkflowTemplateCommitRequest from '../../../api/testdata/wire/appproxyv1.WorkflowTemplateCommitRequest.json';
import appproxyv1_Sensor from '../../../api/testdata/wire/appproxyv1.Sensor.json';
import appproxyv1_SensorDependency from '../../../api/testdata/wire/appproxyv1.SensorDependency.json';
import appproxyv1_SensorTrigger from '../../../api/testdata/wire/appproxyv1.SensorTrigger.json';
import appproxyv1_EventCondition from '../../../api/testdata/wire/appproxyv1.EventCondition.json';
import appproxyv1_EventSource from '../../../api/testdata/wire/appproxyv1.EventSource.json';
import appproxyv1_EventSourceEvent from '../../../api/testdata/wire/appproxyv1.EventSourceEvent.json';
import appproxyv1_DeliveryPipelineCommitRequest from '../../../api/testdata/wire/appproxyv1.DeliveryPipelineCommitRequest.json';
import appproxyv1_PipelineEvent from '../../../api/testdata/wire/appproxyv1.PipelineEvent.json';
import appproxyv1_DeliveryPipelineCommit from '../../../api/testdata/wire/appproxyv1.DeliveryPipelineCommit.json';
import appproxyv1_WorkflowArtifact from '../../../api/testdata/wire/appproxyv1.WorkflowArtifact.json';
import client_NotificationChannel from '../../../api/testdata/wire/client.NotificationChannel.json';
import client_NotificationSMTP from '../../../api/testdata/wire/client.NotificationSMTP.json';
import client_CreateNotificationChannelRequest from '../../../api/testdata/wire/client.CreateNotificationChannelRequest.json';
import client_NotificationSubscription from '../../../api/testdata/wire/client.NotificationSubscription.json';
import client_CreateNotificationSubscriptionRequest from '../../../api/testdata/wire/client.CreateNotificationSubscriptionRequest.json';
import client_NotificationDelivery from '../../../api/testdata/wire/client.NotificationDelivery.json';
import client_NotificationAttempt from '../../../api/testdata/wire/client.NotificationAttempt.json';
import client_DeploymentCommit from '../../../api/testdata/wire/client.DeploymentCommit.json';
import client_DeployedCommit from '../../../api/testdata/wire/client.DeployedCommit.json';
import client_DeploymentCommitRange from '../../../api/testdata/wire/client.DeploymentCommitRange.json';
import appproxyv1_NotifyRequest from '../../../api/testdata/wire/appproxyv1.NotifyRequest.json';
import appproxyv1_NotifyResult from '../../../api/testdata/wire/appproxyv1.NotifyResult.json';
import appproxyv1_ClusterCredential from '../../../api/testdata/wire/appproxyv1.ClusterCredential.json';
import appproxyv1_AddedCluster from '../../../api/testdata/wire/appproxyv1.AddedCluster.json';
import client_AuthzExplanation from '../../../api/testdata/wire/client.AuthzExplanation.json';
import client_ChangePasswordRequest from '../../../api/testdata/wire/client.ChangePasswordRequest.json';
import client_PasswordResetToken from '../../../api/testdata/wire/client.PasswordResetToken.json';
import client_ResetPasswordRequest from '../../../api/testdata/wire/client.ResetPasswordRequest.json';
import client_Session from '../../../api/testdata/wire/client.Session.json';
import client_CreateRuleRequest from '../../../api/testdata/wire/client.CreateRuleRequest.json';
import client_CreateTeamRequest from '../../../api/testdata/wire/client.CreateTeamRequest.json';
import client_Rule from '../../../api/testdata/wire/client.Rule.json';
import client_Team from '../../../api/testdata/wire/client.Team.json';
import client_TeamMember from '../../../api/testdata/wire/client.TeamMember.json';
import client_TeamOwns from '../../../api/testdata/wire/client.TeamOwns.json';
import client_SetOwnerRequest from '../../../api/testdata/wire/client.SetOwnerRequest.json';
import client_TeamMemberRequest from '../../../api/testdata/wire/client.TeamMemberRequest.json';
import client_SSOConfig from '../../../api/testdata/wire/client.SSOConfig.json';
import client_SSOConfigRequest from '../../../api/testdata/wire/client.SSOConfigRequest.json';
import client_SSOTokenRequest from '../../../api/testdata/wire/client.SSOTokenRequest.json';
import client_DeviceAuthorization from '../../../api/testdata/wire/client.DeviceAuthorization.json';
import client_DeviceTokenRequest from '../../../api/testdata/wire/client.DeviceTokenRequest.json';

const wireDir = new URL('../../../api/testdata/wire/', import.meta.url);

/** A golden file: the Go type with every field set, and its zero value. */
interface Golden {
  full: object;
  zero: object;
}

type IsAny<T> = 0 extends 1 & T ? true : false;

/** The keys of T that are not optional. */
type RequiredKeys<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? never : K }[keyof T];

/** What is wrong with TS type T for the value J Go sends at path P (never: nothing). */
type ValueDrift<T, J, P extends string> =
  IsAny<T> extends true
    ? never
    : unknown extends T
      ? never // unknown: JSON the UI does not model
      : [J] extends [null]
        ? never
        : [J] extends [string]
          ? [NonNullable<T>] extends [string]
            ? never
            : `${P}: Go sends a string`
          : [J] extends [number]
            ? [NonNullable<T>] extends [number]
              ? never
              : `${P}: Go sends a number`
            : [J] extends [boolean]
              ? [NonNullable<T>] extends [boolean]
                ? never
                : `${P}: Go sends a boolean`
              : J extends readonly (infer JE)[]
                ? NonNullable<T> extends readonly (infer TE)[]
                  ? ValueDrift<TE, JE, `${P}[]`>
                  : `${P}: Go sends a list`
                : [NonNullable<T>] extends [object]
                  ? KeyDrift<NonNullable<T>, J, P>
                  : `${P}: Go sends an object`;

/**
 * The keys Go sends against TS type T: each must be in T, with a value of the right kind. A map
 * (Record<string, V>) takes any key.
 */
type KeyDrift<T, J, P extends string> = string extends keyof T
  ? { [K in keyof J & string]: ValueDrift<T[string & keyof T], J[K], `${P}.${K}`> }[keyof J & string]
  : { [K in keyof J & string]: K extends keyof T ? ValueDrift<T[K], J[K], `${P}.${K}`> : `${P}.${K}: Go sends it, the TS type lacks it` }[keyof J & string];

/**
 * Drift between TS type T and the golden file J of Go type N: KeyDrift over the full value
 * (nested types are checked for what Go sends; their own golden files check the rest), and at
 * the top every TS field must be sent, and be required exactly when Go always sends it.
 */
type Drift<N extends string, T, J extends Golden, Optional = never> =
  | KeyDrift<T, J['full'], N>
  | { [K in Exclude<keyof T & string, keyof J['full']>]: `${N}.${K}: the TS type has it, Go never sends it` }[Exclude<keyof T & string, keyof J['full']>]
  | { [K in RequiredKeys<T> & string]: K extends keyof J['zero'] ? never : `${N}.${K}: TS requires it, Go leaves it out when empty` }[RequiredKeys<T> & string]
  | {
      [K in Exclude<keyof J['zero'] & string, Optional>]: K extends RequiredKeys<T> ? never : `${N}.${K}: Go always sends it, TS has it optional`;
    }[Exclude<keyof J['zero'] & string, Optional>];

/** The drift as a union of messages (not an alias), for the compiler to print. */
type Messages<D> = [D] extends [never] ? 'no drift' : `drift: ${D & string}`;

/**
 * Pairs Go type name's golden file with TS type T; 'no drift' type-checks only when they agree.
 * Optional names fields Go always sends that T may leave optional, because the UI builds such
 * values itself too.
 */
function pair<T, Optional extends keyof T = never>() {
  return <const N extends string, J extends Golden>(name: N, golden: J, ok: Messages<Drift<N, T, J, Optional>>) => ({
    name,
    golden,
    ok,
  });
}

const wire = [
  pair<prd.EnvironmentTarget>()('client.EnvironmentTarget', client_EnvironmentTarget, 'no drift'),
  pair<prd.Environment>()('client.Environment', client_Environment, 'no drift'),
  pair<prd.Product>()('client.Product', client_Product, 'no drift'),
  pair<prd.EnvironmentRequest>()('client.EnvironmentRequest', client_EnvironmentRequest, 'no drift'),
  pair<prd.ProductRequest>()('client.CreateProductRequest', client_CreateProductRequest, 'no drift'),
  pair<prd.ProductImage>()('client.ProductImage', client_ProductImage, 'no drift'),
  pair<prd.ProductApplication>()('client.ProductApplication', client_ProductApplication, 'no drift'),
  pair<prd.ProductEnvironment>()('client.ProductEnvironment', client_ProductEnvironment, 'no drift'),
  pair<prd.ProductImageChange>()('client.ProductImageChange', client_ProductImageChange, 'no drift'),
  pair<prd.ProductPromotion>()('client.ProductPromotion', client_ProductPromotion, 'no drift'),
  pair<prd.ProductView>()('client.ProductView', client_ProductView, 'no drift'),
  pair<hb.HubParameter>()('client.HubParameter', client_HubParameter, 'no drift'),
  pair<hb.HubEntry>()('client.HubEntry', client_HubEntry, 'no drift'),
  pair<hb.HubTemplate>()('client.HubTemplate', client_HubTemplate, 'no drift'),
  pair<hb.HubTemplateDetail>()('client.HubTemplateDetail', client_HubTemplateDetail, 'no drift'),
  pair<hb.HubSource>()('client.HubSource', client_HubSource, 'no drift'),
  pair<hb.HubCatalogue>()('client.HubCatalogue', client_HubCatalogue, 'no drift'),
  pair<hb.HubUseRequest>()('client.HubUseRequest', client_HubUseRequest, 'no drift'),
  pair<hb.HubUseResult>()('client.HubUseResult', client_HubUseResult, 'no drift'),
  pair<an.DORABucket>()('client.DORABucket', client_DORABucket, 'no drift'),
  pair<an.DORAMetric>()('client.DORAMetric', client_DORAMetric, 'no drift'),
  pair<an.DORAReport>()('client.DORAReport', client_DORAReport, 'no drift'),
  pair<an.HelmRelease>()('client.HelmRelease', client_HelmRelease, 'no drift'),
  pair<an.HelmRevision>()('client.HelmRevision', client_HelmRevision, 'no drift'),
  pair<an.Deployment>()('client.Deployment', client_Deployment, 'no drift'),
  pair<an.DeployedImage>()('client.DeployedImage', client_DeployedImage, 'no drift'),
  pair<an.DeploymentCommit>()('client.DeploymentCommit', client_DeploymentCommit, 'no drift'),
  pair<an.DeployedCommit>()('client.DeployedCommit', client_DeployedCommit, 'no drift'),
  pair<an.DeploymentCommitRange>()('client.DeploymentCommitRange', client_DeploymentCommitRange, 'no drift'),
  pair<prd.ImageCommit>()('client.ImageCommit', client_ImageCommit, 'no drift'),
  pair<prd.ImageIssue>()('client.ImageIssue', client_ImageIssue, 'no drift'),
  pair<t.Account>()('client.Account', client_Account, 'no drift'),
  pair<t.AccountMembership>()('client.AccountMembership', client_AccountMembership, 'no drift'),
  pair<t.User>()('client.User', client_User, 'no drift'),
  pair<t.Me>()('client.Me', client_Me, 'no drift'),
  pair<t.Invitation>()('client.Invitation', client_Invitation, 'no drift'),
  pair<t.APIKey>()('client.APIKey', client_APIKey, 'no drift'),
  pair<t.CreatedAPIKey>()('client.CreatedAPIKey', client_CreatedAPIKey, 'no drift'),
  pair<t.AuditEvent>()('client.AuditEvent', client_AuditEvent, 'no drift'),
  pair<t.Page<t.Account>>()('client.List', client_List, 'no drift'),
  pair<t.LoginRequest>()('client.LoginRequest', client_LoginRequest, 'no drift'),
  pair<t.LoginResponse>()('client.LoginResponse', client_LoginResponse, 'no drift'),
  pair<t.CreateAccountRequest>()('client.CreateAccountRequest', client_CreateAccountRequest, 'no drift'),
  pair<t.SwitchAccountRequest>()('client.SwitchAccountRequest', client_SwitchAccountRequest, 'no drift'),
  pair<t.CreateUserRequest>()('client.CreateUserRequest', client_CreateUserRequest, 'no drift'),
  pair<t.CreatedUser>()('client.CreatedUser', client_CreatedUser, 'no drift'),
  pair<t.UpdateUserRequest>()('client.UpdateUserRequest', client_UpdateUserRequest, 'no drift'),
  pair<t.CreateAPIKeyRequest>()('client.CreateAPIKeyRequest', client_CreateAPIKeyRequest, 'no drift'),
  pair<t.Runtime>()('client.Runtime', client_Runtime, 'no drift'),
  pair<t.RuntimeComponent>()('client.RuntimeComponent', client_RuntimeComponent, 'no drift'),
  pair<t.RuntimeCluster>()('client.RuntimeCluster', client_RuntimeCluster, 'no drift'),
  pair<t.RuntimeRefusal>()('client.RuntimeRefusal', client_RuntimeRefusal, 'no drift'),
  pair<t.VersionSkew>()('client.VersionSkew', client_VersionSkew, 'no drift'),
  pair<t.RegisterRuntimeRequest>()('client.RegisterRuntimeRequest', client_RegisterRuntimeRequest, 'no drift'),
  pair<t.RegisteredRuntime>()('client.RegisteredRuntime', client_RegisteredRuntime, 'no drift'),
  pair<t.Project>()('client.Project', client_Project, 'no drift'),
  pair<t.ProjectRequest>()('client.ProjectRequest', client_ProjectRequest, 'no drift'),
  pair<t.PipelineConfig>()('client.PipelineConfig', client_PipelineConfig, 'no drift'),
  pair<t.PipelineVariable>()('client.Variable', client_Variable, 'no drift'),
  pair<t.Pipeline>()('client.Pipeline', client_Pipeline, 'no drift'),
  pair<t.PipelineRequest>()('client.PipelineRequest', client_PipelineRequest, 'no drift'),
  pair<LintIssue>()('client.LintIssue', client_LintIssue, 'no drift'),
  pair<{ valid: boolean; issues: LintIssue[] }>()('client.LintResult', client_LintResult, 'no drift'),
  pair<t.RunRequest>()('client.RunRequest', client_RunRequest, 'no drift'),
  pair<t.Build>()('client.Build', client_Build, 'no drift'),
  pair<t.BuildStats>()('client.BuildStats', client_BuildStats, 'no drift'),
  pair<t.BuildStatsDay>()('client.BuildStatsDay', client_BuildStatsDay, 'no drift'),
  pair<t.Plan>()('client.Plan', client_Plan, 'no drift'),
  pair<t.PlanLimit>()('client.PlanLimit', client_PlanLimit, 'no drift'),
  pair<t.Usage>()('client.Usage', client_Usage, 'no drift'),
  pair<t.UsageDay>()('client.UsageDay', client_UsageDay, 'no drift'),
  pair<t.PipelineBuildStats>()('client.PipelineBuildStats', client_PipelineBuildStats, 'no drift'),
  pair<wf.WorkflowRunStats>()('client.WorkflowRunStats', client_WorkflowRunStats, 'no drift'),
  pair<wf.WorkflowRunDay>()('client.WorkflowRunDay', client_WorkflowRunDay, 'no drift'),
  pair<t.BuildStep>()('client.Step', client_Step, 'no drift'),
  pair<t.BuildImage>()('client.Image', client_Image, 'no drift'),
  pair<t.RestartRequest>()('client.RestartRequest', client_RestartRequest, 'no drift'),
  pair<t.ApprovalRequest>()('client.ApprovalRequest', client_ApprovalRequest, 'no drift'),
  pair<t.ConfigContext>()('client.Context', client_Context, 'no drift'),
  pair<t.ContextRequest>()('client.ContextRequest', client_ContextRequest, 'no drift'),
  pair<t.RegistryContext>()('client.RegistryContext', client_RegistryContext, 'no drift'),
  pair<t.GitContext>()('client.GitContext', client_GitContext, 'no drift'),
  pair<t.Runner>()('client.Runner', client_Runner, 'no drift'),
  pair<t.RegisterRunnerRequest>()('client.RegisterRunnerRequest', client_RegisterRunnerRequest, 'no drift'),
  pair<t.RegisteredRunner>()('client.RegisteredRunner', client_RegisteredRunner, 'no drift'),
  pair<t.GitTrigger>()('client.GitTrigger', client_GitTrigger, 'no drift'),
  pair<t.Trigger>()('client.Trigger', client_Trigger, 'no drift'),
  pair<t.TriggerRequest>()('client.TriggerRequest', client_TriggerRequest, 'no drift'),
  pair<t.CreatedTrigger>()('client.CreatedTrigger', client_CreatedTrigger, 'no drift'),
  pair<apps.ProxyList<gitops.ClusterRef>>()('appproxyv1.List', appproxyv1_List, 'no drift'),
  pair<apps.ProxyApplication>()('appproxyv1.Application', appproxyv1_Application, 'no drift'),
  pair<wf.Workflow>()('appproxyv1.Workflow', appproxyv1_Workflow, 'no drift'),
  pair<wf.CronWorkflow>()('appproxyv1.CronWorkflow', appproxyv1_CronWorkflow, 'no drift'),
  pair<wf.CronWorkflowCondition>()('appproxyv1.CronWorkflowCondition', appproxyv1_CronWorkflowCondition, 'no drift'),
  pair<wf.WorkflowDetail>()('appproxyv1.WorkflowDetail', appproxyv1_WorkflowDetail, 'no drift'),
  pair<wf.WorkflowNode>()('appproxyv1.WorkflowNode', appproxyv1_WorkflowNode, 'no drift'),
  pair<wf.WorkflowParameter>()('appproxyv1.WorkflowParameter', appproxyv1_WorkflowParameter, 'no drift'),
  pair<wf.WorkflowSuppliedParameter>()('appproxyv1.WorkflowSuppliedParameter', appproxyv1_WorkflowSuppliedParameter, 'no drift'),
  pair<wf.WorkflowResumeRequest>()('appproxyv1.WorkflowResumeRequest', appproxyv1_WorkflowResumeRequest, 'no drift'),
  pair<wf.WorkflowArtifact>()('appproxyv1.WorkflowArtifact', appproxyv1_WorkflowArtifact, 'no drift'),
  pair<wf.WorkflowTemplate>()('appproxyv1.WorkflowTemplate', appproxyv1_WorkflowTemplate, 'no drift'),
  pair<wf.WorkflowTemplateParameter>()('appproxyv1.WorkflowTemplateParameter', appproxyv1_WorkflowTemplateParameter, 'no drift'),
  pair<wf.Sensor>()('appproxyv1.Sensor', appproxyv1_Sensor, 'no drift'),
  pair<wf.SensorDependency>()('appproxyv1.SensorDependency', appproxyv1_SensorDependency, 'no drift'),
  pair<wf.SensorTrigger>()('appproxyv1.SensorTrigger', appproxyv1_SensorTrigger, 'no drift'),
  pair<wf.EventCondition>()('appproxyv1.EventCondition', appproxyv1_EventCondition, 'no drift'),
  pair<wf.EventSource>()('appproxyv1.EventSource', appproxyv1_EventSource, 'no drift'),
  pair<wf.EventSourceEvent>()('appproxyv1.EventSourceEvent', appproxyv1_EventSourceEvent, 'no drift'),
  pair<wf.DeliveryPipelineCommitRequest>()('appproxyv1.DeliveryPipelineCommitRequest', appproxyv1_DeliveryPipelineCommitRequest, 'no drift'),
  pair<wf.PipelineEvent>()('appproxyv1.PipelineEvent', appproxyv1_PipelineEvent, 'no drift'),
  pair<wf.DeliveryPipelineCommit>()('appproxyv1.DeliveryPipelineCommit', appproxyv1_DeliveryPipelineCommit, 'no drift'),
  pair<wf.ArchivedWorkflow>()('client.ArchivedWorkflow', client_ArchivedWorkflow, 'no drift'),
  pair<wf.ArchivedWorkflowNode>()('client.ArchivedWorkflowNode', client_ArchivedWorkflowNode, 'no drift'),
  pair<apps.ApplicationSpec>()('appproxyv1.ApplicationManifest', appproxyv1_ApplicationManifest, 'no drift'),
  pair<apps.AppMetadata>()('appproxyv1.AppMetadata', appproxyv1_AppMetadata, 'no drift'),
  pair<apps.AppSpec>()('appproxyv1.AppSpec', appproxyv1_AppSpec, 'no drift'),
  pair<apps.AppSource>()('appproxyv1.AppSource', appproxyv1_AppSource, 'no drift'),
  pair<apps.Destination>()('appproxyv1.AppDestination', appproxyv1_AppDestination, 'no drift'),
  pair<apps.AppSyncPolicy>()('appproxyv1.AppSyncPolicy', appproxyv1_AppSyncPolicy, 'no drift'),
  pair<apps.AppSyncPolicyAutomated>()('appproxyv1.AppSyncPolicyAutomated', appproxyv1_AppSyncPolicyAutomated, 'no drift'),
  pair<apps.AppIgnoreDifferences>()('appproxyv1.AppIgnoreDifferences', appproxyv1_AppIgnoreDifferences, 'no drift'),
  pair<apps.AppInfo>()('appproxyv1.AppInfo', appproxyv1_AppInfo, 'no drift'),
  pair<apps.AppStatus>()('appproxyv1.AppStatus', appproxyv1_AppStatus, 'no drift'),
  pair<apps.HealthResult>()('appproxyv1.Health', appproxyv1_Health, 'no drift'),
  pair<apps.CommitInfo>()('appproxyv1.CommitInfo', appproxyv1_CommitInfo, 'no drift'),
  pair<apps.CommitRange>()('appproxyv1.CommitRange', appproxyv1_CommitRange, 'no drift'),
  pair<apps.SourceLocation>()('appproxyv1.SourceLocation', appproxyv1_SourceLocation, 'no drift'),
  pair<apps.Condition>()('appproxyv1.AppCondition', appproxyv1_AppCondition, 'no drift'),
  pair<apps.ResourceKey>()('appproxyv1.ResourceKey', appproxyv1_ResourceKey, 'no drift'),
  pair<apps.ResourceStatus>()('appproxyv1.AppResource', appproxyv1_AppResource, 'no drift'),
  pair<apps.ResourceDiff>()('appproxyv1.ResourceDiff', appproxyv1_ResourceDiff, 'no drift'),
  pair<apps.SyncRequest>()('appproxyv1.SyncRequest', appproxyv1_SyncRequest, 'no drift'),
  pair<apps.SyncResult>()('appproxyv1.SyncResult', appproxyv1_SyncResult, 'no drift'),
  pair<apps.ResourceResult>()('appproxyv1.ResourceResult', appproxyv1_ResourceResult, 'no drift'),
  pair<apps.HookResult>()('appproxyv1.HookResult', appproxyv1_HookResult, 'no drift'),
  pair<apps.HistoryEntry>()('appproxyv1.HistoryEntry', appproxyv1_HistoryEntry, 'no drift'),
  pair<apps.RollbackRequest>()('appproxyv1.RollbackRequest', appproxyv1_RollbackRequest, 'no drift'),
  pair<apps.RollbackResult>()('appproxyv1.RollbackResult', appproxyv1_RollbackResult, 'no drift'),
  pair<apps.AutoSyncRequest>()('appproxyv1.AutoSyncRequest', appproxyv1_AutoSyncRequest, 'no drift'),
  pair<apps.TerminateResult>()('appproxyv1.TerminateResult', appproxyv1_TerminateResult, 'no drift'),
  // lib/appTree.ts adds the managed resources the live tree lacks, with no creation time.
  pair<apps.TreeNode, 'createdAt'>()('appproxyv1.TreeNode', appproxyv1_TreeNode, 'no drift'),
  pair<apps.TreeNetwork>()('appproxyv1.TreeNetwork', appproxyv1_TreeNetwork, 'no drift'),
  pair<apps.ResourceDetail>()('appproxyv1.ResourceDetail', appproxyv1_ResourceDetail, 'no drift'),
  pair<apps.ResourceEvent>()('appproxyv1.ResourceEvent', appproxyv1_ResourceEvent, 'no drift'),
  pair<apps.RestartResult>()('appproxyv1.RestartResult', appproxyv1_RestartResult, 'no drift'),
  pair<gitops.GitSource>()('appproxyv1.GitSource', appproxyv1_GitSource, 'no drift'),
  pair<gitops.GitSourceMetadata>()('appproxyv1.GitSourceMetadata', appproxyv1_GitSourceMetadata, 'no drift'),
  pair<gitops.GitSourceSpec>()('appproxyv1.GitSourceSpec', appproxyv1_GitSourceSpec, 'no drift'),
  pair<gitops.ProviderRepo>()('appproxyv1.ProviderRepo', appproxyv1_ProviderRepo, 'no drift'),
  pair<gitops.ClusterRef>()('appproxyv1.Cluster', appproxyv1_Cluster, 'no drift'),
  pair<ro.Rollout>()('appproxyv1.Rollout', appproxyv1_Rollout, 'no drift'),
  pair<ro.RolloutDetail>()('appproxyv1.RolloutDetail', appproxyv1_RolloutDetail, 'no drift'),
  pair<ro.RolloutStep>()('appproxyv1.RolloutStep', appproxyv1_RolloutStep, 'no drift'),
  pair<ro.RolloutRevision, 'createdAt'>()('appproxyv1.RolloutRevision', appproxyv1_RolloutRevision, 'no drift'),
  pair<ro.AnalysisRun, 'startedAt'>()('appproxyv1.AnalysisRun', appproxyv1_AnalysisRun, 'no drift'),
  pair<ro.AnalysisMetric>()('appproxyv1.AnalysisMetric', appproxyv1_AnalysisMetric, 'no drift'),
  pair<ro.Measurement, 'startedAt' | 'finishedAt'>()('appproxyv1.Measurement', appproxyv1_Measurement, 'no drift'),
  pair<ro.RolloutPromoteRequest>()('appproxyv1.RolloutPromoteRequest', appproxyv1_RolloutPromoteRequest, 'no drift'),
  pair<ro.RolloutUndoRequest>()('appproxyv1.RolloutUndoRequest', appproxyv1_RolloutUndoRequest, 'no drift'),
  pair<gov.AuthzExplanation>()('client.AuthzExplanation', client_AuthzExplanation, 'no drift'),
  pair<gov.CreateRuleRequest>()('client.CreateRuleRequest', client_CreateRuleRequest, 'no drift'),
  pair<gov.CreateTeamRequest>()('client.CreateTeamRequest', client_CreateTeamRequest, 'no drift'),
  pair<gov.Rule>()('client.Rule', client_Rule, 'no drift'),
  pair<gov.Team>()('client.Team', client_Team, 'no drift'),
  pair<gov.TeamMember>()('client.TeamMember', client_TeamMember, 'no drift'),
  pair<gov.TeamOwns>()('client.TeamOwns', client_TeamOwns, 'no drift'),
  pair<gov.SetOwnerRequest>()('client.SetOwnerRequest', client_SetOwnerRequest, 'no drift'),
  pair<gov.TeamMemberRequest>()('client.TeamMemberRequest', client_TeamMemberRequest, 'no drift'),
  pair<gov.SSOConfig>()('client.SSOConfig', client_SSOConfig, 'no drift'),
  pair<gov.SSOConfigRequest>()('client.SSOConfigRequest', client_SSOConfigRequest, 'no drift'),
];

/** Go types the UI neither reads nor sends, and why. */
const notInTheUI: Record<string, { golden: Golden; why: string }> = {
  'client.ReportedImage': { golden: client_ReportedImage, why: 'image enrichment (issue 17): `freshet image report|list`; no dashboard yet' },
  'client.ReportImageRequest': { golden: client_ReportImageRequest, why: '`freshet image report` and CI systems send it' },
  'client.IssueTracker': { golden: client_IssueTracker, why: '`freshet image trackers list`; no settings page yet' },
  'client.CreateIssueTrackerRequest': { golden: client_CreateIssueTrackerRequest, why: '`freshet image trackers create`; no settings page yet' },
  'client.NotificationChannel': { golden: client_NotificationChannel, why: '`freshet notification channel list`; no settings page yet' },
  'client.NotificationSMTP': { golden: client_NotificationSMTP, why: 'the settings of an email channel (`freshet notification channel create --kind email`); no settings page yet' },
  'client.CreateNotificationChannelRequest': { golden: client_CreateNotificationChannelRequest, why: '`freshet notification channel create`; no settings page yet' },
  'client.NotificationSubscription': { golden: client_NotificationSubscription, why: '`freshet notification subscription list`; no settings page yet' },
  'client.CreateNotificationSubscriptionRequest': { golden: client_CreateNotificationSubscriptionRequest, why: '`freshet notification subscription create`; no settings page yet' },
  'client.NotificationDelivery': { golden: client_NotificationDelivery, why: '`freshet notification deliveries` and `channel test`; no settings page yet' },
  'client.NotificationAttempt': { golden: client_NotificationAttempt, why: 'the attempts of a delivery (`freshet notification deliveries`); no settings page yet' },
  'appproxyv1.NotifyRequest': { golden: appproxyv1_NotifyRequest, why: 'the control plane sends it to a runtime after a verified push webhook' },
  'appproxyv1.NotifyResult': { golden: appproxyv1_NotifyResult, why: 'what a runtime answers the control plane to a NotifyRequest' },
  'appproxyv1.ClusterCredential': { golden: appproxyv1_ClusterCredential, why: '`freshet cluster add` hands a service account token to a runtime; the UI does not' },
  'appproxyv1.AddedCluster': { golden: appproxyv1_AddedCluster, why: 'the answer to a ClusterCredential' },
  'client.ChangePasswordRequest': { golden: client_ChangePasswordRequest, why: '`freshet user passwd`; the UI has no password page yet' },
  'client.PasswordResetToken': { golden: client_PasswordResetToken, why: '`freshet user reset-password` (admins)' },
  'client.ResetPasswordRequest': { golden: client_ResetPasswordRequest, why: '`freshet user passwd --reset-token`' },
  'client.Session': { golden: client_Session, why: '`freshet session list`' },
  'client.SSOTokenRequest': { golden: client_SSOTokenRequest, why: '`freshet login --sso` exchanges its one-time code; the UI logs in with cookies' },
  'client.DeviceAuthorization': { golden: client_DeviceAuthorization, why: '`freshet login --sso --device` starts a device login; the UI logs in with cookies' },
  'client.DeviceTokenRequest': { golden: client_DeviceTokenRequest, why: '`freshet login --sso --device` polls for its session; the UI logs in with cookies' },
  'appproxyv1.WorkflowSubmitRequest': { golden: appproxyv1_WorkflowSubmitRequest, why: '`freshet workflow` and the app-proxy workflows API; the UI has no Delivery Pipelines pages yet (issue 16)' },
  'client.HubSourceRequest': { golden: client_HubSourceRequest, why: '`freshet hub source add` (admins); the Hub page lists sources and their errors, it does not add them' },
  'appproxyv1.WorkflowTemplateCommitRequest': { golden: appproxyv1_WorkflowTemplateCommitRequest, why: 'sent by the control plane to a runtime (the Hub\'s "use this template"); the UI calls POST /api/v1/hub/templates/{name}/use' },
  'appproxyv1.CronWorkflowCreateRequest': { golden: appproxyv1_CronWorkflowCreateRequest, why: '`freshet cron-workflow create|lint|update` sends it; the UI creates and edits none' },
  'appproxyv1.WorkflowTemplateCommit': { golden: appproxyv1_WorkflowTemplateCommit, why: 'a runtime\'s answer to the control plane; the UI reads client.HubUseResult' },
};

describe('the UI types against the Go wire types (api/testdata/wire)', () => {
  test('every golden file is paired with a TypeScript type, or said not to be used', () => {
    const files = readdirSync(wireDir).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -'.json'.length)).sort();
    const named = [...wire.map((w) => w.name), ...Object.keys(notInTheUI)].sort();
    expect(named).toEqual(files);
    expect(new Set(named).size).toBe(named.length);
  });

  test('each pairing names its own golden file', () => {
    const all = [...wire, ...Object.entries(notInTheUI).map(([name, v]) => ({ name, golden: v.golden }))];
    for (const { name, golden } of all) {
      expect(golden, name).toEqual(JSON.parse(readFileSync(new URL(`${name}.json`, wireDir), 'utf8')));
    }
  });
});
