// The sync options of a manual sync (Argo CD's sync panel): what the panel offers and the
// "Key=value" strings the app-proxy's SyncRequest.options carries (docs/gitops.md, sync options).

export interface SyncOptionChoice {
  /** The option's key in Argo CD's syncOptions. */
  key: string;
  /** The panel's label (Argo CD's words). */
  label: string;
  /** What it does, shown beside it. */
  hint: string;
}

/** The boolean options the panel offers; checked means Key=true (Validate: Key=false). */
export const SYNC_OPTION_CHOICES: readonly SyncOptionChoice[] = [
  { key: 'ApplyOutOfSyncOnly', label: 'Apply out of sync only', hint: 'leave synced resources alone' },
  { key: 'PruneLast', label: 'Prune last', hint: 'prune after every wave is applied and healthy' },
  { key: 'Replace', label: 'Replace', hint: 'replace the objects (PUT) instead of applying them' },
  { key: 'Validate', label: 'Skip schema validation', hint: 'drop fields the schema does not declare' },
  { key: 'CreateNamespace', label: 'Auto-create namespace', hint: 'create the destination namespace when it is missing' },
  { key: 'RespectIgnoreDifferences', label: 'Respect ignore differences', hint: 'keep the live values of ignored fields' },
];

export const PRUNE_POLICIES = ['foreground', 'background', 'orphan'] as const;
export type PrunePolicy = (typeof PRUNE_POLICIES)[number];

/** The options strings of the panel's choices: checked keys, and the prune policy unless it is the default. */
export function syncOptionStrings(checked: ReadonlySet<string>, prunePolicy: PrunePolicy = 'foreground'): string[] {
  const out: string[] = [];
  for (const c of SYNC_OPTION_CHOICES) {
    if (!checked.has(c.key)) continue;
    out.push(c.key === 'Validate' ? 'Validate=false' : `${c.key}=true`);
  }
  if (prunePolicy !== 'foreground') out.push(`PrunePropagationPolicy=${prunePolicy}`);
  return out;
}
