// The rules of an attributes item's fields other than its identifiers: control fields, standard
// profile fields and custom attributes (spec 2.3, 2.5; decisions.md "Attributes").
import { checkBoolean, checkText, describe, isNonEmptyString, isPlainObject, isScalar, longerThan, shownName, type Obj } from './checks.js';
import { LANGUAGE_CODES, SUBSCRIBE_VALUES, SUBSCRIPTION_STATES } from './codes.js';
import {
  BOOLEAN_FIELDS,
  CONTROL_FIELDS,
  IDENTIFIER_FIELDS,
  MAX_STRING_LENGTH,
  INVALID_ATTRIBUTE_FIELDS,
  OPERATION_KEYS,
  STANDARD_FIELDS,
  TEXT_FIELDS,
  TIME_FIELDS,
} from './fields.js';
import { holdsObjectArrayOperation, nestedValueProblem, objectArrayOperationsProblem } from './nested.js';
import { isCalendarDate, isTimeValue } from './time.js';

const TEXT_FIELD_SET: ReadonlySet<string> = new Set(TEXT_FIELDS);
const TIME_FIELD_SET: ReadonlySet<string> = new Set(TIME_FIELDS);
const BOOLEAN_FIELD_SET: ReadonlySet<string> = new Set(BOOLEAN_FIELDS);
/** The bytes a device_id given with push_token_import may have (decisions.md "Attributes"). */
export const MIN_IMPORTED_DEVICE_ID_BYTES = 8;
export const MAX_IMPORTED_DEVICE_ID_BYTES = 255;

/** What each named field of an attributes item is, found with one look-up (identifiers first: email and phone are both). */
const FIELD_ROLES: ReadonlyMap<string, 'identifier' | 'control' | 'standard' | 'invalid'> = new Map([
  ...[...INVALID_ATTRIBUTE_FIELDS].map((key) => [key, 'invalid'] as const),
  ...[...STANDARD_FIELDS].map((key) => [key, 'standard'] as const),
  ...[...CONTROL_FIELDS].map((key) => [key, 'control'] as const),
  ...[...IDENTIFIER_FIELDS].map((key) => [key, 'identifier'] as const),
]);

function checkScalarArray(field: string, value: unknown, problems: string[]): void {
  if (!Array.isArray(value) || !value.every(isScalar)) {
    problems.push(`${field}: must be an array of strings, numbers or booleans`);
    return;
  }
  if (value.some((v) => typeof v === 'string' && longerThan(v, MAX_STRING_LENGTH))) {
    problems.push(`${field}: array values must be at most ${MAX_STRING_LENGTH} characters`);
  }
}

function push(problems: string[], problem: string | undefined): void {
  if (problem !== undefined) problems.push(problem);
}

/** The operation an object value is, or undefined for a nested value (decisions.md "Attributes"). */
function operationOf(value: Obj): string | undefined {
  let first: string | undefined;
  let count = 0;
  for (const key in value) {
    count += 1;
    if (count === 1) first = key;
    else if (count > 2) return undefined;
  }
  if (count === 1 && OPERATION_KEYS.has(first as string)) return first;
  // exactly `add` and `remove`: both, the removals first
  if (count === 2 && Object.hasOwn(value, 'add') && Object.hasOwn(value, 'remove')) return 'add+remove';
  return undefined;
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
    if (value.length === 0) return;
    if (value.every(isPlainObject)) push(problems, nestedValueProblem(field, value)); // an array of objects
    else checkScalarArray(field, value, problems);
    return;
  }
  if (!isPlainObject(value)) {
    problems.push(`${field}: has an unsupported value ${describe(value)}`);
    return;
  }
  if (holdsObjectArrayOperation(value)) {
    push(problems, objectArrayOperationsProblem(field, value));
    return;
  }
  const operation = operationOf(value);
  if (operation === undefined) {
    push(problems, nestedValueProblem(field, value));
    return;
  }
  const operand = value[operation];
  switch (operation) {
    case 'inc':
      // a safe integer: one past 2^53 is not exact, and none can carry a sum past the largest number
      if (typeof operand !== 'number' || !Number.isSafeInteger(operand)) {
        problems.push(`${field}: inc takes an integer from -${Number.MAX_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER}, got ${describe(operand)}`);
      }
      return;
    case 'add':
    case 'remove':
      checkScalarArray(`${field}.${operation}`, operand, problems);
      return;
    case 'add+remove':
      checkScalarArray(`${field}.remove`, value.remove, problems);
      checkScalarArray(`${field}.add`, value.add, problems);
      return;
    case '$time':
      if (!isTimeValue(operand)) problems.push(`${field}: $time must be an ISO 8601 time or a YYYY-MM-DD date, got ${describe(operand)}`);
      return;
  }
}

