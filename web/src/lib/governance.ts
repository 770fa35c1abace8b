// Forms of the Settings pages for single sign-on, teams and rules: what the user typed to what
// the API takes, checked here first with messages naming the field (the server checks again).
import type { CreateRuleRequest, ExplainQuery, Rule, SSOConfig, SSOConfigRequest } from '../api/governance';
import { email, name, type Errors } from './validate';

/** Splits a list typed with commas, spaces or new lines; empties dropped. */
export function splitList(v: string): string[] {
  return v
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

export interface SSOForm {
  issuer: string;
  clientId: string;
  /** Empty: keep the stored secret. */
  clientSecret: string;
  scopes: string;
  emailClaim: string;
  nameClaim: string;
  groupsClaim: string;
  allowedDomains: string;
  requireSso: boolean;
  breakGlass: string;
}

export function ssoFormFrom(c?: SSOConfig): SSOForm {
  return {
    issuer: c?.issuer ?? '',
    clientId: c?.clientId ?? '',
    clientSecret: '',
    scopes: (c?.scopes ?? []).join(' '),
    emailClaim: c?.emailClaim ?? '',
    nameClaim: c?.nameClaim ?? '',
    groupsClaim: c?.groupsClaim ?? '',
    allowedDomains: (c?.allowedDomains ?? []).join(', '),
    requireSso: c?.requireSso ?? false,
    breakGlass: c?.breakGlass ?? '',
  };
}

/** Checks the form; `secretStored` says whether an empty secret keeps one. */
export function ssoErrors(f: SSOForm, secretStored: boolean): Errors<keyof SSOForm> {
  const e: Errors<keyof SSOForm> = {};
  const issuer = f.issuer.trim();
  if (!issuer) e.issuer = "Give the identity provider's issuer URL.";
  else if (!/^https?:\/\/[^\s/]+/.test(issuer)) e.issuer = `"${issuer}" is not an http(s) URL.`;
  if (!f.clientId.trim()) e.clientId = 'Give the client ID the identity provider gave this account.';
  if (!secretStored && !f.clientSecret) e.clientSecret = 'Give the client secret; it is stored encrypted and never shown again.';
  if (!f.clientId.trim().match(/^\S+$/) && f.clientId.trim()) e.clientId = 'The client ID has no spaces.';
  if (splitList(f.allowedDomains).length === 0) e.allowedDomains = 'Give the email domains the provider may log users in with (like example.com).';
  for (const d of splitList(f.allowedDomains)) {
    if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/i.test(d)) {
      e.allowedDomains = `"${d}" is not a domain name (like example.com).`;
      break;
    }
  }
  if (f.requireSso) {
    if (!f.breakGlass.trim()) e.breakGlass = 'Requiring single sign-on needs a break-glass admin, who may still log in with a password.';
    else if (f.breakGlass.includes('@')) e.breakGlass = email(f.breakGlass.trim());
  }
  return e;
}

export function ssoRequest(f: SSOForm): SSOConfigRequest {
  const req: SSOConfigRequest = { issuer: f.issuer.trim(), clientId: f.clientId.trim(), allowedDomains: splitList(f.allowedDomains) };
  if (f.clientSecret) req.clientSecret = f.clientSecret;
  const scopes = splitList(f.scopes);
  if (scopes.length) req.scopes = scopes;
  if (f.emailClaim.trim()) req.emailClaim = f.emailClaim.trim();
  if (f.nameClaim.trim()) req.nameClaim = f.nameClaim.trim();
  if (f.groupsClaim.trim()) req.groupsClaim = f.groupsClaim.trim();
  if (f.requireSso) {
    req.requireSso = true;
    req.breakGlass = f.breakGlass.trim();
  }
  return req;
}

/** A team's name follows the account's name rules. */
export function teamNameError(v: string): string | undefined {
  return name(v.trim(), 'Team name');
}

export interface RuleForm {
  subject: 'team' | 'user';
  team: string;
  user: string;
  action: string;
  kind: string;
  tags: string;
  runtime: string;
  cluster: string;
  namespace: string;
  owner: string;
}

