// Types of the public API, mirroring client/types.go, client/pipelines.go and api/openapi.yaml
// (wire.test.ts checks them against the Go types' golden JSON). Times are RFC 3339 strings on
// the wire.

export type Role = 'admin' | 'member' | 'viewer';
export const roles: readonly Role[] = ['admin', 'member', 'viewer'];

export interface Account {
  id: string;
  name: string;
  createdAt: string;
}

export interface AccountMembership {
  id: string;
  name: string;
  role: Role;
}

export interface User {
  id: string;
  email: string;
  name: string;
  role: Role;
  createdAt: string;
}

/** An invitation of the caller's user to join another account (GET /api/v1/invitations). */
export interface Invitation {
  id: string;
  account: Account;
  role: Role;
  invitedBy: string;
  createdAt: string;
  expiresAt: string;
}

export interface Me {
  user: User;
  account: Account;
  role: Role;
  via: 'session' | 'apikey';
  accounts: AccountMembership[];
}

export type APIKeyStatus = 'active' | 'expired' | 'revoked';

export interface APIKey {
  id: string;
  name: string;
  prefix: string;
  role: Role;
  userId: string;
  status: APIKeyStatus;
  createdAt: string;
  expiresAt?: string;
  revokedAt?: string;
  lastUsedAt?: string;
}

export interface CreatedAPIKey extends APIKey {
  token: string;
}

export type AuditResult = 'success' | 'denied' | 'failure';
export const auditResults: readonly AuditResult[] = ['success', 'denied', 'failure'];

export interface AuditEvent {
  id: string;
  time: string;
  actorId?: string;
  actor: string;
  action: string;
  resourceType: string;
  resourceId?: string;
  result: AuditResult;
  requestId?: string;
  sourceIp?: string;
  detail?: string;
}

/** The audit actions the server writes today (docs/api.md). */
export const auditActions = [
  'account.create',
  'account.delete',
  'auth.login',
  'auth.logout',
  'auth.switch-account',
  'user.create',
  'user.update',
  'user.delete',
  'apikey.create',
  'apikey.revoke',
  'project.create',
  'project.delete',
  'pipeline.create',
  'pipeline.update',
  'pipeline.delete',
  'trigger.create',
  'trigger.delete',
  'build.run',
  'build.cancel',
  'build.restart',
  'build.approve',
  'build.deny',
  'context.create',
  'context.update',
  'context.delete',
  'context.decrypt',
  'runner.register',
  'runner.delete',
  'runtime.register',
  'runtime.create-hosted',
  'runtime.rotate-token',
  'runtime.delete',
  'runtime.disconnected',
  'runtime.proxy',
  'runtime.app-proxy',
  'gitops-webhook.set',
] as const;

/** One page of a collection; nextCursor fetches the next. */
export interface Page<T> {
  items: T[];
  nextCursor?: string;
}

export interface ListOptions {
  limit?: number;
  after?: string;
}

export interface AuditFilter {
  actor?: string;
  action?: string;
  resourceType?: string;
  resourceId?: string;
  result?: AuditResult | '';
  since?: string;
  until?: string;
}

export interface LoginRequest {
  email: string;
  password: string;
  /** ID or name; default: the user's first account. */
  account?: string;
}

export interface LoginResponse {
  token: string;
  csrfToken: string;
  expiresAt: string;
  me: Me;
}

export interface CreateAccountRequest {
  name: string;
}

export interface SwitchAccountRequest {
  /** ID or name. */
  account: string;
}

export interface CreateUserRequest {
  email: string;
  role: Role;
  name?: string;
  password?: string;
}

export interface CreatedUser extends User {
  password?: string;
}

export interface UpdateUserRequest {
  role: Role;
}

export interface CreateAPIKeyRequest {
  name: string;
  role?: Role;
  expiresIn?: string;
}

// CI: projects, pipelines, builds, triggers, contexts and runners (client/pipelines.go).

export interface Project {
  id: string;
  name: string;
  /** What attribute-based rules match the project by. */
  tags?: string[];
  createdAt: string;
  ownerTeam?: string;
}

export interface ProjectRequest {
  name: string;
  tags?: string[];
  team?: string;
}

export interface PipelineVariable {
  key: string;
  value: string;
  /** Stored encrypted; the API answers the value masked. */
  encrypted?: boolean;
}

export interface PipelineConfig {
  contexts?: string[];
  variables?: PipelineVariable[];
  runnerLabels?: Record<string, string>;
  concurrency?: number;
  branchConcurrency?: number;
  terminateOlder?: boolean;
  maxAttempts?: number;
  onLeaseExpiry?: '' | 'requeue' | 'fail';
  /** Credentials for specRepo: a context with GIT_TOKEN or GIT_USERNAME/GIT_PASSWORD. */
  specContext?: string;
  /** What attribute-based rules match the pipeline (and its builds) by. */
  tags?: string[];
}

