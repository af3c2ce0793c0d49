// The one validator shared by the uploader (pre-flight) and the emulator (spec 2-4, 7, 8; decisions.md).
// A fatal verdict rejects the whole request; otherwise each broken item gets one minor error and the
// rest are valid.
import { LANGUAGE_CODES, CURRENCY_CODES, SUBSCRIBE_VALUES, SUBSCRIPTION_STATES } from './codes.js';
import {
  CONTROL_FIELDS,
  MAX_EXTERNAL_ID_BYTES,
  MAX_STRING_LENGTH,
  IDENTIFIER_FIELDS,
  OPERATION_KEYS,
  STANDARD_FIELDS,
  TEXT_FIELDS,
} from './fields.js';
import { isPlausibleEmail, normalizePhone, primaryIdentifiersIn } from './identity.js';
import { limitViolation, resolveLimits, type BatchLimits } from './limits.js';
import { shapeProblem } from './shape.js';
import { isCalendarDate, isIsoTime } from './time.js';
import { ARRAY_NAMES, BLOCKLISTED_MESSAGE, type ArrayName, type MinorError } from './types.js';

export interface ValidateOptions {
  limits?: BatchLimits;
  blocklist?: Iterable<string>;
}

export type RequestVerdict =
  | { ok: false; message: string }
  | { ok: true; errors: MinorError[]; counts: Record<ArrayName, number> };

type Obj = Record<string, unknown>;

const TEXT_FIELD_SET: ReadonlySet<string> = new Set(TEXT_FIELDS);

/** What each named field of an attributes item is, found with one look-up (identifiers first: email and phone are both). */
const FIELD_ROLES: ReadonlyMap<string, 'identifier' | 'control' | 'standard'> = new Map([
  ...[...STANDARD_FIELDS].map((key) => [key, 'standard'] as const),
  ...[...CONTROL_FIELDS].map((key) => [key, 'control'] as const),
  ...[...IDENTIFIER_FIELDS].map((key) => [key, 'identifier'] as const),
]);

