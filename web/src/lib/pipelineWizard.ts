// The Delivery Pipeline wizard's form: its checks (each error keyed by the field it names, as
// the runtime names them) and the request it sends. The runtime builds the YAML from these
// values with an encoder and checks it again; nothing here pastes values into text.
import type { DeliveryPipelineCommitRequest } from '../api/workflows';

export type EventType = 'webhook' | 'calendar' | 'github' | 'gitlab' | 'gitea' | 'bitbucket';
export const EVENT_TYPES: { value: EventType; label: string }[] = [
  { value: 'webhook', label: 'Webhook' },
  { value: 'calendar', label: 'Calendar (schedule)' },
  { value: 'github', label: 'GitHub' },
  { value: 'gitlab', label: 'GitLab' },
  { value: 'gitea', label: 'Gitea' },
  { value: 'bitbucket', label: 'Bitbucket' },
];

export interface WizardForm {
  runtime: string;
  gitSource: string;
  name: string;
  eventType: EventType;
  endpoint: string;
  schedule: string;
  owner: string;
  repository: string;
  secretName: string;
  secretKey: string;
  /** hub: a Hub template committed with the pipeline; existing: one in the runtime. */
  templateFrom: 'hub' | 'existing';
  template: string;
  /** The Hub template's manifest, once loaded. */
  templateManifest: string;
  namespace: string;
  parameters: { name: string; value: string }[];
}

export type WizardField = 'runtime' | 'gitSource' | 'name' | 'endpoint' | 'schedule' | 'owner' | 'repository' | 'secretName' | 'template' | 'namespace';

/** The longest pipeline name: a run is named NAME- and five more characters. */
export const MAX_PIPELINE_NAME = 52;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const SECRET_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const ENDPOINT = /^\/[A-Za-z0-9\-._~/]*$/;

/** A DNS-1123 label check, naming the field. */
export function dnsLabel(v: string, field: string, max = 63): string | undefined {
  if (!v) return `${field} is required.`;
  if (v.length > max) return `${field} "${v}" is longer than ${max} characters.`;
  if (!DNS_LABEL.test(v)) return `${field} "${v}" is not a DNS-1123 name: lowercase letters, digits and '-', starting and ending with a letter or digit.`;
  return undefined;
}

export function validateWizard(f: WizardForm): Partial<Record<WizardField, string>> {
  const e: Partial<Record<WizardField, string>> = {};
  if (!f.runtime) e.runtime = 'Runtime is required: a hybrid runtime runs Delivery Pipelines.';
  if (!f.gitSource) e.gitSource = 'Git Source is required: the pipeline is committed to its repository.';
  const n = dnsLabel(f.name, 'Name', MAX_PIPELINE_NAME);
  if (n) e.name = n;
  if (f.namespace) {
    const ns = dnsLabel(f.namespace, 'Namespace');
    if (ns) e.namespace = ns;
  }
  if (f.eventType === 'calendar') {
    if (!f.schedule.trim()) e.schedule = 'Schedule is required: a cron schedule, as 0 3 * * *.';
    else if (f.schedule.trim().split(/\s+/).length < 5 && !f.schedule.startsWith('@'))
      e.schedule = `Schedule "${f.schedule}" is not a cron schedule: five fields (minute hour day month weekday), or @daily, @hourly.`;
  } else {
    if (f.endpoint && (!ENDPOINT.test(f.endpoint) || f.endpoint.includes('..') || f.endpoint.includes('//')))
      e.endpoint = `Endpoint "${f.endpoint}" is not a URL path: start with /, then letters, digits and -._~ (no .. segments).`;
    if (!f.secretName) e.secretName = 'Secret name is required: the Secret holding the webhook secret (Freshet serves no unauthenticated webhook).';
    else if (!SECRET_NAME.test(f.secretName) || f.secretName.length > 253)
      e.secretName = `Secret name "${f.secretName}" is not a Secret name: lowercase letters, digits, '-' and '.'.`;
    if (f.eventType !== 'webhook') {
      if (!f.owner && f.eventType !== 'gitlab') e.owner = 'Owner is required: the user or organization of the repository.';
      if (!f.repository) e.repository = 'Repository is required: the repository whose events start the pipeline.';
    }
  }
  if (!f.template) e.template = 'Template is required: the WorkflowTemplate the pipeline runs.';
  else if (f.templateFrom === 'existing') {
    const t = dnsLabel(f.template, 'Template');
    if (t) e.template = t;
  } else if (!f.templateManifest) e.template = `Template "${f.template}" is still loading from the Hub.`;
  return e;
}

/** The request the wizard sends (validateWizard passed). */
export function wizardRequest(f: WizardForm): DeliveryPipelineCommitRequest {
  const ev: DeliveryPipelineCommitRequest['event'] = { type: f.eventType };
  if (f.eventType === 'calendar') ev.schedule = f.schedule.trim();
  else {
    if (f.endpoint) ev.endpoint = f.endpoint;
    ev.secretName = f.secretName;
    if (f.secretKey) ev.secretKey = f.secretKey;
    if (f.eventType !== 'webhook') {
      if (f.owner) ev.owner = f.owner;
      ev.repository = f.repository;
    }
  }
  const req: DeliveryPipelineCommitRequest = { name: f.name, event: ev };
  if (f.templateFrom === 'hub') req.templateManifest = f.templateManifest;
  else req.workflowTemplate = f.template;
  if (f.namespace) req.namespace = f.namespace;
  const params = f.parameters.filter((p) => p.name);
  if (params.length) req.parameters = params;
  return req;
}
