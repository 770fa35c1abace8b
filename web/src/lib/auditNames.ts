// Audit events name actors and resources as the server recorded them: an email (with the API key
// or the runtime's ingress it came through), "system", and resources by type and ID. The audit
// page reads the account's users, keys, runtimes, pipelines, projects and runners once and turns
// those into names people know, with a link to the resource's page where the UI has one.
import type { AuditEvent } from '../api/types';

/** What the page loaded to name things; each map from ID (and name) to what to show. */
export interface AuditLookups {
  users: Map<string, { email: string; name: string }>;
  apiKeys: Map<string, string>;
  /** ID and name → name. */
  runtimes: Map<string, string>;
  /** ID and project/name → project/name. */
  pipelines: Map<string, string>;
  /** ID and name → name. */
  projects: Map<string, string>;
  runners: Map<string, string>;
  /** ID and name → name. */
  teams: Map<string, string>;
  accounts: Map<string, string>;
}

export const emptyLookups = (): AuditLookups => ({
  users: new Map(),
  apiKeys: new Map(),
  runtimes: new Map(),
  pipelines: new Map(),
  projects: new Map(),
  runners: new Map(),
  teams: new Map(),
  accounts: new Map(),
});

export interface ActorView {
  kind: 'user' | 'apikey' | 'runtime' | 'system' | 'anonymous';
  /** The main label: the user's name (or email), or "system". */
  label: string;
  /** The email when label is a name; the key's or runtime's name. */
  email?: string;
  key?: string;
  runtime?: string;
  href?: string;
}

const KEY_RE = /^(.*) \(api key (.*)\)$/;
const INGRESS_RE = /^(.*) \(via runtime (.*)'s ingress\)$/;

export function describeActor(e: Pick<AuditEvent, 'actor' | 'actorId'>, l: AuditLookups): ActorView {
  if (e.actor === 'system') return { kind: 'system', label: 'Freshet (system)' };
  if (e.actor === 'anonymous') return { kind: 'anonymous', label: 'anonymous' };
  let email = e.actor;
  let key: string | undefined;
  let runtime: string | undefined;
  const k = KEY_RE.exec(e.actor);
  const r = INGRESS_RE.exec(e.actor);
  if (k) [, email, key] = k;
  else if (r) [, email, runtime] = r;
  const u = e.actorId ? l.users.get(e.actorId) : undefined;
  if (u) email = u.email;
  const label = u?.name || email;
  const base = { label, email: label !== email ? email : undefined, href: u || e.actorId ? '/users' : undefined };
  if (key !== undefined) return { ...base, kind: 'apikey', key };
  if (runtime !== undefined) return { ...base, kind: 'runtime', runtime };
  return { ...base, kind: 'user' };
}

/** A one-line form of the actor, for titles and the copyable text. */
export function actorText(a: ActorView): string {
  const who = a.email ? `${a.label} <${a.email}>` : a.label;
  if (a.kind === 'apikey') return `${who} with API key ${a.key}`;
  if (a.kind === 'runtime') return `${who} via runtime ${a.runtime}`;
  return who;
}

export interface ResourceView {
  /** "pipeline", "API key", …: the type in words. */
  type: string;
  /** The resource's name when known, else its ID; empty when the event names none. */
  name: string;
  /** Its ID when name is something else. */
  id?: string;
  href?: string;
}

const TYPE_WORDS: Record<string, string> = {
  apikey: 'API key',
  'notification-channel': 'notification channel',
  'notification-subscription': 'notification subscription',
  'issue-tracker': 'issue tracker',
};

const seg = encodeURIComponent;

export function describeResource(e: Pick<AuditEvent, 'resourceType' | 'resourceId'>, l: AuditLookups): ResourceView {
  const type = TYPE_WORDS[e.resourceType] ?? e.resourceType;
  const id = e.resourceId ?? '';
  if (!id) return { type, name: '' };
  const named = (name: string | undefined, href?: string): ResourceView => (name && name !== id ? { type, name, id, href } : { type, name: id, href });
  switch (e.resourceType) {
    case 'user': {
      const u = l.users.get(id);
      return named(u ? u.email : undefined, '/users');
    }
    case 'apikey':
      return named(l.apiKeys.get(id), '/api-keys');
    case 'runtime': {
      const n = l.runtimes.get(id);
      return named(n, n ? `/runtimes/${seg(n)}` : undefined);
    }
    case 'pipeline': {
      const n = l.pipelines.get(id);
      return named(n, n ? `/pipelines/${n.split('/').map(seg).join('/')}` : undefined);
    }
    case 'project': {
      const n = l.projects.get(id);
      return named(n, n ? `/pipelines?project=${seg(n)}` : undefined);
    }
    case 'build':
      return named(undefined, `/builds/${seg(id)}`);
    case 'runner':
      return named(l.runners.get(id), '/settings/runners');
    case 'context':
      return named(undefined, `/settings/contexts?context=${seg(id)}`);
    case 'team':
      return named(l.teams.get(id), '/settings/teams');
    case 'rule':
      return named(undefined, '/settings/rules');
    case 'account':
      return named(l.accounts.get(id), '/settings');
    case 'environment':
    case 'product':
      return named(undefined, '/environments');
    default:
      return named(undefined);
  }
}
