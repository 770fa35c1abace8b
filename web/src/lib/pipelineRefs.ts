// Names and URLs of projects and pipelines.
import { href } from '../app/router';

const NAME_RE = /^[a-zA-Z0-9][a-zA-Z0-9._-]{0,62}$/;

/** A project, pipeline, context or runner name, checked like the server does. */
export function resourceNameError(v: string, what = 'Name'): string | undefined {
  if (!v) return `${what} is required.`;
  if (!NAME_RE.test(v)) return `${what} "${v}" is not valid: use 1–63 letters, digits, '.', '_' or '-', starting with a letter or digit.`;
  return undefined;
}

/** The page of a pipeline: /pipelines/project/name (?tab=). */
export function pipelinePath(p: { project: string; name: string }, tab?: string): string {
  return href(`/pipelines/${encodeURIComponent(p.project)}/${encodeURIComponent(p.name)}`, { tab });
}

/** "project/name" → its page; undefined when the name has no project part. */
export function pipelinePathOf(fullName?: string): string | undefined {
  if (!fullName) return undefined;
  const i = fullName.indexOf('/');
  if (i <= 0) return undefined;
  return pipelinePath({ project: fullName.slice(0, i), name: fullName.slice(i + 1) });
}
