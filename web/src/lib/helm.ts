// Helm releases as the Helm page groups and colours them.
import type { HelmRelease } from '../api/analytics';
import type { Tone } from './tone';

/** deployed green, failed red, pending-* amber, superseded and the rest grey. */
export function helmStatusTone(status: string): Tone {
  if (status === 'deployed') return 'success';
  if (status === 'failed') return 'danger';
  if (status.startsWith('pending-') || status === 'uninstalling') return 'warning';
  return 'neutral';
}

export interface ClusterGroup {
  key: string;
  runtime: string;
  cluster: string;
  namespaces: { namespace: string; releases: HelmRelease[] }[];
}

/** Releases by runtime and cluster, then namespace, each sorted by name (the API's order kept otherwise). */
export function groupReleases(releases: HelmRelease[]): ClusterGroup[] {
  const clusters = new Map<string, ClusterGroup>();
  for (const r of releases) {
    const key = `${r.runtime}\u0000${r.cluster}`;
    let c = clusters.get(key);
    if (!c) {
      c = { key, runtime: r.runtime, cluster: r.cluster, namespaces: [] };
      clusters.set(key, c);
    }
    let n = c.namespaces.find((x) => x.namespace === r.namespace);
    if (!n) {
      n = { namespace: r.namespace, releases: [] };
      c.namespaces.push(n);
    }
    n.releases.push(r);
  }
  const out = [...clusters.values()].sort((a, b) => a.cluster.localeCompare(b.cluster) || a.runtime.localeCompare(b.runtime));
  for (const c of out) {
    c.namespaces.sort((a, b) => a.namespace.localeCompare(b.namespace));
    for (const n of c.namespaces) n.releases.sort((a, b) => a.name.localeCompare(b.name));
  }
  return out;
}
