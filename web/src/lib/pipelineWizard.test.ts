import { describe, expect, test } from 'vitest';
import { validateWizard, wizardRequest, type WizardForm } from './pipelineWizard';

const base: WizardForm = {
  runtime: 'hybrid',
  gitSource: 'ci',
  name: 'build-on-push',
  eventType: 'github',
  endpoint: '',
  schedule: '',
  owner: 'acme',
  repository: 'shop',
  secretName: 'github-hook',
  secretKey: '',
  templateFrom: 'existing',
  template: 'git-clone',
  templateManifest: '',
  namespace: '',
  parameters: [{ name: 'repo', value: 'https://example.com/a.git' }, { name: '', value: 'dropped' }],
};

describe('validateWizard', () => {
  test('a good form passes', () => {
    expect(validateWizard(base)).toEqual({});
  });
  test.each([
    ['name', { name: 'Build_On_Push' }, /Name "Build_On_Push" is not a DNS-1123 name/],
    ['name', { name: '' }, /Name is required/],
    ['name', { name: 'a'.repeat(53) }, /longer than 52/],
    ['namespace', { namespace: '-ns' }, /Namespace "-ns"/],
    ['secretName', { secretName: '' }, /Secret name is required/],
    ['secretName', { secretName: 'Hook!' }, /Secret name "Hook!"/],
    ['owner', { owner: '' }, /Owner is required/],
    ['repository', { repository: '' }, /Repository is required/],
    ['endpoint', { endpoint: '/a/../b' }, /Endpoint "\/a\/..\/b"/],
    ['template', { template: 'Bad Name' }, /Template "Bad Name"/],
    ['template', { templateFrom: 'hub' as const, template: 'git-clone' }, /still loading/],
    ['schedule', { eventType: 'calendar' as const, schedule: '' }, /Schedule is required/],
    ['schedule', { eventType: 'calendar' as const, schedule: 'daily' }, /Schedule "daily" is not a cron schedule/],
    ['runtime', { runtime: '' }, /Runtime is required/],
    ['gitSource', { gitSource: '' }, /Git Source is required/],
  ])('%s: %j', (field, edit, msg) => {
    const e = validateWizard({ ...base, ...edit });
    expect(e[field as keyof typeof e]).toMatch(msg);
  });
  test('a calendar needs no secret or repository; a webhook no repository', () => {
    expect(validateWizard({ ...base, eventType: 'calendar', schedule: '0 3 * * *', secretName: '', owner: '', repository: '' })).toEqual({});
    expect(validateWizard({ ...base, eventType: 'webhook', owner: '', repository: '' })).toEqual({});
  });
});

describe('wizardRequest', () => {
  test('a git provider with an existing template: values are passed as data, empty parameters dropped', () => {
    const r = wizardRequest({ ...base, repository: 'shop\nkind: Secret' });
    expect(r).toEqual({
      name: 'build-on-push',
      event: { type: 'github', secretName: 'github-hook', owner: 'acme', repository: 'shop\nkind: Secret' },
      workflowTemplate: 'git-clone',
      parameters: [{ name: 'repo', value: 'https://example.com/a.git' }],
    });
  });
  test('a calendar with a Hub template sends its manifest', () => {
    const r = wizardRequest({ ...base, eventType: 'calendar', schedule: ' 0 3 * * * ', templateFrom: 'hub', templateManifest: 'kind: WorkflowTemplate', parameters: [] });
    expect(r).toEqual({ name: 'build-on-push', event: { type: 'calendar', schedule: '0 3 * * *' }, templateManifest: 'kind: WorkflowTemplate' });
  });
});
