import { describe, expect, it } from 'vitest';
import { rowOfLine, scanSections, sectionOf, sectionStart, visibleLines, type LogSection } from './logSections';

const log = [
  'cloning', //                                       0
  '[freshet] step build (freestyle) attempt 1/1', //  1
  'compiling', //                                     2
  'ok', //                                            3
  '[freshet] step build (build) ghcr.io/a:1', //      4 (not a start: a notice of the same step)
  '[freshet] step test (freestyle) attempt 1/2', //   5
  'fail', //                                          6
  '[freshet] step test (freestyle) attempt 2/2', //   7
  'pass', //                                          8
];

describe('log sections', () => {
  const sections = scanSections([], 0, log.length, (i) => log[i]);

  it('finds each attempt of each step, and nothing else', () => {
    expect(sections).toEqual([
      { name: 'build', start: 1, attempt: 1, attempts: 1 },
      { name: 'test', start: 5, attempt: 1, attempts: 2 },
      { name: 'test', start: 7, attempt: 2, attempts: 2 },
    ] satisfies LogSection[]);
    expect(sectionStart('[freshet] step build (freestyle) attempt 1/1 trailing', 0)).toBeUndefined();
  });

  it('folds a section to its start line and maps rows to lines', () => {
    expect(visibleLines(sections, log.length, new Set())).toBeUndefined();
    const rows = visibleLines(sections, log.length, new Set([1]))!;
    expect(rows).toEqual([0, 1, 5, 6, 7, 8]);
    expect(rowOfLine(rows, 5)).toBe(2);
    expect(rowOfLine(rows, 3)).toBe(1); // folded away: the fold's row
    expect(visibleLines(sections, log.length, new Set([1, 7]))).toEqual([0, 1, 5, 6, 7]);
    expect(rowOfLine(undefined, 42)).toBe(42);
  });

  it('tells which section a line is in', () => {
    expect(sectionOf(sections, 0)).toBe(-1);
    expect(sectionOf(sections, 4)).toBe(0);
    expect(sectionOf(sections, 7)).toBe(2);
  });
});
