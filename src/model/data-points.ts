// The data points an item costs, by the rule the service bills them (docs/upload.md "Data points"):
// each attribute set on a profile is one, whether or not its value changed; an event or a purchase
// is one, and each of its properties one more. Identifiers, the fields that steer an update, push
// tokens and subscription states cost nothing.
import { CONTROL_FIELDS, IDENTIFIER_FIELDS } from './fields.js';
import type { ArrayName } from './types.js';

/**
 * Fields of an attributes item that cost no data point: the identifiers that only name the user,
 * the control fields, subscription states and push tokens. (email and phone are profile fields
 * too: free only where they name the user.)
 */
const FREE_FIELDS: ReadonlySet<string> = new Set([
  ...[...IDENTIFIER_FIELDS].filter((key) => key !== 'email' && key !== 'phone'),
  ...CONTROL_FIELDS,
  'email_subscribe',
  'push_subscribe',
  'subscription_groups',
  'push_tokens',
]);

const OPERATIONS: ReadonlySet<string> = new Set(['add', 'remove', '$add', '$remove', '$update', 'inc', '$time']);

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Whether a nested value is a time, `{"$time": ...}`: one value of the key that holds it, not a key of its own. */
function isNestedTime(value: Record<string, unknown>): boolean {
  for (const key in value) if (key !== '$time') return false;
  return Object.hasOwn(value, '$time');
}

/** Every key of an object, at every depth (an array of objects counts the keys of each; a nested time is a value). */
function keysWithin(value: unknown): number {
  if (Array.isArray(value)) {
    let n = 0;
    for (const element of value) n += keysWithin(element);
    return n;
  }
  if (!isObject(value) || isNestedTime(value)) return 0;
  let n = 0;
  for (const key in value) n += 1 + keysWithin(value[key]);
  return n;
}

/**
 * What setting one attribute to `value` costs: one; an array added to or removed from, one a value;
 * an object, one a key at any depth; an array of objects, one a key of its objects; an operation on
 * one, one a key added or updated, or one an object removed (always at least one).
 */
export function attributePoints(value: unknown): number {
  if (!isObject(value)) {
    if (Array.isArray(value) && value.some(isObject)) return Math.max(1, keysWithin(value));
    return 1;
  }
  const keys = Object.keys(value);
  // several operations at once (`{"add": [...], "remove": [...]}`): each costs its own
  if (keys.length > 1 && keys.every((key) => OPERATIONS.has(key))) return keys.reduce((n, key) => n + attributePoints({ [key]: value[key] }), 0);
  if (keys.length === 1) {
    const operand = value[keys[0]];
    switch (keys[0]) {
      case 'add':
      case 'remove':
        return Array.isArray(operand) ? Math.max(1, operand.length) : 1;
      case '$add':
        return Math.max(1, keysWithin(operand));
      case '$remove':
        return Array.isArray(operand) ? Math.max(1, operand.length) : 1;
      case '$update':
        // what changes is in each element's $new_object
        return Array.isArray(operand) ? Math.max(1, operand.reduce((n: number, element) => n + keysWithin(isObject(element) ? element.$new_object : undefined), 0)) : 1;
      case 'inc':
      case '$time':
        return 1;
    }
  }
  return Math.max(1, keysWithin(value));
}

/** Whether setting this field of an attributes item costs data points; `identifiedBy` is the field that names its user. */
export function isBillableField(key: string, identifiedBy: string | undefined): boolean {
  return key !== identifiedBy && !FREE_FIELDS.has(key);
}

/** The data points an item costs; `identifiedBy` is the field that names its user (free, as every identifier is). */
export function dataPoints(kind: ArrayName, item: Record<string, unknown>, identifiedBy?: string): number {
  if (kind !== 'attributes') {
    const properties = item.properties;
    let n = 1;
    if (isObject(properties)) for (const _ in properties) n += 1;
    return n;
  }
  let n = 0;
  for (const key in item) {
    if (key === identifiedBy || FREE_FIELDS.has(key)) continue;
    const value = item[key];
    // most values are text, numbers or booleans: one each, at no call (this runs for every row)
    n += typeof value === 'object' && value !== null ? attributePoints(value) : 1;
  }
  return n;
}