export const emptyRuleForm: RuleForm = { subject: 'team', team: '', user: '', action: 'read', kind: 'projects', tags: '', runtime: '', cluster: '', namespace: '', owner: '' };

/** The kinds that carry tags, and those that carry runtime, cluster and namespace (rbac). */
export const taggedKinds = ['projects', 'pipelines', 'builds'];
export const gitopsKinds = ['runtimes', 'clusters', 'applications', 'gitsources', 'workflows'];

export function ruleErrors(f: RuleForm): Errors<'team' | 'user' | 'tags' | 'runtime'> {
  const e: Errors<'team' | 'user' | 'tags' | 'runtime'> = {};
  if (f.subject === 'team' && !f.team) e.team = 'Choose the team the rule is for.';
  if (f.subject === 'user' && !f.user.trim()) e.user = 'Give the email of the member the rule is for.';
  if (f.tags.trim() && !taggedKinds.includes(f.kind)) e.tags = `Only ${taggedKinds.join(', ')} have tags; ${f.kind} do not.`;
  if ((f.runtime.trim() || f.cluster.trim() || f.namespace.trim()) && !gitopsKinds.includes(f.kind)) e.runtime = `Runtime, cluster and namespace describe ${gitopsKinds.join(', ')} only.`;
  return e;
}

export function ruleRequest(f: RuleForm): CreateRuleRequest {
  const req: CreateRuleRequest = { action: f.action, kind: f.kind };
  if (f.subject === 'team') req.team = f.team;
  else req.user = f.user.trim();
  const tags = splitList(f.tags);
  if (tags.length) req.tags = tags;
  if (f.runtime.trim()) req.runtime = f.runtime.trim();
  if (f.cluster.trim()) req.cluster = f.cluster.trim();
  if (f.namespace.trim()) req.namespace = f.namespace.trim();
  if (f.owner) req.owner = f.owner;
  return req;
}

/** The attributes a rule asks of a resource, as label/value pairs (none: any resource of its kind). */
export function ruleAttributes(r: Rule): { label: string; value: string }[] {
  const out: { label: string; value: string }[] = [];
  if (r.tags?.length) out.push({ label: 'tag', value: r.tags.join(' or ') });
  if (r.runtime) out.push({ label: 'runtime', value: r.runtime });
  if (r.cluster) out.push({ label: 'cluster', value: r.cluster });
  if (r.namespace) out.push({ label: 'namespace', value: r.namespace });
  if (r.project) out.push({ label: 'project', value: r.project });
  if (r.apps?.length) out.push({ label: 'apps', value: r.apps.join(', ') });
  if (r.exceptApps?.length) out.push({ label: 'except', value: r.exceptApps.join(', ') });
  if (r.owner) out.push({ label: 'owner', value: r.owner === 'own-team' ? "the rule's team" : r.owner });
  return out;
}

export interface ExplainForm {
  user: string;
  action: string;
  kind: string;
  name: string;
  runtime: string;
  cluster: string;
  namespace: string;
  tags: string;
}

export const emptyExplainForm: ExplainForm = { user: '', action: 'read', kind: 'projects', name: '', runtime: '', cluster: '', namespace: '', tags: '' };

export function explainErrors(f: ExplainForm): Errors<'name' | 'user'> {
  const e: Errors<'name' | 'user'> = {};
  if (!f.name.trim()) e.name = `Give the name of the ${f.kind.replace(/s$/, '')} to explain.`;
  if (f.user.trim().includes('@')) e.user = email(f.user.trim());
  return e;
}

export function explainQuery(f: ExplainForm): ExplainQuery {
  return {
    user: f.user.trim() || undefined,
    action: f.action,
    resource: `${f.kind}/${f.name.trim()}`,
    runtime: f.runtime.trim() || undefined,
    cluster: f.cluster.trim() || undefined,
    namespace: f.namespace.trim() || undefined,
    tags: splitList(f.tags).join(',') || undefined,
  };
}
