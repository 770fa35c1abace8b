import { describe, expect, it } from 'vitest';
import { compactLines, differing, diffModeFrom, diffStats, parseUnifiedDiff, toSplitRows, type DiffFold, type DiffLine, type SplitRow } from './diff';

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

/** A row of the split view as "old:text | new:text" (or "== text" across both). */
function showRow(r: SplitRow): string {
  if (r.kind === 'full') return `== ${r.line.text}`;
  const left = r.left ? `${r.left.old}:${r.left.text}` : '·';
  const right = r.right ? `${r.right.new}:${r.right.text}` : '·';
  return `${left} | ${right}`;
}

describe('side by side', () => {
  it('puts context on both sides and a changed line across from what replaced it', () => {
    expect(toSplitRows(parseUnifiedDiff(changed)).map(showRow)).toEqual([
      '== --- live/ConfigMap/web/settings',
      '== +++ desired/ConfigMap/web/settings',
      '== @@ -1,4 +1,4 @@',
      '1:apiVersion: v1 | 1:apiVersion: v1',
      '2:data: | 2:data:',
      '3:  color: blue | 3:  color: green',
      '4:kind: ConfigMap | 4:kind: ConfigMap',
      '== @@ -10,2 +10,3 @@',
      '10:metadata: | 10:metadata:',
      '11:  name: settings | 11:  name: settings',
      '· | 12:  namespace: web',
    ]);
  });

  it('leaves the left side empty for a created object, the right for removed lines', () => {
    const rows = toSplitRows(parseUnifiedDiff(created));
    expect(rows.slice(3).map(showRow)).toEqual(['· | 1:apiVersion: v1', '· | 2:data:', '· | 3:  color: blue']);
    expect(toSplitRows(parseUnifiedDiff('@@ -1,3 +1,1 @@\n-a\n-b\n c\n')).map(showRow)).toEqual(['== @@ -1,3 +1,1 @@', '1:a | ·', '2:b | ·', '3:c | 1:c']);
  });

  it('does not pair removals that follow additions with them: each run on its own', () => {
    const rows = toSplitRows(parseUnifiedDiff('@@ -1,2 +1,2 @@\n+x\n-a\n+y\n-b\n'));
    expect(rows.slice(1).map(showRow)).toEqual(['· | 1:x', '1:a | 2:y', '2:b | ·']);
  });

  it('keeps every line: each changed line once, each context line on both sides', () => {
    const lines = parseUnifiedDiff(changed);
    const rows = toSplitRows(lines);
    const left = rows.flatMap((r) => (r.kind === 'pair' && r.left ? [r.left] : []));
    const right = rows.flatMap((r) => (r.kind === 'pair' && r.right ? [r.right] : []));
    expect(left.filter((l) => l.kind === 'del')).toEqual(lines.filter((l) => l.kind === 'del'));
    expect(right.filter((l) => l.kind === 'add')).toEqual(lines.filter((l) => l.kind === 'add'));
    expect(left.filter((l) => l.kind === 'context')).toEqual(right.filter((l) => l.kind === 'context'));
  });
});

/** A hunk of n unchanged lines but one, line `at`, changed. */
function longHunk(n: number, at: number): string {
  const out = [`@@ -1,${n} +1,${n} @@`];
  for (let i = 1; i <= n; i++) {
    if (i === at) out.push(`-line ${i}`, `+line ${i} changed`);
    else out.push(` line ${i}`);
  }
  return out.join('\n') + '\n';
}

const show = (items: (DiffLine | DiffFold)[]) => items.map((x) => (x.kind === 'fold' ? `fold@${x.start}:${x.lines.length}` : `${x.kind}:${x.text}`));

describe('compact', () => {
  it('keeps three unchanged lines either side of a change and folds the rest', () => {
    const lines = parseUnifiedDiff(longHunk(20, 10));
    const items = compactLines(lines, 3);
    expect(show(items)).toEqual([
      'hunk:@@ -1,20 +1,20 @@',
      'fold@1:6',
      'context:line 7',
      'context:line 8',
      'context:line 9',
      'del:line 10',
      'add:line 10 changed',
      'context:line 11',
      'context:line 12',
      'context:line 13',
      'fold@15:7',
    ]);
    // The folds hold exactly the lines left out: nothing lost, nothing twice.
    expect(items.flatMap((x) => (x.kind === 'fold' ? x.lines : [x]))).toEqual(lines);
  });

  it('folds the unchanged lines between two changes only beyond both contexts', () => {
    const d = ['@@ -1,12 +1,12 @@', '-a', '+A', ...Array.from({ length: 10 }, (_, i) => ` u${i + 1}`), '-b', '+B'].join('\n');
    expect(show(compactLines(parseUnifiedDiff(d), 3))).toEqual([
      'hunk:@@ -1,12 +1,12 @@',
      'del:a',
      'add:A',
      'context:u1',
      'context:u2',
      'context:u3',
      'fold@6:4',
      'context:u8',
      'context:u9',
      'context:u10',
      'del:b',
      'add:B',
    ]);
  });

  it('does not fold a single line: the fold would take as much room', () => {
    const d = ['@@ -1,9 +1,9 @@', '-a', '+A', ' u1', ' u2', ' u3', ' u4', ' u5', ' u6', ' u7', '-b', '+B'].join('\n');
    expect(compactLines(parseUnifiedDiff(d), 3).some((x) => x.kind === 'fold')).toBe(false);
    const d2 = d.replace(' u7', ' u7\n u8').replace('-1,9 +1,9', '-1,10 +1,10');
    expect(show(compactLines(parseUnifiedDiff(d2), 3))).toContain('fold@6:2');
  });

  it('takes the context asked for, and zero for only the changes', () => {
    const lines = parseUnifiedDiff(longHunk(9, 5));
    expect(show(compactLines(lines, 1))).toEqual(['hunk:@@ -1,9 +1,9 @@', 'fold@1:3', 'context:line 4', 'del:line 5', 'add:line 5 changed', 'context:line 6', 'fold@8:3']);
    expect(show(compactLines(lines, 0))).toEqual(['hunk:@@ -1,9 +1,9 @@', 'fold@1:4', 'del:line 5', 'add:line 5 changed', 'fold@7:4']);
  });

  it('sees a change through a "no newline" note, and leaves short diffs as they are', () => {
    const d = '@@ -1,6 +1,6 @@\n-a\n\\ No newline at end of file\n+A\n u1\n u2\n u3\n u4\n u5\n';
    expect(show(compactLines(parseUnifiedDiff(d), 1))).toEqual(['hunk:@@ -1,6 +1,6 @@', 'del:a', 'meta:\\ No newline at end of file', 'add:A', 'context:u1', 'fold@5:4']);
    expect(compactLines(parseUnifiedDiff(changed), 3)).toEqual(parseUnifiedDiff(changed));
  });
});

describe('the diff mode in the URL', () => {
  it('reads the three modes and falls back to unified', () => {
    expect(['unified', 'split', 'compact', null, '', 'Split', 'side'].map(diffModeFrom)).toEqual(['unified', 'split', 'compact', 'unified', 'unified', 'unified', 'unified']);
  });
});
