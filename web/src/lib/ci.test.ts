import { describe, expect, it } from 'vitest';
import { buildGraph, buildTree } from './buildGraph';
import { elapsed, formatDuration, isActive, statusTone } from './builds';
import { isBlank, mapFromRows, parsePairs, rowsFromMap, validateRows } from './kv';
import { countLines, describeIssue, issueLine, lineOf, marksByLine, offsetOf, sortIssues, summarize, type LintIssue } from './lint';
import { findMatches, firstMatchFrom, splitForHighlight, stepMatch } from './logSearch';
import { flowList, keyOf, specOutline, stepTitles, stripComment } from './specOutline';
import { MAX_SCROLL_PX, logWindow, scrollTopForRow } from './virtual';

describe('log window', () => {
  it('renders the rows in view plus overscan, like the lists', () => {
    expect(logWindow(0, 400, 20, 100_000, 10)).toEqual({ start: 0, end: 31, height: 2_000_000, shift: 0 });
    expect(logWindow(20 * 50_000, 400, 20, 100_000, 10)).toMatchObject({ start: 49_990, end: 50_031, shift: 0 });
    expect(logWindow(2_000_000, 400, 20, 100_000, 10)).toMatchObject({ end: 100_000 });
    expect(logWindow(0, 400, 20, 0)).toMatchObject({ start: 0, end: 0, height: 0 });
  });

  it('scales a log taller than the browser allows, reaching both ends', () => {
    const count = 3_000_000; // 60 million px at 20 px a row
    const top = logWindow(0, 500, 20, count, 0);
    expect(top).toMatchObject({ start: 0, height: MAX_SCROLL_PX, shift: 0 });
    const bottom = logWindow(MAX_SCROLL_PX - 500, 500, 20, count, 0);
    expect(bottom.end).toBe(count);
    // The last row's bottom edge sits at the bottom of the view.
    const lastTop = (count - 1) * 20 - bottom.shift;
    expect(lastTop + 20).toBeCloseTo(MAX_SCROLL_PX - 500 + 500, 3);
    // Halfway down the scroll bar is halfway through the rows.
    const mid = logWindow((MAX_SCROLL_PX - 500) / 2, 500, 20, count, 0);
    expect(Math.abs(mid.start - count / 2)).toBeLessThan(20);
    // scrollTopForRow is the inverse.
    const st = scrollTopForRow(2_000_000, 500, 20, count);
    expect(logWindow(st, 500, 20, count, 0).start).toBe(2_000_000);
    expect(scrollTopForRow(500, 400, 20, 1000)).toBe(500 * 20);
    expect(scrollTopForRow(999, 400, 20, 1000)).toBe(1000 * 20 - 400);
  });
});

