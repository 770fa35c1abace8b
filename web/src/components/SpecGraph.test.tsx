import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { SpecGraph } from './SpecGraph';
import { YamlEditor } from './YamlEditor';

const noop = () => {};

const SPEC = `version: '1.0'
stages: [build, test]
steps:
  compile:
    stage: build
    image: golang
  checks:
    type: parallel
    stage: test
    steps:
      unit:
        image: golang
        fail_fast: false
      lint:
        image: golangci
        when:
          branch:
            only: [main]
`;

describe('SpecGraph', () => {
  it('draws a column per stage, the parallel group with its steps side by side, and the markers', () => {
    const html = renderToStaticMarkup(<SpecGraph spec={SPEC} onJump={noop} />);
    expect(html).toContain('data-state="ok"');
    expect(html).toContain('4 steps');
    expect(html.match(/class="graph-col"/g)).toHaveLength(2);
    expect(html).toMatch(/aria-label="Stage build".*spec-step-compile/);
    expect(html).toMatch(/aria-label="In parallel in checks".*spec-step-unit.*spec-step-lint/);
    expect(html).toContain('fail_fast: false');
    expect(html).toContain('when: branch main');
    expect(html).not.toContain('spec-graph-error');
  });

  it('shows a problem with its line, and no graph when nothing was readable before', () => {
    const html = renderToStaticMarkup(<SpecGraph spec={"version: '1.0'\nsteps:\n  a:\n    image: x\n   b: 1\n"} onJump={noop} />);
    expect(html).toContain('data-state="error"');
    expect(html).toMatch(/data-line="5"[^>]*>.*Line 5:/);
    expect(html).toContain('indented more');
    expect(html).not.toContain('class="graph"');
  });

  it('has no steps to draw for an empty spec', () => {
    expect(renderToStaticMarkup(<SpecGraph spec="" onJump={noop} />)).toContain('No steps yet');
  });
});

describe('YamlEditor', () => {
  it('draws the text in colour under a transparent textarea', () => {
    const html = renderToStaticMarkup(<YamlEditor value={"steps:\n  a:\n    image: 'alpine' # base"} onChange={noop} marks={new Map()} label="Spec" />);
    expect(html).toContain('code-input code-input-hl');
    expect(html).toContain('<span class="tk-key">steps</span>');
    expect(html).toContain(`<span class="tk-str">&#x27;alpine&#x27;</span>`);
    expect(html).toContain('<span class="tk-com"># base</span>');
  });
});
