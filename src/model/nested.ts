// Nested custom attributes (objects and arrays of objects) and the operations on arrays of objects
// (decisions.md "Attributes"). The real service drops a nested update that breaks these silently;
// here each is a minor error naming the attribute and the path inside it.
import { describe, isPlainObject, isScalar, jsonLongerThan, longerThan, type Obj } from './checks.js';
import { MAX_STRING_LENGTH, MAX_VALUE_BYTES, OBJECT_ARRAY_OPERATIONS, OBJECT_ARRAY_ORDER } from './fields.js';
import { parseTimeValue } from './time.js';

const SIZE_TEXT = `${MAX_VALUE_BYTES / 1024} KB`;

/** Why a key inside a nested value is not allowed, or undefined. */
function keyProblem(key: string): string | undefined {
  if (key.length === 0) return 'nested keys must not be empty';
  if (longerThan(key, MAX_STRING_LENGTH)) return `nested keys are at most ${MAX_STRING_LENGTH} characters`;
  if (key.startsWith('$')) return 'nested keys must not start with $';
  if (key.includes('.')) return 'nested keys must not contain "."';
  if (key.includes(' ')) return 'nested keys must not contain spaces';
  return undefined;
}

/** The first and the last instant of the years 0 to 3000, in UTC: a nested time outside is not stored. */
const FIRST_NESTED_MS = -62_167_219_200_000; // 0000-01-01T00:00:00.000Z
const LAST_NESTED_MS = 32_535_215_999_999; // 3000-12-31T23:59:59.999Z

/** Why a nested `{"$time": value}` is not a time the service stores, or undefined. */
function nestedTimeProblem(value: unknown): string | undefined {
  const ms = typeof value === 'string' ? parseTimeValue(value) : undefined;
  if (ms === undefined) return `$time must be an ISO 8601 time or a YYYY-MM-DD date, got ${describe(value)}`;
  if (ms < FIRST_NESTED_MS || ms > LAST_NESTED_MS) return `$time must be in the years 0 to 3000 (UTC), got ${describe(value)}`;
  return undefined;
}

/** The path of a key under `path`, written as a reader would look it up. */
function childPath(path: string, key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}...` : key)}]`;
}

/**
 * The first problem inside a nested value, as `path: reason`, or undefined. `path` names the
 * attribute and where the value sits in it (`stays[2].hotel`).
 */
function nestedProblem(path: string, value: unknown): string | undefined {
  const stack: [string, unknown][] = [[path, value]];
  while (stack.length > 0) {
    const [at, node] = stack.pop() as [string, unknown];
    if (node === null) return `${at}: a nested value must not be null`;
    if (typeof node === 'string') {
      if (longerThan(node, MAX_STRING_LENGTH)) return `${at}: nested strings are at most ${MAX_STRING_LENGTH} characters`;
      continue;
    }
    if (typeof node === 'number') {
      if (!Number.isFinite(node)) return `${at}: must be a finite number`;
      continue;
    }
    if (typeof node === 'boolean') continue;
    if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i -= 1) stack.push([`${at}[${i}]`, node[i]]);
      continue;
    }
    if (!isPlainObject(node)) return `${at}: has an unsupported value ${describe(node)}`;
    const keys = Object.keys(node);
    if (keys.length === 1 && keys[0] === '$time') {
      const problem = nestedTimeProblem(node.$time);
      if (problem !== undefined) return `${at}: ${problem}`;
      continue;
    }
    for (let i = keys.length - 1; i >= 0; i -= 1) {
      const key = keys[i];
      const problem = keyProblem(key);
      if (problem !== undefined) return `${childPath(at, key)}: ${problem}`;
      stack.push([childPath(at, key), node[key]]);
    }
  }
  return undefined;
}

/** The problem with a nested object or array of objects set as an attribute's value, or undefined. */
export function nestedValueProblem(attribute: string, value: Obj | Obj[]): string | undefined {
  const problem = nestedProblem(attribute, value);
  if (problem !== undefined) return problem;
  if (jsonLongerThan(value, MAX_VALUE_BYTES)) return `${attribute}: a nested value is at most ${SIZE_TEXT} as JSON`;
  return undefined;
}

function identifies(entry: Obj): boolean {
  return typeof entry.$identifier_key === 'string' && entry.$identifier_key.length > 0 && isScalar(entry.$identifier_value);
}

/** The problem with one operand of `{"$add" | "$remove" | "$update": [...]}` on an attribute, or undefined. */
function operandProblem(attribute: string, operation: string, operand: unknown): string | undefined {
  const at = `${attribute}.${operation}`;
  if (!Array.isArray(operand)) return `${at}: must be an array, got ${describe(operand)}`;
  for (let i = 0; i < operand.length; i += 1) {
    const entry = operand[i];
    if (!isPlainObject(entry)) return `${at}[${i}]: must be an object, got ${describe(entry)}`;
    if (operation === '$add') {
      const problem = nestedProblem(`${at}[${i}]`, entry);
      if (problem !== undefined) return problem;
      continue;
    }
    if (!identifies(entry)) {
      return `${at}[${i}]: needs $identifier_key (a non-empty string) and $identifier_value (a string, number or boolean)`;
    }
    if (operation === '$update') {
      if (!Object.hasOwn(entry, '$new_object')) return `${at}[${i}]: needs $new_object (an object: what the matched elements become)`;
      if (!isPlainObject(entry.$new_object)) return `${at}[${i}].$new_object: must be an object, got ${describe(entry.$new_object)}`;
      const problem = nestedProblem(`${at}[${i}].$new_object`, entry.$new_object);
      if (problem !== undefined) return problem;
    }
  }
  return undefined;
}

/** Whether an attribute's object value holds an operation on an array of objects (`$add`, `$remove`, `$update`). */
export function holdsObjectArrayOperation(value: Obj): boolean {
  for (const key in value) if (OBJECT_ARRAY_OPERATIONS.has(key)) return true;
  return false;
}

/**
 * The problem with an attribute's operations on an array of objects, or undefined: one object may
 * hold `$add`, `$remove` and `$update` together (applied in that order), and nothing else.
 */
export function objectArrayOperationsProblem(attribute: string, value: Obj): string | undefined {
  const others = Object.keys(value).filter((key) => !OBJECT_ARRAY_OPERATIONS.has(key));
  if (others.length > 0) {
    const held = OBJECT_ARRAY_ORDER.filter((operation) => Object.hasOwn(value, operation)).join(', ');
    const shown = others.map((key) => JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}...` : key)).join(', ');
    return `${attribute}: an operation on an array of objects (${held}) holds only $add, $remove and $update, not ${shown}`;
  }
  for (const operation of OBJECT_ARRAY_ORDER) {
    if (!Object.hasOwn(value, operation)) continue;
    const problem = operandProblem(attribute, operation, value[operation]);
    if (problem !== undefined) return problem;
  }
  // the value the attribute ends with holds what $add adds (all of it, on an attribute that has none):
  // the rest of its size is the profile's, which the emulator measures in the value it makes (attributes.ts)
  if (Object.hasOwn(value, '$add') && jsonLongerThan(value.$add, MAX_VALUE_BYTES)) {
    return `${attribute}: a nested value is at most ${SIZE_TEXT} as JSON, and the objects $add adds are over it`;
  }
  return undefined;
}
