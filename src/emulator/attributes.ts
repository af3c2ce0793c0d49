// Custom attribute operations on a profile's attribute map (spec 2.3; decisions.md "Attributes").
// Pure: takes the current map and one item's value, returns nothing but mutates only the map given.
import { jsonLongerThan } from '../model/checks.js';
import { isPlainObject, MAX_VALUE_BYTES, OBJECT_ARRAY_ORDER, parseTimeValue, type Scalar } from '../model/index.js';
import { holdsObjectArrayOperation } from '../model/nested.js';

export const DEFAULT_ARRAY_CAP = 25;

type Attrs = Record<string, unknown>;

function isScalar(value: unknown): value is Scalar {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/** Unique values, a repeated value keeping its last position, and only the newest `cap`. */
export function uniqueCapped(values: readonly Scalar[], cap: number): Scalar[] {
  const out: Scalar[] = [];
  for (const value of values) {
    const at = out.indexOf(value);
    if (at !== -1) out.splice(at, 1);
    out.push(value);
  }
  return out.length > cap ? out.slice(out.length - cap) : out;
}

/** Sets an own property, even one named `__proto__` (a plain assignment would replace the prototype). */
function setOwn(target: Attrs, key: string, value: unknown): void {
  // Object.prototype's only accessor is __proto__, so for any other name assignment does the same
  if (key === '__proto__') Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  else target[key] = value;
}

function deepMerge(target: Attrs, patch: Attrs): Attrs {
  const out: Attrs = { ...target };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else setOwn(out, key, isMergeable(value) && isMergeable(out[key]) ? deepMerge(out[key] as Attrs, value) : value);
  }
  return out;
}

/** An object a merge goes into: not a nested time (`{"$time": ...}`), which is a value of its own, replaced whole. */
const isMergeable = (value: unknown): value is Attrs => isPlainObject(value) && !(Object.keys(value).length === 1 && Object.hasOwn(value, '$time'));

export interface AttributeOptions {
  mergeObjects: boolean;
  arrayCap: number;
}

/**
 * An item whose update (`$add`, `$update`, a merge) would take the value a profile holds over 100 KB
 * as JSON: the service drops such an update silently; the emulator refuses the item with a minor
 * error naming the attribute, as it does an item whose own value breaks the rules of nested values
 * (decisions.md "Attributes": "the emulator says so instead of dropping silently").
 */
export class UpdateTooLarge extends Error {
  constructor(readonly attribute: string) {
    super(`${attribute}: a nested value is at most ${MAX_VALUE_BYTES / 1024} KB as JSON, and this update would take the value the profile holds over it`);
  }
}

/** Sets a nested value an update of the stored one made (`$add`, `$remove`, `$update`, a merge); throws UpdateTooLarge when it is over 100 KB as JSON. */
function setUpdated(attrs: Attrs, key: string, value: unknown): void {
  if (jsonLongerThan(value, MAX_VALUE_BYTES)) throw new UpdateTooLarge(key);
  setOwn(attrs, key, value);
}

/** Applies one custom attribute's value (or operation) to the map. */
export function applyCustomAttribute(attrs: Attrs, key: string, value: unknown, options: AttributeOptions): void {
  if (value === null) {
    delete attrs[key];
    return;
  }
  if (Array.isArray(value)) {
    setOwn(attrs, key, value.every(isScalar) ? uniqueCapped(value, options.arrayCap) : value);
    return;
  }
  if (!isPlainObject(value)) {
    setOwn(attrs, key, value);
    return;
  }
  const current = Object.hasOwn(attrs, key) ? attrs[key] : undefined;
  if (holdsObjectArrayOperation(value)) {
    const after = objectArrayAfter(current, value, options.mergeObjects);
    if (after !== undefined) setUpdated(attrs, key, after);
    return;
  }
  const keys = Object.keys(value);
  if (keys.length === 2 && Object.hasOwn(value, 'add') && Object.hasOwn(value, 'remove')) {
    // decisions.md: both in one object, the removals first
    const drop = value.remove as Scalar[];
    const kept = Array.isArray(current) ? (current.filter((v) => isScalar(v) && !drop.includes(v)) as Scalar[]) : [];
    setOwn(attrs, key, uniqueCapped([...kept, ...(value.add as Scalar[])], options.arrayCap));
    return;
  }
  if (keys.length === 1) {
    const operand = value[keys[0]];
    switch (keys[0]) {
      case 'inc': {
        // decisions.md: a missing or non-numeric current value counts as 0
        const base = typeof current === 'number' ? current : 0;
        setOwn(attrs, key, base + (operand as number));
        return;
      }
      case 'add': {
        const base = Array.isArray(current) ? (current.filter(isScalar) as Scalar[]) : [];
        setOwn(attrs, key, uniqueCapped([...base, ...(operand as Scalar[])], options.arrayCap));
        return;
      }
      case 'remove': {
        const drop = operand as Scalar[];
        if (Array.isArray(current)) setOwn(attrs, key, current.filter((v) => !drop.includes(v as Scalar)));
        return;
      }
      case '$time':
        setOwn(attrs, key, new Date(parseTimeValue(operand as string) as number).toISOString());
        return;
    }
  }
  if (options.mergeObjects && isPlainObject(current)) setUpdated(attrs, key, deepMerge(current, value));
  else setOwn(attrs, key, value);
}

/** Whether an element's `$identifier_key` field equals `$identifier_value`. */
function matches(element: unknown, selector: Attrs): boolean {
  return isPlainObject(element) && element[selector.$identifier_key as string] === selector.$identifier_value;
}

/**
 * The array of objects that `{"$add", "$remove", "$update"}` leaves, applied in that order whatever
 * order they are written in (decisions.md), or undefined when they change nothing. `$add` appends
 * objects (starting the array when it is missing or not an array of objects); `$remove` drops every
 * element a selector matches; `$update` changes each matched element and creates none: `$new_object`
 * replaces it whole, or with `_merge_objects` is deep-merged into it. On a missing attribute,
 * `$remove` and `$update` change nothing.
 */
function objectArrayAfter(current: unknown, operations: Attrs, mergeObjects: boolean): Attrs[] | undefined {
  let elements = Array.isArray(current) && current.every(isPlainObject) ? (current as Attrs[]) : undefined;
  let changed = false;
  for (const operation of OBJECT_ARRAY_ORDER) {
    const operand = operations[operation] as Attrs[] | undefined;
    if (operand === undefined) continue;
    if (operation === '$add') elements = [...(elements ?? []), ...operand];
    else if (elements === undefined) continue;
    else if (operation === '$remove') elements = elements.filter((element) => !operand.some((selector) => matches(element, selector)));
    else elements = elements.map((element) => updated(element, operand, mergeObjects));
    changed = true;
  }
  return changed ? elements : undefined;
}

/** An element after `$update`'s selectors: each that matches replaces it with its `$new_object`, or merges that in. */
function updated(element: Attrs, selectors: Attrs[], mergeObjects: boolean): Attrs {
  return selectors.reduce((changed, selector) => {
    if (!matches(changed, selector)) return changed;
    const patch = selector.$new_object as Attrs;
    return mergeObjects ? deepMerge(changed, patch) : { ...patch };
  }, element);
}
