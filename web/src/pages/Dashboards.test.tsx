// The DORA metric cards, the Products matrix and the Helm tables.
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { DORAReport, HelmRelease } from '../api/analytics';
import type { Environment, ProductApplication, ProductView } from '../api/products';
import { MetricCards } from './Dora';
import { HistoryTable, ReleaseGroups } from './Helm';
import { ProductMatrix } from './Products';

const report = {
  deploymentFrequency: { value: 2, unit: 'per-day', band: 'elite' },
  leadTimeForChanges: { value: 0, unit: 'seconds', band: 'none' },
  changeFailureRate: { value: 12.5, unit: 'percent', band: 'medium' },
  timeToRestore: { value: 90000, unit: 'seconds', band: 'medium' },
} as DORAReport;

describe('DORA metric cards', () => {
  it('shows the four metrics with value and band', () => {
    const html = renderToStaticMarkup(<MetricCards report={report} />);
    expect(html).toMatch(/metric-deploymentFrequency" data-band="elite">.*2 per day.*Elite/);
    expect(html).toMatch(/metric-leadTimeForChanges" data-band="none">.*—.*No data/);
    expect(html).toMatch(/metric-changeFailureRate" data-band="medium">.*12.5%.*Medium/);
    expect(html).toMatch(/metric-timeToRestore" data-band="medium">.*>1d<.*Medium/);
  });

  it("shows a product's medians as the server computed them, with no per-application note", () => {
    const html = renderToStaticMarkup(<MetricCards report={{ ...report, leadTimeForChanges: { value: 10800, unit: 'seconds', band: 'elite' } }} />);
    expect(html).toMatch(/metric-leadTimeForChanges" data-band="elite">.*3h.*Elite/);
    expect(html).not.toContain('per application');
  });
});

const env = (name: string, kind: string, order: number): Environment => ({ name, kind, order, targets: [], createdAt: '', updatedAt: '' });
const app = (name: string, health: string): ProductApplication => ({ runtime: 'edge', name, cluster: 'c', namespace: 'n', health, sync: 'Synced', revision: 'b'.repeat(40), images: [] });

describe('the Products matrix', () => {
  it('puts each product in a row and its applications under their environment, in promotion order', () => {
    const envs = [env('staging', 'non-prod', 1), env('production', 'prod', 2)];
    const views: ProductView[] = [
      {
        product: { name: 'shop', patterns: ['shop-*'], defined: true, applications: 3 },
        environments: [
          { environment: envs[0], applications: [app('shop-staging', 'Healthy')] },
          { environment: envs[1], applications: [app('shop-prod', 'Degraded')] },
        ],
        promotions: [],
        unplaced: [app('shop-dev', 'Healthy')],
      },
      { product: { name: 'blog', patterns: [], defined: false, applications: 0 }, environments: [], promotions: [], unplaced: [] },
    ];
    const html = renderToStaticMarkup(<ProductMatrix environments={envs} views={views} />);
    expect(html.indexOf('>staging ')).toBeLessThan(html.indexOf('>production '));
    expect(html).toContain('href="/environments?product=shop"');
    expect(html).toMatch(/product-shop"[^]*shop-staging[^]*shop-prod[^]*shop-dev/);
    expect(html).toContain('In no environment');
    expect(html).toContain('bbbbbbb</code>');
    expect(html).toContain('Degraded');
    expect(html).toMatch(/product-blog"[^]*by annotation/);
    expect(html).toContain('href="/applications/edge/shop-prod"');
  });
});

const rel = (cluster: string, namespace: string, name: string, over: Partial<HelmRelease> = {}): HelmRelease => ({
  id: `hr_${cluster}_${namespace}_${name}`,
  runtime: 'edge',
  runtimeId: 'rt_1',
  cluster,
  namespace,
  name,
  chart: 'redis',
  chartVersion: '18.1.0',
  appVersion: '7.2.3',
  status: 'deployed',
  revision: 4,
  updated: '2026-11-26T10:00:00Z',
  description: 'Upgrade complete',
  reportedAt: '2026-11-26T10:00:05Z',
  ...over,
});

describe('the Helm page', () => {
  it('lists releases per cluster and namespace with chart, version, app version, revision and status, each linking to its history', () => {
    const html = renderToStaticMarkup(<ReleaseGroups releases={[rel('prod', 'cache', 'redis'), rel('prod', 'web', 'ingress', { chart: 'ingress-nginx', status: 'failed', revision: 2 }), rel('dev', 'cache', 'redis')]} />);
    expect(html.indexOf('helm-cluster-dev')).toBeLessThan(html.indexOf('helm-cluster-prod'));
    expect(html).toMatch(/helm-ns-prod-cache[^]*helm-release-cache-redis[^]*redis[^]*18\.1\.0[^]*7\.2\.3[^]*>4<[^]*deployed/);
    expect(html).toMatch(/helm-release-web-ingress[^]*ingress-nginx[^]*>2<[^]*failed/);
    expect(html).toContain('href="/helm/cache/redis?runtime=edge&amp;cluster=prod"');
  });

  it("shows a release's revision history newest first, as given", () => {
    const html = renderToStaticMarkup(
      <HistoryTable
        history={[
          { revision: 2, status: 'deployed', chart: 'redis', chartVersion: '18.1.0', appVersion: '7.2.3', updated: '2026-11-26T10:00:00Z', description: 'Upgrade complete' },
          { revision: 1, status: 'superseded', chart: 'redis', chartVersion: '18.0.0', appVersion: '7.2.0', updated: null, description: 'Install complete' },
        ]}
      />,
    );
    expect(html.indexOf('helm-revision-2')).toBeLessThan(html.indexOf('helm-revision-1'));
    expect(html).toContain('redis 18.0.0');
    expect(html).toContain('superseded');
    expect(html).toContain('Install complete');
  });
});