export interface Pipeline {
  id: string;
  name: string;
  project: string;
  /** project/name */
  fullName: string;
  spec: string;
  /** Where the spec is kept in git instead, read at each build's revision. */
  specRepo?: string;
  specPath?: string;
  config: PipelineConfig;
  createdAt: string;
  updatedAt: string;
}

export interface PipelineRequest {
  project?: string;
  name?: string;
  spec?: string;
  specRepo?: string;
  specPath?: string;
  config: PipelineConfig;
}

export interface RunRequest {
  branch?: string;
  sha?: string;
  repo?: string;
  message?: string;
  variables?: Record<string, string>;
}

export type StepStatus = 'pending' | 'running' | 'success' | 'failed' | 'skipped' | 'terminated' | 'pending-approval';

export interface BuildStep {
  name: string;
  stage?: string;
  status: StepStatus | string;
  exitCode: number;
  attempts: number;
  message?: string;
  startedAt?: string;
  finishedAt?: string;
}

export interface Build {
  id: string;
  /** "project/pipeline #number" */
  name: string;
  number: number;
  pipelineId: string;
  pipeline?: string;
  status: string;
  reason?: string;
  /** manual, git, cron, restart */
  trigger: string;
  triggeredBy: string;
  repo?: string;
  branch?: string;
  sha?: string;
  message?: string;
  /** The commit's author, when the trigger knew it. */
  author?: string;
  runnerId?: string;
  attempt: number;
  restartOf?: string;
  logSize: number;
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
  steps?: BuildStep[];
  /** The images the build's steps pushed (GET /api/v1/builds/{id} only). */
  images?: BuildImage[];
}

/** What the builds created on one day (UTC) add up to (GET /api/v1/builds/stats). */
export interface BuildStatsDay {
  /** YYYY-MM-DD */
  date: string;
  total: number;
  /** Of total, those that ended: succeeded, failed, or terminated (the rest). */
  finished: number;
  succeeded: number;
  failed: number;
  /** Builds that started and finished; their average and longest run. */
  ran: number;
  avgDurationMs: number;
  maxDurationMs: number;
  /** Builds that started; their average wait from creation to start. */
  started: number;
  avgQueueWaitMs: number;
  /** Run durations added up: the runner time the day's builds used. */
  busyMs: number;
}

export interface PipelineBuildStats {
  pipelineId: string;
  days: BuildStatsDay[];
}

/** Builds per day over a window, every day present, oldest first; the active builds now. */
export interface BuildStats {
  since: string;
  until: string;
  days: BuildStatsDay[];
  /** With by=pipeline: the pipelines that have builds in the window. */
  pipelines?: PipelineBuildStats[];
  queued: number;
  running: number;
  pendingApproval: number;
}

/** An image a build step pushed to a registry, with the build's commit. */
export interface BuildImage {
  id: string;
  buildId: string;
  step: string;
  /** The registry context's name. */
  registry: string;
  /** The full repository, e.g. ghcr.io/acme/app. */
  repository: string;
  tags: string[];
  /** The manifest digest, sha256:… */
  digest: string;
  /** Bytes: the config and every layer, compressed. */
  size: number;
  sha?: string;
  branch?: string;
  createdAt: string;
}

/** The optional body of approving or denying a build. */
export interface ApprovalRequest {
  comment?: string;
}

export interface RestartRequest {
  /** Only the failed steps and what follows them. */
  fromFailed?: boolean;
}

export interface BuildFilter {
  pipeline?: string;
  status?: string;
  branch?: string;
}

export interface GitTrigger {
  repo: string;
  events: string[];
  branchRegex?: string;
  branchRegexInput?: string;
  pullRequestTargetBranchRegex?: string;
  pullRequestAllowForkEvents?: boolean;
  modifiedFilesGlob?: string;
  disabled?: boolean;
}

export type GitProvider = 'github' | 'gitlab' | 'gitea' | 'bitbucket';
export const gitProviders: readonly GitProvider[] = ['github', 'gitlab', 'gitea', 'bitbucket'];

export interface Trigger {
  id: string;
  name: string;
  type: 'git' | 'cron' | string;
  provider?: GitProvider;
  git?: GitTrigger;
  expression?: string;
  timezone?: string;
  branch?: string;
  variables?: Record<string, string>;
  webhookUrl?: string;
  createdAt: string;
}

export interface TriggerRequest {
  type: 'git' | 'cron';
  provider?: GitProvider;
  git?: GitTrigger;
  secret?: string;
  expression?: string;
  timezone?: string;
  branch?: string;
  variables?: Record<string, string>;
}

export interface CreatedTrigger extends Trigger {
  /** The generated webhook secret: shown once. */
  secret?: string;
}

export type ContextType = 'config' | 'secret' | 'registry' | 'git';

export interface ConfigContext {
  id: string;
  name: string;
  type: ContextType;
  /** Config and secret contexts' values; empty for a registry. */
  values: Record<string, string>;
  registry?: RegistryContext;
  git?: GitContext;
  createdAt: string;
  updatedAt: string;
}

