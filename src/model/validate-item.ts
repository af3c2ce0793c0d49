// The rules of one item, whichever side asks (the uploader before sending, the emulator for each
// item of a request): its identifiers, then the rules of its array's fields in attribute-rules.ts
// and activity-rules.ts. Each broken rule is a problem naming its field.
import { checkEvent, checkPurchase } from './activity-rules.js';
import { checkAttributes } from './attribute-rules.js';
import { checkText, describe, isNonEmptyString, isPlainObject, type Obj } from './checks.js';
import { MAX_EXTERNAL_ID_BYTES } from './fields.js';
import { checkNulInIdentifiers, emailProblem, normalizePhone, primaryIdentifiersIn } from './identity.js';
import { shapeProblem } from './shape.js';
import type { ArrayName } from './types.js';

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
  if (isGiven(email)) {
    const problem = typeof email === 'string' ? emailProblem(email) : 'is not a valid email address';
    if (problem !== undefined) problems.push(`email: ${problem}, got ${describe(email)}`);
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
