import { describe, expect, it } from 'vitest';
import { flatSteps, specColumns, specGraph } from './specGraph';

const SPEC = `version: '1.0'
stages: [build, test, release]
steps:
  clone:
    type: git-clone
    repo: acme/app
  tests:
    type: parallel
    stage: test
    fail_fast: false
    steps:
      unit:
        image: golang:1.26
      lint:
        title: Lint the code
        image: golangci/golangci-lint
  approve:
    type: pending-approval
    stage: release
    when:
      branch:
        only: [main]
  publish:
    image: alpine
    stage: release
    when:
      steps:
        - name: approve
          on: [approved]
      condition:
        all:
          x: 'true'
`;

describe('specGraph', () => {
  it('reads stages, steps, parallel children (in their group stage) and the when/fail_fast markers', () => {
    const r = specGraph(SPEC);
    if (!r.ok) throw new Error(r.error.message);
    const g = r.graph;
    expect(g.stages).toEqual(['build', 'test', 'release']);
    expect(flatSteps(g.steps).map((s) => `${s.name}@${s.stage ?? '-'}:${s.type}`)).toEqual([
      'clone@-:git-clone',
      'tests@test:parallel',
      'unit@test:freestyle',
      'lint@test:freestyle',
      'approve@release:pending-approval',
      'publish@release:freestyle',
    ]);
    const tests = g.steps[1];
    expect(tests.continueOnFail).toBe(true);
    expect(tests.children.map((c) => c.name)).toEqual(['unit', 'lint']);
    expect(tests.children[1].title).toBe('Lint the code');
    expect(g.steps[2].when).toEqual(['branch main']);
    expect(g.steps[3].when).toEqual(['condition', 'after approve (approved)']);
    expect(g.steps[3].line).toBe(23);
    // Columns as the build page draws them: "default" first for the step with no stage.
    expect(specColumns(g).map((c) => `${c.stage}:${c.nodes.map((n) => n.step.name + (n.children.length ? `[${n.children.map((k) => k.step.name).join(',')}]` : '')).join(',')}`)).toEqual([
      'default:clone',
      'test:tests[unit,lint]',
      'release:approve,publish',
    ]);
  });

  it('draws one column without stages', () => {
    const r = specGraph("version: '1.0'\nsteps:\n  a:\n    image: x\n  b:\n    image: y\n");
    expect(r.ok && specColumns(r.graph).map((c) => [c.stage, c.nodes.length])).toEqual([['', 2]]);
  });

  it.each([
    ["version: '1.0'\nsteps:\n  - a\n", 2, /mapping of step name to step, not a list/],
    ["version: '1.0'\nsteps:\n  a: echo\n", 3, /step "a" must be a mapping/],
    ['- a\n', 1, /the spec must be a mapping/],
    ["version: '1.0'\nstages: build\n", 2, /"stages" must be a list/],
    ["version: '1.0'\nsteps:\n  a:\n    image: x\n  a:\n    image: y\n", 5, /duplicate key "a"/],
  ])('reports %j at line %i', (text, line, msg) => {
    const r = specGraph(text);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.line).toBe(line);
      expect(r.error.message).toMatch(msg);
    }
  });

  it('reads the docs example of 2,000 steps quickly enough to run on every keystroke', () => {
    let text = "version: '1.0'\nsteps:\n";
    for (let i = 0; i < 2000; i++) text += `  s${i}:\n    image: alpine\n    commands:\n      - echo ${i}\n`;
    const r = specGraph(text);
    expect(r.ok && flatSteps(r.graph.steps).length).toBe(2000);
  });
});
