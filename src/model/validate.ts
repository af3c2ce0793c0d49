// The one validator shared by the uploader (pre-flight) and the emulator (spec 2-4, 7, 8; decisions.md).
// A fatal verdict rejects the whole request; otherwise each broken item gets one minor error and the
// rest are valid. The rules of an item's fields are in attribute-rules.ts and activity-rules.ts.
import { checkEvent, checkPurchase } from './activity-rules.js';
import { checkAttributes } from './attribute-rules.js';
import { checkText, describe, isNonEmptyString, isPlainObject, type Obj } from './checks.js';
import { MAX_EXTERNAL_ID_BYTES } from './fields.js';
import { checkNulInIdentifiers, isPlausibleEmail, normalizePhone, primaryIdentifiersIn } from './identity.js';
import { limitViolation, resolveLimits, type BatchLimits } from './limits.js';
import { shapeProblem } from './shape.js';
import { ARRAY_NAMES, BLOCKLISTED_MESSAGE, type ArrayName, type MinorError } from './types.js';

export { isPlainObject } from './checks.js';

export interface ValidateOptions {
  limits?: BatchLimits;
  blocklist?: Iterable<string>;
}

export type RequestVerdict =
  /** `overLimit` when the request holds more items than the batch limits allow. */
  | { ok: false; message: string; overLimit?: Record<ArrayName, number> }
  | { ok: true; errors: MinorError[]; counts: Record<ArrayName, number> };

const isGiven = (value: unknown): boolean => value !== undefined && value !== null;

/** Identifier rules. Fields are read by name, not through a list of keys: this runs for every row of a file. */
function checkIdentifiers(kind: ArrayName, item: Obj, problems: string[]): void {
  const { external_id, user_alias, service_id, email, phone } = item;
  if (external_id === null || user_alias === null || service_id === null) {
    for (const [key, value] of [['external_id', external_id], ['user_alias', user_alias], ['service_id', service_id]] as const) {
      if (value !== null) continue;
      problems.push(kind === 'attributes' ? `${key}: an identifier cannot be removed once added` : `${key}: must not be null`);
    }
  }
  if (isGiven(external_id)) {
    if (!isNonEmptyString(external_id)) problems.push(`external_id: must be a non-empty string, got ${describe(external_id)}`);
    // a UTF-16 unit is at most 3 bytes of UTF-8, so only a long ID needs its bytes counted
    else if (3 * external_id.length > MAX_EXTERNAL_ID_BYTES && Buffer.byteLength(external_id, 'utf8') > MAX_EXTERNAL_ID_BYTES) {
      problems.push(`external_id: must be at most ${MAX_EXTERNAL_ID_BYTES} bytes`);
    }
  }
  if (isGiven(user_alias)) {
    if (!isPlainObject(user_alias)) problems.push(`user_alias: must be an object with alias_name and alias_label`);
    else {
      checkText('user_alias.alias_name', user_alias.alias_name, problems);
      checkText('user_alias.alias_label', user_alias.alias_label, problems);
    }
  }
  if (isGiven(service_id) && !isNonEmptyString(service_id)) {
    problems.push(`service_id: must be a non-empty string, got ${describe(service_id)}`);
  }
  const primaries = (isGiven(external_id) ? 1 : 0) + (isGiven(user_alias) ? 1 : 0) + (isGiven(service_id) ? 1 : 0);
  if (primaries > 1) {
    problems.push(`${primaryIdentifiersIn(item).join(', ')}: an item carries exactly one of external_id, user_alias, service_id`);
  }
  if (isGiven(email) && (typeof email !== 'string' || !isPlausibleEmail(email))) {
    problems.push(`email: is not a valid email address, got ${describe(email)}`);
  }
  if (isGiven(phone) && (typeof phone !== 'string' || normalizePhone(phone) === undefined)) {
    problems.push(`phone: is not a valid phone number, got ${describe(phone)}`);
  }
  if (kind === 'attributes' && item.push_token_import === true) {
    // spec 2.5 rule 1
    if (external_id !== undefined) problems.push(`external_id: must not be given when push_token_import is true`);
    if (service_id !== undefined) problems.push(`service_id: must not be given when push_token_import is true`);
    return;
  }
  if (primaries === 0 && !isGiven(email) && !isGiven(phone)) {
    problems.push('external_id: missing; an item needs one of external_id, user_alias, service_id, email, phone');
  }
}

/** Every rule an item of the given array breaks, each naming its field; empty when it is valid. */
export function itemProblems(kind: ArrayName, item: unknown): string[] {
  if (!isPlainObject(item)) return [`${kind} item: must be an object, got ${describe(item)}`];
  const shape = shapeProblem(item);
  if (shape !== undefined) return [shape];
  const problems: string[] = [];
  checkIdentifiers(kind, item, problems);
  checkNulInIdentifiers(item, problems);
  if (kind === 'attributes') checkAttributes(item, problems);
  else if (kind === 'events') checkEvent(item, problems);
  else checkPurchase(item, problems);
  return problems;
}

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
