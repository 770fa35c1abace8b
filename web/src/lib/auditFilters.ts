// The audit log's filters, as they live in the URL (?actor=&action=&result=&since=).
import type { AuditFilter, AuditResult } from '../api/types';
import { auditResults } from '../api/types';

export const sincePresets = [
  { value: '', label: 'Any time' },
  { value: '1h', label: 'Last hour' },
  { value: '24h', label: 'Last 24 hours' },
  { value: '168h', label: 'Last 7 days' },
  { value: '720h', label: 'Last 30 days' },
] as const;

export interface AuditFilterForm {
  actor: string;
  action: string;
  result: AuditResult | '';
  /** A preset value, or 'custom' with sinceCustom holding the text. */
  since: string;
  sinceCustom: string;
}

export function filterFromParams(p: URLSearchParams): AuditFilter {
  const result = p.get('result') ?? '';
  return {
    actor: p.get('actor')?.trim() || undefined,
    action: p.get('action')?.trim() || undefined,
    result: (auditResults as readonly string[]).includes(result) ? (result as AuditResult) : undefined,
    since: p.get('since')?.trim() || undefined,
  };
}

export function formFromFilter(f: AuditFilter): AuditFilterForm {
  const since = f.since ?? '';
  const preset = sincePresets.some((s) => s.value === since);
  return { actor: f.actor ?? '', action: f.action ?? '', result: f.result ?? '', since: preset ? since : 'custom', sinceCustom: preset ? '' : since };
}

export function paramsFromForm(f: AuditFilterForm): Record<string, string | undefined> {
  const since = f.since === 'custom' ? f.sinceCustom.trim() : f.since;
  return { actor: f.actor.trim() || undefined, action: f.action.trim() || undefined, result: f.result || undefined, since: since || undefined };
}

/** True when any filter narrows the log. */
export function isFiltered(f: AuditFilter): boolean {
  return !!(f.actor || f.action || f.result || f.since);
}