/** A registry context's container registry. */
export interface RegistryContext {
  /** host[:port] and an optional path prefix, e.g. ghcr.io/acme. */
  url: string;
  username?: string;
  /** Masked ("*****") unless decrypted; sent back masked, it keeps the stored one while the URL and CA stay. */
  password?: string;
  /** PEM certificates to trust. */
  ca?: string;
  /** The account's default registry. */
  default?: boolean;
}

/** A git context's provider: git-clone steps clone owner/name through it with its token. */
export interface GitContext {
  /** github, gitlab, gitea or bitbucket. */
  provider: string;
  /** The provider's API base URL. */
  url?: string;
  username?: string;
  /** Masked ("*****") unless decrypted; sent back masked, it keeps the stored one while provider and URL stay. */
  token?: string;
}

export interface ContextRequest {
  name?: string;
  type?: ContextType;
  values?: Record<string, string>;
  registry?: RegistryContext;
  git?: GitContext;
}

export interface Runner {
  id: string;
  name: string;
  labels?: Record<string, string>;
  info?: { concurrency?: number; executors?: string[]; hostname?: string; version?: string; [k: string]: unknown };
  connected: boolean;
  lastSeen?: string;
  createdAt: string;
  versionSkew?: VersionSkew;
}

/** How a runtime's or runner's version stands to the control plane's: agents may lag by one
 * minor version (outdated); further behind, another major, or newer is unsupported (refused);
 * unknown for development builds. */
export interface VersionSkew {
  status: 'current' | 'outdated' | 'unsupported' | 'unknown' | string;
  agent: string;
  server: string;
  message?: string;
}

export interface RegisterRunnerRequest {
  name: string;
  labels?: Record<string, string>;
}

export interface RegisteredRunner extends Runner {
  /** Shown once. */
  token: string;
}

/** What the server answers in place of a secret value. */
export const MASKED = '*****';

export type RuntimeStatus = 'installing' | 'healthy' | 'degraded' | 'disconnected';
export const runtimeStatuses: readonly RuntimeStatus[] = ['healthy', 'degraded', 'disconnected', 'installing'];

export interface RuntimeComponent {
  name: string;
  health: string;
  message?: string;
  version?: string;
}

export interface RuntimeCluster {
  name: string;
  server: string;
  health?: string;
}

export interface Runtime {
  id: string;
  name: string;
  type: 'hybrid' | 'hosted';
  accessMode: 'ingress' | 'tunnel';
  ingressUrl?: string;
  repo?: string;
  version?: string;
  status: RuntimeStatus;
  lastHeartbeat?: string;
  capabilities?: string[];
  components?: RuntimeComponent[];
  clusters?: RuntimeCluster[];
  gitSources?: string[];
  createdAt: string;
  ownerTeam?: string;
  versionSkew?: VersionSkew;
  /** When its token stops working (the server's --runtime-token-ttl); absent: never. */
  tokenExpiresAt?: string;
  /** The last refusal of its own token (expired, or replaced by rotate-token); absent: none. */
  tokenRefusal?: RuntimeRefusal;
}

/** A runtime's refused handshake or heartbeat. */
export interface RuntimeRefusal {
  at: string;
  kind: 'expired' | 'replaced';
  /** What the runtime was told, with what to do. */
  reason: string;
  remote?: string;
}

export interface RegisterRuntimeRequest {
  name: string;
  accessMode?: 'ingress' | 'tunnel';
  ingressHost?: string;
  repo?: string;
  team?: string;
}

export interface RegisteredRuntime extends Runtime {
  token: string;
}

/** One limited resource of the account's plan and the account's use of it (GET /api/v1/plan). */
export interface PlanLimit {
  /** users, runners, concurrent-builds, build-minutes, hosted-runtimes, clusters-per-runtime, applications */
  resource: string;
  /** The most the plan allows; -1 is unlimited. */
  limit: number;
  /** What the account has now (build-minutes: this calendar month, UTC); -1 when counted per runtime. */
  used: number;
  /** "month" for build-minutes. */
  period?: string;
}

/** The account's billing plan (docs/billing.md). */
export interface Plan {
  name: string;
  title: string;
  /** The account was never put on a plan: the catalogue's default applies. */
  default: boolean;
  changedAt?: string;
  limits: PlanLimit[];
}

/** One UTC day of metered use; in Usage.totals, the window's (day absent). */
export interface UsageDay {
  /** YYYY-MM-DD */
  day?: string;
  buildMinutes: number;
  builds: number;
  deployments: number;
  /** Distinct users with an audited action; in totals, the busiest day's. */
  activeUsers: number;
}

/** The account's metered use per day (GET /api/v1/usage), days without use left out. */
export interface Usage {
  plan: string;
  since: string;
  until: string;
  days: UsageDay[];
  totals: UsageDay;
}
