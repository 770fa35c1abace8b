import { describe, expect, it } from 'vitest';
import { differing, diffStats, parseUnifiedDiff } from './diff';

// As the engine writes them: live → desired.
const created = `--- live/ConfigMap/web/settings
+++ desired/ConfigMap/web/settings
@@ -0,0 +1,3 @@
+apiVersion: v1
+data:
+  color: blue
`;

const changed = `--- live/ConfigMap/web/settings
+++ desired/ConfigMap/web/settings
@@ -1,4 +1,4 @@
 apiVersion: v1
 data:
-  color: blue
+  color: green
 kind: ConfigMap
@@ -10,2 +10,3 @@
 metadata:
-  name: settings
+  name: settings
+  namespace: web
`;

describe('unified diff lines', () => {
  it('classifies a created object: headers, one hunk, added lines numbered from 1', () => {
    const lines = parseUnifiedDiff(created);
    expect(lines.map((l) => l.kind)).toEqual(['file', 'file', 'hunk', 'add', 'add', 'add']);
    expect(lines.filter((l) => l.kind === 'add').map((l) => [l.new, l.text])).toEqual([
      [1, 'apiVersion: v1'],
      [2, 'data:'],
      [3, '  color: blue'],
    ]);
    expect(lines[3].old).toBeUndefined();
    expect(diffStats(lines)).toEqual({ added: 3, removed: 0 });
  });

  it('numbers context, removed and added lines on their own sides, across hunks', () => {
    const lines = parseUnifiedDiff(changed);
    const shown = lines.map((l) => `${l.kind}:${l.old ?? ''}:${l.new ?? ''}:${l.text}`);
    expect(shown).toEqual([
      'file:::--- live/ConfigMap/web/settings',
      'file:::+++ desired/ConfigMap/web/settings',
      'hunk:::@@ -1,4 +1,4 @@',
      'context:1:1:apiVersion: v1',
      'context:2:2:data:',
      'del:3::  color: blue',
      'add::3:  color: green',
      'context:4:4:kind: ConfigMap',
      'hunk:::@@ -10,2 +10,3 @@',
      'context:10:10:metadata:',
      'del:11::  name: settings',
      'add::11:  name: settings',
      'add::12:  namespace: web',
    ]);
    expect(diffStats(lines)).toEqual({ added: 3, removed: 2 });
  });

  it('reads lines by the hunk counts, so a removed "-- x" or added "++ y" is not a header', () => {
    const d = ['@@ -1,2 +1,2 @@', '--- not a header', ' same', '+++ not a header either', ''].join('\n');
    expect(parseUnifiedDiff(d).map((l) => [l.kind, l.text])).toEqual([
      ['hunk', '@@ -1,2 +1,2 @@'],
      ['del', '-- not a header'],
      ['context', 'same'],
      ['add', '++ not a header either'],
    ]);
  });

  it('takes an empty line inside a hunk as context, keeps "no newline" notes, and tolerates CRLF', () => {
    const d = '@@ -1,3 +1,3 @@\r\n a\r\n\r\n-b\r\n\\ No newline at end of file\r\n+c\r\n';
    expect(parseUnifiedDiff(d).map((l) => l.kind)).toEqual(['hunk', 'context', 'context', 'del', 'meta', 'add']);
  });

  it('reads a hunk header without counts as one line each side', () => {
    const lines = parseUnifiedDiff('@@ -5 +5 @@\n-x\n+y\n');
    expect(lines.map((l) => [l.kind, l.old ?? l.new])).toEqual([
      ['hunk', undefined],
      ['del', 5],
      ['add', 5],
    ]);
  });

  it('keeps only resources that differ', () => {
    const items = [
      { name: 'a', status: 'Synced' },
      { name: 'b', status: 'OutOfSync', diff: changed },
      { name: 'c', status: 'Missing', diff: created },
      { name: 'd', status: 'RequiresPruning' },
    ];
    expect(differing(items).map((d) => d.name)).toEqual(['b', 'c', 'd']);
    expect(differing([{ status: 'Synced' }])).toEqual([]);
  });

  it('gives nothing for an empty diff', () => {
    expect(parseUnifiedDiff('')).toEqual([]);
  });
});
