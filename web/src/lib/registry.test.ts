import { describe, expect, test } from 'vitest';
import type { BuildImage } from '../api/types';
import { byteSize, imageRows, registryUrlError, shortDigest } from './registry';

describe('registryUrlError mirrors the server', () => {
  test.each(['ghcr.io', 'ghcr.io/acme', '127.0.0.1:5000', '[::1]:5000', '[fe80::1]', 'registry.local:443/team/sub-group/x_y', 'localhost:5000', 'a.example/a__b'])(
    '%s is valid',
    (url) => expect(registryUrlError(url)).toBeUndefined(),
  );
  test.each([
    ['', /required/],
    ['https://ghcr.io', /scheme/],
    ['ghcr_io/acme', /not a host name/],
    ['fe80::1:5000', /not a host name/],
    ['[fe80::1]x', /IPv6/],
    ['registry.local:0', /Port "0"/],
    ['registry.local:65536', /Port "65536"/],
    ['registry.local:', /Port ""/],
    ['ghcr.io/Acme', /Path part "Acme"/],
    ['ghcr.io/acme/', /Path part ""/],
  ])('%s is refused', (url, want) => expect(registryUrlError(url)).toMatch(want));
});

test('digests and sizes are shown short', () => {
  expect(shortDigest('sha256:' + 'ab'.repeat(32))).toBe('sha256:abababababab');
  expect(shortDigest('sha256:abc')).toBe('sha256:abc');
  expect(byteSize(900)).toBe('900 B');
  expect(byteSize(13_421_773)).toBe('12.8 MiB');
  expect(byteSize(2048)).toBe('2.0 KiB');
});

test('a build image is a row per tag, or one by digest when untagged', () => {
  const base: BuildImage = { id: 'img_1', buildId: 'bld_1', step: 'build', registry: 'ghcr', repository: 'ghcr.io/acme/app', tags: ['1.0', 'latest'], digest: 'sha256:' + 'cd'.repeat(32), size: 1, createdAt: '' };
  const rows = imageRows([base, { ...base, id: 'img_2', step: 'push', tags: [] }]);
  expect(rows.map((r) => r.ref)).toEqual(['ghcr.io/acme/app:1.0', 'ghcr.io/acme/app:latest', 'ghcr.io/acme/app@sha256:cdcdcdcdcdcd']);
  expect(new Set(rows.map((r) => r.key)).size).toBe(3);
  expect(imageRows(undefined)).toEqual([]);
});
