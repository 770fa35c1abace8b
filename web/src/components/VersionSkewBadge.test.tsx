import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { VersionWithSkew } from './VersionSkewBadge';

describe('VersionWithSkew', () => {
  it('shows the version alone when current, unknown or not reported', () => {
    expect(renderToStaticMarkup(<VersionWithSkew version="v1.4.0" skew={{ status: 'current', agent: 'v1.4.0', server: 'v1.4.1' }} />)).toBe('v1.4.0');
    expect(renderToStaticMarkup(<VersionWithSkew version="dev" skew={{ status: 'unknown', agent: 'dev', server: 'dev' }} />)).toBe('dev');
    expect(renderToStaticMarkup(<VersionWithSkew />)).toBe('—');
  });

  it('marks an agent one minor version behind outdated, naming both versions', () => {
    const html = renderToStaticMarkup(
      <VersionWithSkew version="v1.3.0" skew={{ status: 'outdated', agent: 'v1.3.0', server: 'v1.4.0', message: 'runtime v1.3.0 lags the control plane (v1.4.0) by one minor version' }} />,
    );
    expect(html).toContain('v1.3.0');
    expect(html).toContain('badge-warning');
    expect(html).toContain('outdated · control plane v1.4.0');
    expect(html).toContain('title="runtime v1.3.0 lags the control plane (v1.4.0) by one minor version"');
  });

  it('marks a refused agent unsupported, with its version from the skew when the row has none', () => {
    const html = renderToStaticMarkup(<VersionWithSkew skew={{ status: 'unsupported', agent: 'v1.1.0', server: 'v1.4.0', message: 'not supported' }} />);
    expect(html).toContain('v1.1.0');
    expect(html).toContain('badge-danger');
    expect(html).toContain('unsupported · control plane v1.4.0');
  });
});
