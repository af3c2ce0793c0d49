// The rules of an event or a purchase beyond its identifier (spec 2.4, 2.6; decisions.md "Events
// and purchases").
import { checkBoolean, checkText, describe, isIsoTimeText, isPlainObject, jsonLongerThan, longerThan, shownName, type Obj } from './checks.js';
import { CURRENCY_CODES } from './codes.js';
import { MAX_PURCHASE_PROPERTIES_BYTES, MAX_STRING_LENGTH, MAX_VALUE_BYTES, RESERVED_PROPERTY_NAMES } from './fields.js';

function nameProblem(key: string): string | undefined {
  if (key.length === 0 || longerThan(key, MAX_STRING_LENGTH) || key.startsWith('$')) {
    return `property names are 1 to ${MAX_STRING_LENGTH} characters and do not start with $`;
  }
  if (RESERVED_PROPERTY_NAMES.has(key)) return `${key} is a reserved name and cannot be a property`;
  return undefined;
}

/** The path to the first string inside a property value longer than the limit, or undefined. */
function longStringAt(path: string, value: unknown): string | undefined {
  if (typeof value === 'string') return longerThan(value, MAX_STRING_LENGTH) ? path : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) {
      const found = longStringAt(`${path}[${i}]`, value[i]);
      if (found !== undefined) return found;
    }
  } else if (isPlainObject(value)) {
    for (const key in value) {
      const found = longStringAt(`${path}.${key}`, value[key]);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/**
 * Event properties are free-form (spec 2.4). A purchase's take the same types (decisions.md "Events
 * and purchases"): strings, numbers, booleans, times (ISO 8601 text), arrays and objects, and null
 * for both, which the service's documentation neither lists nor refuses, so a rehearsal does not
 * refuse what the real run may take. Names, string lengths at any depth and the size as JSON are
 * bounded: 100 KB for an event's, 50 KB for a purchase's.
 */
function checkProperties(value: unknown, problems: string[], purchase = false): void {
  if (value === undefined) return;
  if (!isPlainObject(value)) {
    problems.push(`properties: must be an object, got ${describe(value)}`);
    return;
  }
  for (const key in value) {
    const named = nameProblem(key);
    const property = value[key];
    if (named !== undefined) {
      problems.push(`properties.${shownName(key)}: ${named}`);
    } else if (purchase && typeof property === 'number' && !Number.isFinite(property)) {
      problems.push(`properties.${key}: purchase properties are strings, numbers, booleans, times, arrays, objects or null, got ${describe(property)}`);
    } else {
      const long = longStringAt(`properties.${key}`, property);
      if (long !== undefined) problems.push(`${long}: property strings are at most ${MAX_STRING_LENGTH} characters`);
    }
  }
  const maxBytes = purchase ? MAX_PURCHASE_PROPERTIES_BYTES : MAX_VALUE_BYTES;
  if (jsonLongerThan(value, maxBytes)) {
    problems.push(`properties: ${purchase ? "a purchase's properties are" : 'must be'} at most ${maxBytes / 1024} KB as JSON`);
  }
}

function checkTime(value: unknown, problems: string[]): void {
  if (!isIsoTimeText(value)) problems.push(`time: must be an ISO 8601 date-time such as 2024-03-07T10:00:00Z, got ${describe(value)}`);
}

export function checkEvent(item: Obj, problems: string[]): void {
  checkBoolean('_update_existing_only', item._update_existing_only, problems);
  checkText('name', item.name, problems);
  checkTime(item.time, problems);
  if (item.app_id !== undefined && typeof item.app_id !== 'string') problems.push(`app_id: must be a string`);
  checkProperties(item.properties, problems);
}

export function checkPurchase(item: Obj, problems: string[]): void {
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
