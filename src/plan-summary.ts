// What a plan tells of the files it read: rows, items by kind, rejects and warnings by reason,
// requests. Kept apart from the planning itself, which a worker thread may run instead.
import type { InputFormat } from './input/source.js';
import type { ArrayName } from './model/types.js';

export interface FileSummary {
  file: string;
  format: InputFormat;
  /** The kind of a CSV file's rows. */
  kind?: ArrayName;
  rows: number;
}

export interface PlanSummary {
  files: FileSummary[];
  /** Data rows read (CSV rows after the header; NDJSON lines that are not blank). */
  rows: number;
  /** Rows left out by skipRow, or whose every item skipItem left out. */
  skipped: number;
  /** Items left out by skipItem from lines that still had others to send (lines an earlier run delivered in part). */
  skippedItems: number;
  /** Items planned into requests, by kind. */
  items: Record<ArrayName, number>;
  /** Rejected rows (lines of the rejects file); a request-shaped NDJSON line counts once per rejected item. */
  rejected: number;
  /** Rejected rows by reason (a row with several problems counts under each). */
  rejectReasons: Record<string, number>;
  warnings: number;
  warningReasons: Record<string, number>;
  /** The first few warnings with their place, `file:line: message`. */
  warningExamples: string[];
  requests: number;
  /** Things a person should know about the files that are not rows (an empty file, an unused --map column). */
  notes: string[];
}

export function emptySummary(): PlanSummary {
  return {
    files: [],
    rows: 0,
    skipped: 0,
    skippedItems: 0,
    items: { attributes: 0, events: 0, purchases: 0 },
    rejected: 0,
    rejectReasons: {},
    warnings: 0,
    warningReasons: {},
    warningExamples: [],
    requests: 0,
    notes: [],
  };
}

const MAX_REASONS = 100;

/** A problem without the value that caused it: `email: is not a valid email address`. */
function reasonOf(problem: string): string {
  const got = problem.indexOf(', got ');
  return got === -1 ? problem : problem.slice(0, got);
}

export function count(reasons: Record<string, number>, problem: string): void {
  const reason = reasonOf(problem);
  if (reason in reasons || Object.keys(reasons).length < MAX_REASONS) reasons[reason] = (reasons[reason] ?? 0) + 1;
  else reasons['(other reasons)'] = (reasons['(other reasons)'] ?? 0) + 1;
}

/** Counts a rejected row under each of its reasons. */
export function countRejected(summary: PlanSummary, errors: readonly string[]): void {
  summary.rejected += 1;
  for (const reason of new Set(errors.map(reasonOf))) count(summary.rejectReasons, reason);
}
