// Typed calls of the workflow archive's statistics (GET /api/v1/archived-workflows/stats): the
// Delivery Pipelines runs (Argo Workflows) the runtimes reported finished, per day. Loaded with
// Home's workflow chart.
import { request } from './client';

/** One UTC day's finished workflows by phase. */
export interface WorkflowRunDay {
  /** YYYY-MM-DD */
  date: string;
  succeeded: number;
  failed: number;
  error: number;
}

/** Finished workflows per day over a window, every day present, oldest first. */
export interface WorkflowRunStats {
  since: string;
  until: string;
  days: WorkflowRunDay[] | null;
}

export const workflowRunStats = (days: number, signal?: AbortSignal) =>
  request<WorkflowRunStats>('/api/v1/archived-workflows/stats', { query: { days }, signal });