export function isPlainObject(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isScalar(value: unknown): value is string | number | boolean {
  return typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

/**
 * Whether a string has more than `max` characters. The spec's limits are in characters, so count code
 * points, not UTF-16 units: an emoji is one character, though JavaScript's length says 2.
 */
function longerThan(value: string, max: number): boolean {
  if (value.length <= max) return false;
  let count = 0;
  for (const _ of value) {
    count += 1;
    if (count > max) return true;
  }
  return false;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return value.length > 40 ? `"${value.slice(0, 40)}..."` : JSON.stringify(value);
  if (typeof value === 'object') return 'an object';
  return String(value);
}

function checkText(field: string, value: unknown, problems: string[], required = true): void {
  if (value === undefined && !required) return;
  if (!isNonEmptyString(value)) problems.push(`${field}: must be a non-empty string, got ${describe(value)}`);
  else if (longerThan(value, MAX_STRING_LENGTH)) problems.push(`${field}: must be at most ${MAX_STRING_LENGTH} characters`);
}

function checkBoolean(field: string, value: unknown, problems: string[]): void {
  if (value !== undefined && typeof value !== 'boolean') problems.push(`${field}: must be true or false, got ${describe(value)}`);
}

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

function checkScalarArray(field: string, value: unknown, problems: string[]): void {
  if (!Array.isArray(value) || !value.every(isScalar)) {
    problems.push(`${field}: must be an array of strings, numbers or booleans`);
    return;
  }
  if (value.some((v) => typeof v === 'string' && longerThan(v, MAX_STRING_LENGTH))) {
    problems.push(`${field}: array values must be at most ${MAX_STRING_LENGTH} characters`);
  }
}

function checkCustomValue(field: string, value: unknown, problems: string[]): void {
  if (value === null || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) problems.push(`${field}: must be a finite number`);
    return;
  }
  if (typeof value === 'string') {
    if (longerThan(value, MAX_STRING_LENGTH)) problems.push(`${field}: must be at most ${MAX_STRING_LENGTH} characters`);
    return;
  }
  if (Array.isArray(value)) {
    if (value.length === 0 || value.every(isPlainObject)) return; // spec 2.3: array of objects is stored as given
    checkScalarArray(field, value, problems);
    return;
  }
  if (!isPlainObject(value)) {
    problems.push(`${field}: has an unsupported value ${describe(value)}`);
    return;
  }
  const keys = Object.keys(value);
  if (keys.length !== 1 || !OPERATION_KEYS.has(keys[0])) return; // a nested object, stored as given
  const operand = value[keys[0]];
  switch (keys[0]) {
    case 'inc':
      // a safe integer: one past 2^53 is not exact, and none can carry a sum past the largest number
      if (typeof operand !== 'number' || !Number.isSafeInteger(operand)) {
        problems.push(`${field}: inc takes an integer from -${Number.MAX_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER}, got ${describe(operand)}`);
      }
      return;
    case 'add':
    case 'remove':
      checkScalarArray(`${field}.${keys[0]}`, operand, problems);
      return;
    case '$time':
      if (!isIsoTimeText(operand)) problems.push(`${field}: $time must be an ISO 8601 time, got ${describe(operand)}`);
      return;
  }
}

function checkPushTokens(value: unknown, problems: string[]): void {
  if (!Array.isArray(value)) {
    problems.push(`push_tokens: must be an array of {app_id, token} objects`);
    return;
  }
  value.forEach((token, i) => {
    if (!isPlainObject(token)) {
      problems.push(`push_tokens[${i}]: must be an object with app_id and token`);
      return;
    }
    checkText(`push_tokens[${i}].app_id`, token.app_id, problems);
    if (!isNonEmptyString(token.token)) problems.push(`push_tokens[${i}].token: must be a non-empty string`);
    if (token.device_id !== undefined && token.device_id !== null && typeof token.device_id !== 'string') {
      problems.push(`push_tokens[${i}].device_id: must be a string`);
    }
  });
}

function checkSubscriptionGroups(value: unknown, problems: string[]): void {
  if (!Array.isArray(value)) {
    problems.push(`subscription_groups: must be an array of {subscription_group_id, subscription_state} objects`);
    return;
  }
  value.forEach((group, i) => {
    if (!isPlainObject(group)) {
      problems.push(`subscription_groups[${i}]: must be an object`);
      return;
    }
    checkText(`subscription_groups[${i}].subscription_group_id`, group.subscription_group_id, problems);
    if (typeof group.subscription_state !== 'string' || !SUBSCRIPTION_STATES.has(group.subscription_state)) {
      problems.push(
        `subscription_groups[${i}].subscription_state: must be subscribed or unsubscribed, got ${describe(group.subscription_state)}`,
      );
    }
  });
}

function checkStandardField(key: string, value: unknown, problems: string[]): void {
  if (value === null && key !== 'push_tokens' && key !== 'subscription_groups') return; // null clears the field
  switch (key) {
    case 'dob':
      if (!(typeof value === 'string' && isCalendarDate(value))) problems.push(`dob: must be a real date in YYYY-MM-DD form, got ${describe(value)}`);
      return;
    case 'language':
      if (!(typeof value === 'string' && LANGUAGE_CODES.has(value))) {
        problems.push(`language: must be a lower-case ISO 639-1 code such as "en", got ${describe(value)}`);
      }
      return;
    case 'email_subscribe':
    case 'push_subscribe':
      if (!(typeof value === 'string' && SUBSCRIBE_VALUES.has(value))) {
        problems.push(`${key}: must be opted_in, subscribed or unsubscribed, got ${describe(value)}`);
      }
      return;
    case 'push_tokens':
      checkPushTokens(value, problems);
      return;
    case 'subscription_groups':
      checkSubscriptionGroups(value, problems);
      return;
    default:
      if (TEXT_FIELD_SET.has(key)) checkText(key, value, problems);
  }
}

/** One pass over the item's fields: control, standard and custom (identifiers are checked apart). */
function checkAttributes(item: Obj, problems: string[]): void {
  for (const key in item) {
    const value = item[key];
    if (value === undefined) continue;
    const role = FIELD_ROLES.get(key);
    if (role === 'identifier') continue;
    if (role === 'control') checkBoolean(key, value, problems);
    else if (role === 'standard') checkStandardField(key, value, problems);
    else if (key.length === 0 || longerThan(key, MAX_STRING_LENGTH)) {
      // The message starts with the name like every other problem; a long name is shortened.
      const shown = key.length === 0 ? '""' : `${key.slice(0, 40)}...`;
      problems.push(`${shown}: custom attribute names are 1 to ${MAX_STRING_LENGTH} characters`);
    } else checkCustomValue(key, value, problems);
  }
  if (item.push_token_import === true && !(Array.isArray(item.push_tokens) && item.push_tokens.length > 0)) {
    problems.push('push_tokens: required when push_token_import is true'); // spec 2.5 rule 2
  }
}

/**
 * Event properties are free-form (spec 2.4); a purchase's are a map of strings and numbers (spec 2.6):
 * `flat` holds them to that.
 */
function checkProperties(value: unknown, problems: string[], flat = false): void {
  if (value === undefined) return;
  if (!isPlainObject(value)) {
    problems.push(`properties: must be an object, got ${describe(value)}`);
    return;
  }
  for (const key of Object.keys(value)) {
    if (key.length === 0 || longerThan(key, MAX_STRING_LENGTH) || key.startsWith('$')) {
      problems.push(`properties.${key}: property names are 1 to ${MAX_STRING_LENGTH} characters and do not start with $`);
    } else if (flat) {
      const property = value[key];
      if (!(typeof property === 'string' || (typeof property === 'number' && Number.isFinite(property)))) {
        problems.push(`properties.${key}: purchase properties are strings and numbers, got ${describe(property)}`);
      }
    }
  }
}

const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** The number two ASCII digits at `at` spell, or -1. */
function twoDigits(value: string, at: number): number {
  const a = value.charCodeAt(at) - 48;
  const b = value.charCodeAt(at + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

/**
 * isIsoTime(), answered without a regular expression for the form nearly every time takes,
 * `YYYY-MM-DDTHH:MM:SSZ` or `YYYY-MM-DDTHH:MM:SS.sssZ`; any other text goes to isIsoTime() itself.
 */
function isIsoTimeText(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  const n = value.length;
  if ((n !== 20 && n !== 24) || value.charCodeAt(n - 1) !== 90 /* Z */) return isIsoTime(value);
  const century = twoDigits(value, 0);
  const yy = twoDigits(value, 2);
  const month = twoDigits(value, 5);
  const day = twoDigits(value, 8);
  const hour = twoDigits(value, 11);
  const minute = twoDigits(value, 14);
  const second = twoDigits(value, 17);
  const fraction = n === 20 || (value.charCodeAt(19) === 46 /* . */ && twoDigits(value, 20) !== -1 && twoDigits(value, 21) !== -1);
  if (
    century === -1 || yy === -1 || month === -1 || day === -1 || hour === -1 || minute === -1 || second === -1 || !fraction ||
    value.charCodeAt(4) !== 45 || value.charCodeAt(7) !== 45 || value.charCodeAt(10) !== 84 ||
    value.charCodeAt(13) !== 58 || value.charCodeAt(16) !== 58
  ) {
    return isIsoTime(value);
  }
  const year = century * 100 + yy;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = month === 2 && leap ? 29 : DAYS_IN_MONTH[month];
  return month >= 1 && month <= 12 && day >= 1 && day <= days && hour <= 23 && minute <= 59 && second <= 59;
}

function checkTime(value: unknown, problems: string[]): void {
  if (!isIsoTimeText(value)) problems.push(`time: must be an ISO 8601 date-time such as 2024-03-07T10:00:00Z, got ${describe(value)}`);
}

function checkEvent(item: Obj, problems: string[]): void {
  checkBoolean('_update_existing_only', item._update_existing_only, problems);
  checkText('name', item.name, problems);
  checkTime(item.time, problems);
  if (item.app_id !== undefined && typeof item.app_id !== 'string') problems.push(`app_id: must be a string`);
  checkProperties(item.properties, problems);
}

function checkPurchase(item: Obj, problems: string[]): void {
  checkBoolean('_update_existing_only', item._update_existing_only, problems);
  checkText('product_id', item.product_id, problems);
  if (typeof item.currency !== 'string' || !CURRENCY_CODES.has(item.currency.toUpperCase())) {
    problems.push(`currency: must be an ISO 4217 currency code such as USD, got ${describe(item.currency)}`);
  }
  if (typeof item.price !== 'number' || !Number.isFinite(item.price)) {
    problems.push(`price: must be a number, got ${describe(item.price)}`);
  }
  const quantity = item.quantity;
  if (quantity !== undefined && !(typeof quantity === 'number' && Number.isInteger(quantity) && quantity >= 1 && quantity <= 100)) {
    problems.push(`quantity: must be an integer from 1 to 100, got ${describe(quantity)}`);
  }
  checkTime(item.time, problems);
  if (item.app_id !== undefined && typeof item.app_id !== 'string') problems.push(`app_id: must be a string`);
  checkProperties(item.properties, problems, true);
}

/** Every rule an item of the given array breaks, each naming its field; empty when it is valid. */
export function itemProblems(kind: ArrayName, item: unknown): string[] {
  if (!isPlainObject(item)) return [`${kind} item: must be an object, got ${describe(item)}`];
  const shape = shapeProblem(item);
  if (shape !== undefined) return [shape];
  const problems: string[] = [];
  checkIdentifiers(kind, item, problems);
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
  if (overLimit !== undefined) return { ok: false, message: overLimit };
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