function checkPushTokens(value: unknown, imported: boolean, problems: string[]): void {
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
    const deviceId = token.device_id;
    if (deviceId !== undefined && deviceId !== null && typeof deviceId !== 'string') {
      problems.push(`push_tokens[${i}].device_id: must be a string`);
    } else if (imported && typeof deviceId === 'string') {
      const bytes = Buffer.byteLength(deviceId, 'utf8');
      if (bytes < MIN_IMPORTED_DEVICE_ID_BYTES) {
        problems.push(`push_tokens[${i}].device_id: must be at least ${MIN_IMPORTED_DEVICE_ID_BYTES} bytes with push_token_import, got ${bytes}`);
      } else if (bytes > MAX_IMPORTED_DEVICE_ID_BYTES) {
        problems.push(`push_tokens[${i}].device_id: must be at most ${MAX_IMPORTED_DEVICE_ID_BYTES} bytes with push_token_import, got ${bytes}`);
      }
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

function checkLocation(value: unknown, problems: string[]): void {
  const inRange = (v: unknown, max: number): boolean => typeof v === 'number' && Number.isFinite(v) && v >= -max && v <= max;
  if (!isPlainObject(value) || !inRange(value.latitude, 90) || !inRange(value.longitude, 180)) {
    problems.push(`current_location: must be {"latitude": -90 to 90, "longitude": -180 to 180}, got ${describe(value)}`);
  }
}

function checkStandardField(key: string, value: unknown, imported: boolean, problems: string[]): void {
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
      checkPushTokens(value, imported, problems);
      return;
    case 'subscription_groups':
      checkSubscriptionGroups(value, problems);
      return;
    case 'current_location':
      checkLocation(value, problems);
      return;
    case 'country':
    case 'time_zone':
      // any value is taken: one the service does not know is not set (a time zone) or kept as null
      // (a country), with no error (decisions.md "Attributes"; emulator/apply.ts standardValue)
      return;
    case 'image_url':
      if (!isNonEmptyString(value)) problems.push(`image_url: must be a non-empty string, got ${describe(value)}`);
      return;
    case 'facebook':
    case 'twitter':
      if (!isPlainObject(value)) problems.push(`${key}: must be an object, got ${describe(value)}`);
      return;
    default:
      if (TEXT_FIELD_SET.has(key)) checkText(key, value, problems);
      else if (TIME_FIELD_SET.has(key)) {
        if (!isTimeValue(value)) problems.push(`${key}: must be an ISO 8601 time such as 2024-03-07T10:00:00Z, got ${describe(value)}`);
      } else if (BOOLEAN_FIELD_SET.has(key)) checkBoolean(key, value, problems);
  }
}

/** One pass over an attributes item's fields: control, standard and custom (identifiers are checked apart). */
export function checkAttributes(item: Obj, problems: string[]): void {
  const imported = item.push_token_import === true;
  for (const key in item) {
    const value = item[key];
    if (value === undefined) continue;
    const role = FIELD_ROLES.get(key);
    if (role === 'identifier') continue;
    if (role === 'control') checkBoolean(key, value, problems);
    else if (role === 'standard') checkStandardField(key, value, imported, problems);
    else if (role === 'invalid') problems.push(`${key}: is not a valid attribute`);
    else if (key.length === 0 || longerThan(key, MAX_STRING_LENGTH)) {
      // The message starts with the name like every other problem; a long name is shortened.
      problems.push(`${shownName(key)}: custom attribute names are 1 to ${MAX_STRING_LENGTH} characters`);
    } else checkCustomValue(key, value, problems);
  }
  if (imported && !(Array.isArray(item.push_tokens) && item.push_tokens.length > 0)) {
    problems.push('push_tokens: required when push_token_import is true'); // spec 2.5 rule 2
  }
}
