// What the emulator answered, counted as it answers: requests by route and status, items processed
// by kind, minor errors by type, 429s, and requests per second. The request log keeps the last
// requests whole; this keeps every request's count, for /metrics and the web view's run page.
import { ARRAY_NAMES, type ArrayName, type MinorError } from '../model/index.js';
import type { EmulatorResponse } from './handler.js';
import { answerOf } from './request-log.js';

/** The routes counted under their own name; any other path is `other` (a 404 may name anything). */
const ROUTES = new Set(['/users/track', '/users/export/ids']);
/** Minor error types kept apart; past this many, the rest are counted together. */
const MAX_ERROR_TYPES = 100;
export const OTHER_ERROR_TYPES = '(other types)';
/** Seconds of requests per second kept (the newest). */
const MAX_SECONDS = 6 * 3600;

export const routeLabel = (path: string): string => (ROUTES.has(path) ? path : 'other');

/** A minor error's type without the value that caused it: `email: is not a valid email address`. */
export function errorType(type: string): string {
  const got = type.indexOf(', got ');
  return got === -1 ? type : type.slice(0, got);
}

/** One answered request as the tally takes it: its status, or `dropped` for a connection closed unanswered. */
export interface Answered {
  timeMs: number;
  path: string;
  status: number | 'dropped';
  processed: Partial<Record<ArrayName, number>>;
  errors: readonly MinorError[];
}

/** A request's answer as the tallies take it, counted where the request log records it. */
export function answered(path: string, response: EmulatorResponse, timeMs: number = Date.now()): Answered {
  if (response.drop !== undefined) return { timeMs, path, status: 'dropped', processed: {}, errors: [] };
  const { processed, errors } = answerOf(response);
  return { timeMs, path, status: response.status, processed, errors };
}

/** A second's requests by status (`201`, `429`, `dropped`). */
export type SecondCounts = Map<string, number>;

export class RunTally {
  /** `route\u0000status` -> requests. */
  readonly requests = new Map<string, number>();
  readonly items: Record<ArrayName, number> = { attributes: 0, events: 0, purchases: 0 };
  readonly minorErrors = new Map<string, number>();
  /** Epoch second -> its requests by status, oldest first. */
  readonly perSecond = new Map<number, SecondCounts>();
  total = 0;

  record(answer: Answered): void {
    const status = String(answer.status);
    const key = `${routeLabel(answer.path)}\u0000${status}`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
    this.total += 1;
    for (const kind of ARRAY_NAMES) this.items[kind] += answer.processed[kind] ?? 0;
    for (const error of answer.errors) {
      const type = errorType(error.type);
      const known = this.minorErrors.has(type) || this.minorErrors.size < MAX_ERROR_TYPES ? type : OTHER_ERROR_TYPES;
      this.minorErrors.set(known, (this.minorErrors.get(known) ?? 0) + 1);
    }
    const second = Math.floor(answer.timeMs / 1000);
    let counts = this.perSecond.get(second);
    if (counts === undefined) {
      counts = new Map();
      this.perSecond.set(second, counts);
      if (this.perSecond.size > MAX_SECONDS) this.perSecond.delete(this.perSecond.keys().next().value as number);
    }
    counts.set(status, (counts.get(status) ?? 0) + 1);
  }

  /** Requests by status, over every route. */
  byStatus(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [key, n] of this.requests) {
      const status = key.slice(key.indexOf('\u0000') + 1);
      out.set(status, (out.get(status) ?? 0) + n);
    }
    return out;
  }

  clear(): void {
    this.requests.clear();
    this.minorErrors.clear();
    this.perSecond.clear();
    for (const kind of ARRAY_NAMES) this.items[kind] = 0;
    this.total = 0;
  }
}
