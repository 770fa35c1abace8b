// Teams, attribute-based rules, resource owners and the account's single sign-on
// (client/governance.go, docs/security.md). Loaded with the Settings pages that use them.
import { request } from './client';
import type { Page } from './types';

const v1 = '/api/v1';
const seg = encodeURIComponent;

export interface TeamMember {
  userId: string;
  email: string;
  addedAt: string;
}

/** What a team owns, by name. */
export interface TeamOwns {
  projects: string[] | null;
  runtimes: string[] | null;
}

export interface Team {
  id: string;
  name: string;
  members: TeamMember[] | null;
  createdAt: string;
  owns: TeamOwns;
}

export interface CreateTeamRequest {
  name: string;
}

export interface TeamMemberRequest {
  /** Email or user ID of a member of the account. */
  user: string;
}

/** Gives a project or runtime to a team (name or ID; empty: no team). */
export interface SetOwnerRequest {
  team: string;
}

/** The actions and kinds of rules (internal/rbac/rules.go). Rules only allow. */
export const ruleActions = ['create', 'read', 'update', 'delete', 'run', 'approve', 'sync', 'terminate'] as const;
export const ruleKinds = ['projects', 'pipelines', 'builds', 'contexts', 'runtimes', 'clusters', 'applications', 'gitsources', 'workflows'] as const;

export interface Rule {
  id: string;
  team?: string;
  teamId?: string;
  user?: string;
  userId?: string;
  action: string;
  kind: string;
  tags?: string[];
  runtime?: string;
  cluster?: string;
  namespace?: string;
  owner?: string;
  project?: string;
  apps?: string[];
  exceptApps?: string[];
  /** Set on a rule derived from a runtime's AppProject roles: read-only. */
  origin?: string;
  summary: string;
  createdAt: string;
}

export interface CreateRuleRequest {
  team?: string;
  user?: string;
  action: string;
  kind: string;
  tags?: string[];
  runtime?: string;
  cluster?: string;
  namespace?: string;
  owner?: string;
}

export interface AuthzExplanation {
  user: string;
  action: string;
  /** KIND/NAME */
  resource: string;
  allowed: boolean;
  role: string;
  permission?: string;
  roleAllows: boolean;
  governed: boolean;
  rule?: string;
  reasons: string[] | null;
  tags?: string[];
  runtime?: string;
  cluster?: string;
  namespace?: string;
  owner?: string;
}

export interface ExplainQuery {
  user?: string;
  action: string;
  resource: string;
  runtime?: string;
  cluster?: string;
  namespace?: string;
  tags?: string;
}

export interface SSOConfig {
  issuer: string;
  clientId: string;
  /** The client secret is never sent back; only whether one is stored. */
  clientSecretSet: boolean;
  scopes: string[] | null;
  emailClaim: string;
  nameClaim: string;
  groupsClaim: string;
  allowedDomains: string[] | null;
  requireSso: boolean;
  /** The break-glass admin's email, who may still log in with a password. */
  breakGlass?: string;
  loginUrl: string;
  updatedAt: string;
}

export interface SSOConfigRequest {
  issuer: string;
  clientId: string;
  /** Empty keeps the stored secret. */
  clientSecret?: string;
  scopes?: string[];
  emailClaim?: string;
  nameClaim?: string;
  groupsClaim?: string;
  allowedDomains: string[] | null;
  requireSso?: boolean;
  breakGlass?: string;
}

const ALL = 500;

export const teams = {
  list: (signal?: AbortSignal) => request<Page<Team>>(`${v1}/teams`, { query: { limit: ALL }, signal }),
  create: (name: string) => request<Team>(`${v1}/teams`, { method: 'POST', body: { name } satisfies CreateTeamRequest }),
  remove: (team: string) => request<void>(`${v1}/teams/${seg(team)}`, { method: 'DELETE' }),
  addMember: (team: string, user: string) => request<void>(`${v1}/teams/${seg(team)}/members`, { method: 'POST', body: { user } satisfies TeamMemberRequest }),
  removeMember: (team: string, user: string) => request<void>(`${v1}/teams/${seg(team)}/members/${seg(user)}`, { method: 'DELETE' }),
};

export const rules = {
  list: (signal?: AbortSignal) => request<Page<Rule>>(`${v1}/rules`, { query: { limit: ALL }, signal }),
  create: (body: CreateRuleRequest) => request<Rule>(`${v1}/rules`, { method: 'POST', body }),
  remove: (id: string) => request<void>(`${v1}/rules/${seg(id)}`, { method: 'DELETE' }),
  explain: (q: ExplainQuery, signal?: AbortSignal) =>
    request<AuthzExplanation>(`${v1}/authz/explain`, {
      query: { user: q.user || undefined, action: q.action, resource: q.resource, runtime: q.runtime || undefined, cluster: q.cluster || undefined, namespace: q.namespace || undefined, tags: q.tags || undefined },
      signal,
    }),
};

export const owners = {
  setProject: (project: string, team: string) => request<unknown>(`${v1}/projects/${seg(project)}/owner`, { method: 'PUT', body: { team } satisfies SetOwnerRequest }),
  setRuntime: (runtime: string, team: string) => request<unknown>(`${v1}/runtimes/${seg(runtime)}/owner`, { method: 'PUT', body: { team } satisfies SetOwnerRequest }),
};

export const sso = {
  get: (signal?: AbortSignal) => request<SSOConfig>(`${v1}/sso`, { signal }),
  set: (body: SSOConfigRequest) => request<SSOConfig>(`${v1}/sso`, { method: 'PUT', body }),
  remove: () => request<void>(`${v1}/sso`, { method: 'DELETE' }),
};
