import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { emptyLookups } from '../lib/auditNames';
import { AuditDetail } from './Audit';

describe('AuditDetail', () => {
  it('shows every field of the request, the actor and resource named and linked', () => {
    const l = emptyLookups();
    l.users.set('usr_1', { email: 'jo@example.com', name: 'Jo' });
    l.apiKeys.set('key_1', 'ci');
    const html = renderToStaticMarkup(
      <AuditDetail
        lookups={l}
        event={{
          id: 'aud_1',
          time: '2026-01-02T03:04:05Z',
          actorId: 'usr_1',
          actor: 'jo@example.com (api key ci)',
          action: 'apikey.revoke',
          resourceType: 'apikey',
          resourceId: 'key_1',
          result: 'success',
          requestId: 'req-123',
          sourceIp: '192.0.2.1',
          detail: 'revoked <b>early</b>',
        }}
      />,
    );
    expect(html).toContain('<a href="/users"');
    expect(html).toContain('Jo</a>');
    expect(html).toContain('with API key <a href="/api-keys"');
    expect(html).toContain('<a href="/api-keys"');
    expect(html).toContain('ci</a>');
    expect(html).toContain('<code>key_1</code>');
    expect(html).toContain('192.0.2.1');
    expect(html).toContain('req-123');
    expect(html).toContain('aud_1');
    expect(html).toContain('revoked &lt;b&gt;early&lt;/b&gt;');
  });
});