describe('log search', () => {
  const log = ['Building app', '\x1b[31mERROR\x1b[0m: build failed', 'error again, Error!', 'fine'];
  const plain = (i: number) => log[i].replace(/\x1b\[[0-9;]*m/g, '');

  it('finds every match, case-insensitive, in the text as shown', () => {
    const { matches, more } = findMatches(plain, log.length, 'error');
    expect(more).toBe(false);
    expect(matches).toEqual([
      { line: 1, start: 0, end: 5 },
      { line: 2, start: 0, end: 5 },
      { line: 2, start: 13, end: 18 },
    ]);
    expect(findMatches(plain, log.length, 'a.p').matches).toEqual([]); // not a regular expression
    expect(findMatches(plain, log.length, '').matches).toEqual([]);
    expect(findMatches(plain, log.length, 'i', 0, 2)).toMatchObject({ more: true });
  });

  it('steps through matches with wrap-around and starts from a line', () => {
    expect(stepMatch(-1, 3, 1)).toBe(0);
    expect(stepMatch(-1, 3, -1)).toBe(2);
    expect(stepMatch(2, 3, 1)).toBe(0);
    expect(stepMatch(0, 3, -1)).toBe(2);
    expect(stepMatch(0, 0, 1)).toBe(-1);
    const m = findMatches(plain, log.length, 'error').matches;
    expect(firstMatchFrom(m, 2)).toBe(1);
    expect(firstMatchFrom(m, 3)).toBe(0);
  });

  it('splits styled segments at match edges', () => {
    const segs = [
      { text: 'ERROR', style: 1 },
      { text: ': build failed', style: 0 },
    ];
    expect(splitForHighlight(segs, [{ start: 3, end: 9 }]).map((p) => [p.text, p.seg.style, p.mark])).toEqual([
      ['ERR', 1, -1],
      ['OR', 1, 0],
      [': bu', 0, 0],
      ['ild failed', 0, -1],
    ]);
    expect(splitForHighlight(segs, []).map((p) => p.text)).toEqual(['ERROR', ': build failed']);
  });
});

describe('lint issues on lines', () => {
  const spec = "version: '1.0'\nsteps:\n  a:\n    imagee: x\n";
  const issues: LintIssue[] = [
    { line: 3, column: 3, field: 'steps.a.image', message: 'is missing', severity: 'warning' },
    { line: 4, column: 5, field: 'steps.a.imagee', message: 'is not a field', severity: 'error' },
    { line: 4, column: 1, message: 'second on the line', severity: 'warning' },
    { line: 0, column: 0, message: 'no position', severity: 'error' },
    { line: 99, column: 1, message: 'past the end', severity: 'warning' },
  ];

  it('marks each line with its worst problem, clamping positions into the text', () => {
    const marks = marksByLine(issues, countLines(spec));
    expect([...marks.keys()].sort()).toEqual([1, 3, 4, 5]);
    expect(marks.get(4)).toMatchObject({ severity: 'error' });
    expect(marks.get(4)!.issues.map((i) => i.message)).toEqual(['is not a field', 'second on the line']);
    expect(marks.get(3)!.severity).toBe('warning');
    expect(marks.get(1)!.issues[0].message).toBe('no position');
    expect(marks.get(5)!.issues[0].message).toBe('past the end');
    expect(issueLine({ line: 2.7, column: 0, message: '', severity: 'error' }, 10)).toBe(2);
  });

  it('orders errors first, summarises and describes', () => {
    expect(sortIssues(issues).map((i) => i.severity)).toEqual(['error', 'error', 'warning', 'warning', 'warning']);
    expect(summarize(issues)).toBe('2 errors, 3 warnings');
    expect(summarize(issues.slice(1, 2))).toBe('1 error');
    expect(summarize([])).toBe('No problems');
    expect(describeIssue(issues[1])).toBe('line 4, column 5 · steps.a.imagee: is not a field');
    expect(describeIssue(issues[3])).toBe('whole spec · no position');
  });

  it('turns line and column into a cursor position and back', () => {
    expect(offsetOf(spec, 4, 5)).toBe(spec.indexOf('imagee'));
    expect(offsetOf(spec, 4, 500)).toBe(spec.indexOf('\n', spec.indexOf('imagee')));
    expect(offsetOf(spec, 1)).toBe(0);
    expect(offsetOf(spec, 50)).toBe(spec.length);
    expect(lineOf(spec, spec.indexOf('imagee'))).toBe(4);
    expect(countLines('')).toBe(1);
    expect(countLines('a\nb\n')).toBe(3);
  });
});

describe('spec outline', () => {
  const spec = `version: '1.0'
# comment
stages: [build, 'my test']
steps:
  clone:   # a comment
    type: git-clone
    stage: build
    repo: "acme/api" # https://x
    commands:
      - |
        steps:
          fake: {}
  tests:
    type: "parallel"
    stage: 'my test'
    steps:
      unit:
        commands: [go test ./...]
      inner:
        type: parallel
        steps:
          a: {commands: [echo]}
          "b-2":
            commands:
            - echo: not a key
  deploy:
    commands:
    - echo done
hooks:
  on_fail:
    - echo x
`;

  it('reads stages and the parallel nesting of steps', () => {
    expect(specOutline(spec)).toEqual({
      stages: ['build', 'my test'],
      steps: [
        { name: 'clone', stage: 'build', children: [] },
        {
          name: 'tests',
          stage: 'my test',
          children: [
            { name: 'unit', stage: 'my test', children: [] },
            {
              name: 'inner',
              stage: 'my test',
              children: [
                { name: 'a', stage: 'my test', children: [] },
                { name: 'b-2', stage: 'my test', children: [] },
              ],
            },
          ],
        },
        { name: 'deploy', children: [] },
      ],
    });
    expect(specOutline('steps:\n  a: {image: x, stage: "two"}\n')?.steps).toEqual([{ name: 'a', stage: 'two', children: [] }]);
  });

  it('reads block-list stages and gives up on forms it does not follow', () => {
    expect(specOutline('stages:\n  - one\n  - "two"\nsteps:\n  a:\n    commands: [x]\n')?.stages).toEqual(['one', 'two']);
    expect(specOutline('steps: {a: {commands: [x]}}')).toBeUndefined();
    expect(specOutline('steps:\n  <<: *common\n')).toBeUndefined();
    expect(specOutline('version: 1.0\n')).toBeUndefined();
    expect(specOutline('')).toBeUndefined();
  });

  it('reads keys, comments and flow lists like YAML', () => {
    expect(keyOf('image: golang:1.26')).toEqual(['image', 'golang:1.26']);
    expect(keyOf("'my step': ")).toEqual(['my step', '']);
    expect(keyOf('- echo: x')).toBeUndefined();
    expect(keyOf('http://x')).toBeUndefined();
    expect(stripComment("a: 'x # y' # z")).toBe("a: 'x # y'");
    expect(flowList("[a, 'b, c', \"d\"]")).toEqual(['a', 'b, c', 'd']);
    expect(flowList('a')).toBeUndefined();
  });
});

describe('build graph', () => {
  const steps = [
    { name: 'clone', stage: 'build' },
    { name: 'tests', stage: 'my test' },
    { name: 'unit', stage: 'my test' },
    { name: 'lint', stage: 'my test' },
    { name: 'extra', stage: '' },
  ];
  const outline = {
    stages: ['build', 'my test'],
    steps: [
      { name: 'clone', children: [] },
      {
        name: 'tests',
        children: [
          { name: 'unit', children: [] },
          { name: 'lint', children: [] },
        ],
      },
      { name: 'extra', children: [] },
    ],
  };

  it('puts parallel children under their group and groups by stage in declared order', () => {
    const g = buildGraph(steps, outline);
    expect(g.map((c) => [c.stage, c.nodes.map((n) => [n.step.name, n.children.map((k) => k.step.name)])])).toEqual([
      ['default', [['extra', []]]],
      ['build', [['clone', []]]],
      ['my test', [['tests', ['unit', 'lint']]]],
    ]);
  });

  it('shows steps the runner has not reported yet, with their stage', () => {
    const reported = steps.slice(0, 2);
    const g = buildGraph(reported, outline, (n) => ({ name: n.name, stage: n.stage ?? '', status: 'pending' }));
    expect(g.map((c) => [c.stage, c.nodes.map((n) => [n.step.name, n.children.map((k) => k.step.name)])])).toEqual([
      ['default', [['extra', []]]],
      ['build', [['clone', []]]],
      ['my test', [['tests', ['unit', 'lint']]]],
    ]);
    expect(g[0].nodes[0].step).toMatchObject({ status: 'pending' });
  });

  it('falls back to a flat list when the outline does not describe the build', () => {
    const g = buildTree(steps, { stages: [], steps: [{ name: 'clone', children: [] }] });
    expect(g.map((n) => n.step.name)).toEqual(['clone', 'tests', 'unit', 'lint', 'extra']);
    expect(buildGraph([{ name: 'a' }, { name: 'b' }])).toEqual([{ stage: '', nodes: [{ step: { name: 'a' }, children: [] }, { step: { name: 'b' }, children: [] }] }]);
    expect(buildGraph([])).toEqual([]);
  });
});

describe('key=value rows', () => {
  it('validates keys like the server and finds duplicates', () => {
    const rows = [
      { key: 'GOOD_1', value: 'x' },
      { key: '1bad', value: 'x' },
      { key: '', value: 'orphan' },
      { key: 'GOOD_1', value: 'y' },
      { key: '', value: '' },
    ];
    const errs = validateRows(rows, 'variable');
    expect(errs[0]).toBeUndefined();
    expect(errs[1]).toMatch(/not a variable name/);
    expect(errs[2]).toMatch(/Give a key/);
    expect(errs[3]).toMatch(/given twice \(also row 1\)/);
    expect(errs[4]).toBeUndefined();
    expect(validateRows([{ key: 'freshet.dev/os', value: 'linux' }, { key: '-x', value: '' }], 'label')).toEqual([undefined, expect.stringMatching(/not a label key/)]);
  });

  it('round-trips maps and reads pasted lines', () => {
    expect(rowsFromMap({ B: '2', A: '1' })).toEqual([
      { key: 'A', value: '1' },
      { key: 'B', value: '2' },
    ]);
    expect(mapFromRows([{ key: ' A ', value: '1' }, { key: '', value: '' }])).toEqual({ A: '1' });
    expect(isBlank({ key: ' ', value: '' })).toBe(true);
    expect(parsePairs('A=1\n# c\nexport B="two words"\n\nC=x=y')).toEqual([
      { key: 'A', value: '1' },
      { key: 'B', value: 'two words' },
      { key: 'C', value: 'x=y' },
    ]);
    expect(parsePairs('just text')).toBeUndefined();
    expect(parsePairs('A=1\nnot a pair')).toBeUndefined();
  });
});

describe('build states', () => {
  it('knows which builds are still going and how to colour them', () => {
    expect(['queued', 'running', 'pending-approval', 'terminating'].every(isActive)).toBe(true);
    expect(['success', 'failed', 'terminated'].some(isActive)).toBe(false);
    expect(statusTone('failed')).toBe('danger');
    expect(statusTone('weird')).toBe('neutral');
  });

  it('formats durations', () => {
    expect(formatDuration(undefined)).toBe('—');
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(4_250)).toBe('4.2 s');
    expect(formatDuration(45_000)).toBe('45 s');
    expect(formatDuration(185_000)).toBe('3 m 05 s');
    expect(formatDuration(3_720_000)).toBe('1 h 02 m');
    expect(elapsed('2026-01-01T00:00:00Z', '2026-01-01T00:00:02.5Z')).toBe(2500);
    expect(elapsed('2026-01-01T00:00:00Z', undefined, Date.parse('2026-01-01T00:01:00Z'))).toBe(60_000);
    expect(elapsed(undefined)).toBeUndefined();
  });
});

describe('step titles from the spec', () => {
  it('reads each step\'s title, nested steps too, and leaves block scalars alone', () => {
    const o = specOutline(
      [
        "version: '1.0'",
        'steps:',
        '  unit:',
        '    title: "Unit tests"',
        '    image: alpine',
        '  checks:',
        '    type: parallel',
        '    steps:',
        "      lint: {image: alpine}",
        '      vet:',
        "        title: 'Go vet'",
        '  notes:',
        '    title: |',
        '      long',
        '',
      ].join('\n'),
    );
    expect([...stepTitles(o)]).toEqual([
      ['unit', 'Unit tests'],
      ['vet', 'Go vet'],
    ]);
    expect(stepTitles(undefined).size).toBe(0);
  });
});
