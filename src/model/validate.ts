// The one validator shared by the uploader (pre-flight) and the emulator (spec 2-4, 7, 8; decisions.md),
// on a whole request: a fatal verdict rejects it; otherwise each broken item gets one minor error and
// the rest are valid. The rules of one item are in validate-item.ts.
import { describe, isPlainObject, type Obj } from './checks.js';
import { limitViolation, resolveLimits, type BatchLimits } from './limits.js';
import { ARRAY_NAMES, BLOCKLISTED_MESSAGE, type ArrayName, type MinorError } from './types.js';
import { itemProblems } from './validate-item.js';

export { isPlainObject } from './checks.js';
export { itemProblems } from './validate-item.js';

export interface ValidateOptions {
  limits?: BatchLimits;
  blocklist?: Iterable<string>;
}

export type RequestVerdict =
  /** `overLimit` when the request holds more items than the batch limits allow. */
  | { ok: false; message: string; overLimit?: Record<ArrayName, number> }
  | { ok: true; errors: MinorError[]; counts: Record<ArrayName, number> };

/** The fatal message for a blocklisted external_id anywhere in the request, if any. */
function blocklisted(body: Obj, blocklist: ReadonlySet<string>): boolean {
  if (blocklist.size === 0) return false;
  return ARRAY_NAMES.some((name) => {
    const items = body[name];
    return Array.isArray(items) && items.some((item) => isPlainObject(item) && typeof item.external_id === 'string' && blocklist.has(item.external_id));
  });
}

/** The verdict on a parsed request body: fatal, or the minor errors of its broken items. */
export function validateRequest(body: unknown, options: ValidateOptions = {}): RequestVerdict {
  if (!isPlainObject(body)) return { ok: false, message: 'request body must be a JSON object' };
  const counts: Record<ArrayName, number> = { attributes: 0, events: 0, purchases: 0 };
  let present = 0;
  for (const name of ARRAY_NAMES) {
    const value = body[name];
    if (value === undefined) continue;
    if (!Array.isArray(value)) return { ok: false, message: `${name}: must be an array, got ${describe(value)}` };
    counts[name] = value.length;
    present += 1;
  }
  if (present === 0) return { ok: false, message: 'request must contain at least one of attributes, events, purchases' };
  const overLimit = limitViolation(counts, options.limits ?? resolveLimits());
  if (overLimit !== undefined) return { ok: false, message: overLimit, overLimit: counts };
  if (blocklisted(body, new Set(options.blocklist ?? []))) return { ok: false, message: BLOCKLISTED_MESSAGE };
  const errors: MinorError[] = [];
  for (const name of ARRAY_NAMES) {
    const items = body[name];
    if (!Array.isArray(items)) continue;
    items.forEach((item, index) => {
      const problems = itemProblems(name, item);
      if (problems.length > 0) errors.push({ type: problems[0], input_array: name, index });
    });
  }
  return { ok: true, errors, counts };
}
