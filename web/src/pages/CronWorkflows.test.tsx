import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { CronWorkflow } from '../api/workflows';
import { CronRuns, CronSummary, CronWorkflowTable, cronHref } from './CronWorkflows';

const now = Date.parse('2026-01-02T04:00:00Z');
const cw: CronWorkflow = {
  name: 'nightly',
  namespace: 'ci',
  uid: 'u',
  schedules: ['0 3 * * *', '0 15 * * *'],
  timezone: 'Europe/Berlin',
  concurrencyPolicy: 'Forbid',
  startingDeadlineSeconds: 60,
  suspended: false,
  stopExpression: 'cronworkflow.failed >= 3',
  when: '{{= cronworkflow.lastScheduledTime == nil || (now() - cronworkflow.lastScheduledTime).Hours() > 6 }}',
  phase: 'Active',
  succeeded: 4,
  failed: 1,
  lastScheduledTime: '2026-01-02T03:00:00Z',
  nextScheduledTime: '2026-01-02T15:00:00Z',
  active: ['nightly-1767322800'],
  conditions: null,
  template: 'git-clone',
  entrypoint: '',
  creator: 'dev@example.com',
  createdAt: '2026-01-01T00:00:00Z',
};

describe('the CronWorkflows list', () => {
  it('shows name, schedules, timezone, suspended, last scheduled time, counts and active runs, linking to each', () => {
    const html = renderToStaticMarkup(
      <CronWorkflowTable runtime="hy" items={[cw, { ...cw, name: 'weekly', suspended: true, active: null, lastScheduledTime: null, timezone: '', succeeded: 0, failed: 7 }]} now={now} />,
    );
    expect(html).toContain(`href="${cronHref('hy', cw)}"`);
    expect(html).toContain('href="/delivery-pipelines/cron-workflows/hy/ci/nightly"');
    expect(html).toContain('<code>0 3 * * *, 0 15 * * *</code>');
    expect(html).toContain('Europe/Berlin');
    expect(html).toContain('1 hour ago');
    expect(html).toContain('<td>4</td><td>1</td>');
    expect(html).toContain('href="/workflows/hy/ci/nightly-1767322800"');
    const weekly = html.slice(html.indexOf('data-testid="cron-weekly"'));
    expect(weekly).toContain('Suspended');
    expect(weekly).toContain('never');
    expect(weekly).toContain('UTC');
    expect(weekly).toContain('<td>0</td><td>7</td>');
    expect(weekly).toContain('none');
  });

  it('shows a CronWorkflow its controller refused with the condition naming the field', () => {
    const html = renderToStaticMarkup(
      <CronWorkflowTable runtime="hy" items={[{ ...cw, conditions: [{ type: 'SpecError', status: 'True', message: 'spec.when: "x >" does not compile' }] }]} now={now} />,
    );
    expect(html).toContain('SpecError: spec.when: &quot;x &gt;&quot; does not compile');
  });
});

describe('a CronWorkflow page', () => {
  it('summarises its spec: schedules, timezone, policy, when, stop strategy, template, times and counts', () => {
    const html = renderToStaticMarkup(<CronSummary cw={cw} now={now} />);
    for (const s of ['Active', '0 3 * * *, 0 15 * * *', 'Europe/Berlin', 'Forbid', '60 s', 'cronworkflow.lastScheduledTime == nil', 'cronworkflow.failed &gt;= 3', '<code>git-clone</code>', '4 / 1', 'dev@example.com']) {
      expect(html).toContain(s);
    }
    const stopped = renderToStaticMarkup(<CronSummary cw={{ ...cw, phase: 'Stopped', when: '', template: '', entrypoint: 'main' }} now={now} />);
    expect(stopped).toContain('Stopped');
    expect(stopped).toContain('entrypoint <code>main</code>');
  });

  it('lists its runs linking to the live run page or the archived run', () => {
    const html = renderToStaticMarkup(
      <CronRuns
        runtime="hy"
        now={now}
        runs={[
          { name: 'nightly-2', namespace: 'ci', phase: 'Running', startedAt: '2026-01-02T03:00:00Z', finishedAt: null, live: true, message: '' },
          { name: 'nightly-1', namespace: 'ci', phase: 'Failed', startedAt: '2026-01-01T03:00:00Z', finishedAt: '2026-01-01T03:01:00Z', live: false, archiveId: 'wfa_1', message: 'exit 1' },
        ]}
      />,
    );
    expect(html).toContain('href="/workflows/hy/ci/nightly-2"');
    expect(html).toContain('href="/archived-workflows/wfa_1"');
    expect(html).toContain('exit 1');
    expect(renderToStaticMarkup(<CronRuns runtime="hy" now={now} runs={[]} />)).toContain('No runs yet');
  });
});
