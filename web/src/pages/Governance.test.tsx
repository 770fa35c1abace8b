import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { AuthzExplanation, Rule, Team } from '../api/governance';
import { Explanation, RulesTable } from './Rules';
import { MASK, SSOSummary } from './SSOSettings';
import { TeamCard } from './Teams';

const rule = (r: Partial<Rule>): Rule => ({ id: 'rl_1', team: 'qa', action: 'run', kind: 'pipelines', summary: 'team qa may run pipelines', createdAt: '2026-01-01T00:00:00Z', ...r });
const list = (items: Rule[]) => ({ data: { items }, error: undefined, loading: false });

describe('RulesTable', () => {
  it('shows effect, action, kind and attributes; deletes hand-written rules only', () => {
    const html = renderToStaticMarkup(
      <RulesTable
        admin
        onDelete={() => {}}
        list={list([rule({ tags: ['prod'] }), rule({ id: 'rl_2', action: 'sync', kind: 'applications', project: 'shop', apps: ['web-*'], origin: 'AppProject shop of runtime edge, role qa' })])}
      />,
    );
    expect(html).toContain('allow');
    expect(html).toContain('<code>prod</code>');
    expect(html).toContain('hand-written');
    expect(html).toContain('AppProject shop of runtime edge, role qa');
    expect(html).toContain('data-derived="true"');
    expect(html.match(/Delete rule: /g)).toHaveLength(1);
    expect(html).toContain('read-only');
  });

  it('disables delete for non-admins and says why', () => {
    const html = renderToStaticMarkup(<RulesTable admin={false} onDelete={() => {}} list={list([rule({})])} />);
    expect(html).toContain('disabled=""');
    expect(html).toContain('Only admins can create or delete rules.');
  });
});

describe('Explanation', () => {
  it('says the decision, the role part, the deciding rule and each step', () => {
    const a: AuthzExplanation = {
      user: 'jo@example.com',
      action: 'run',
      resource: 'pipelines/shop/build',
      allowed: true,
      role: 'member',
      permission: 'pipelines.run',
      roleAllows: true,
      governed: true,
      rule: 'rl_1',
      reasons: ['role member holds pipelines.run', 'rule rl_1 matches'],
    };
    const html = renderToStaticMarkup(<Explanation answer={a} rules={[rule({})]} />);
    expect(html).toContain('allowed');
    expect(html).toContain('team qa may run pipelines');
    expect(html).toContain('<li>rule rl_1 matches</li>');
    expect(renderToStaticMarkup(<Explanation answer={{ ...a, allowed: false, rule: undefined }} rules={[]} />)).toContain('denied');
  });
});

describe('SSOSummary', () => {
  it('masks the stored secret and shows the login URL', () => {
    const html = renderToStaticMarkup(
      <SSOSummary
        config={{
          issuer: 'https://idp.example',
          clientId: 'freshet',
          clientSecretSet: true,
          scopes: null,
          emailClaim: '',
          nameClaim: '',
          groupsClaim: '',
          allowedDomains: ['example.com'],
          requireSso: true,
          breakGlass: 'ops@example.com',
          loginUrl: 'https://freshet.example/auth/sso/acc_1/login',
          updatedAt: '2026-01-01T00:00:00Z',
        }}
      />,
    );
    expect(html).toContain(MASK);
    expect(html).toContain('break-glass admin: ops@example.com');
    expect(html).toContain('https://freshet.example/auth/sso/acc_1/login');
  });
});

describe('TeamCard', () => {
  const team: Team = {
    id: 'tm_1',
    name: 'platform',
    createdAt: '2026-01-01T00:00:00Z',
    members: [{ userId: 'u1', email: 'jo@example.com', addedAt: '2026-01-01T00:00:00Z' }],
    owns: { projects: ['shop'], runtimes: ['edge'] },
  };
  it('lists members and what the team owns, linked; admin actions only for admins', () => {
    const admin = renderToStaticMarkup(<TeamCard team={team} admin users={[]} onAdded={() => {}} onRemoveMember={() => {}} onDelete={() => {}} />);
    expect(admin).toContain('jo@example.com');
    expect(admin).toContain('href="/runtimes/edge"');
    expect(admin).toContain('href="/pipelines?project=shop"');
    expect(admin).toContain('Remove jo@example.com from platform');
    expect(admin).toContain('Add member');
    const viewer = renderToStaticMarkup(<TeamCard team={{ ...team, owns: { projects: null, runtimes: null } }} admin={false} users={[]} onAdded={() => {}} onRemoveMember={() => {}} onDelete={() => {}} />);
    expect(viewer).not.toContain('Remove jo@example.com');
    expect(viewer).toContain('Nothing yet');
  });
});
