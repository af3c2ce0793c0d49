// Valid items of each array, and assertions that place an item under test behind a valid one, so
// that the reported index is checked as well as the array and the field.
import { expect } from 'vitest';
import { validateRequest, type ArrayName, type MinorError } from '../../src/model/index.js';

export const TIME = '2024-03-07T10:00:00Z';

type Obj = Record<string, unknown>;

export function attrs(extra: Obj = {}): Obj {
  return { external_id: 'user-1', ...extra };
}

export function event(extra: Obj = {}): Obj {
  return { external_id: 'user-1', name: 'played_song', time: TIME, ...extra };
}

export function purchase(extra: Obj = {}): Obj {
  return { external_id: 'user-1', product_id: 'sku-1', currency: 'USD', price: 9.99, time: TIME, ...extra };
}

/** A valid item of the given array, with `extra` laid over it (a key set to undefined is dropped). */
export function itemOf(kind: ArrayName, extra: Obj = {}): Obj {
  const item = kind === 'attributes' ? attrs(extra) : kind === 'events' ? event(extra) : purchase(extra);
  return Object.fromEntries(Object.entries(item).filter(([, value]) => value !== undefined));
}

/** The fields an item needs besides its identifier (an event's name and time, a purchase's product...). */
export function bareItem(kind: ArrayName, fields: Obj): Obj {
  return itemOf(kind, { external_id: undefined, ...fields });
}

/** Minor errors of a request whose `kind` array is [a valid item, the item under test]. */
export function minorErrorsFor(kind: ArrayName, item: unknown): MinorError[] {
  const verdict = validateRequest({ [kind]: [itemOf(kind), item] });
  if (!verdict.ok) throw new Error(`unexpected fatal verdict: ${verdict.message}`);
  expect(verdict.counts[kind]).toBe(2);
  return verdict.errors;
}

export function expectAccepted(kind: ArrayName, item: unknown): void {
  expect(minorErrorsFor(kind, item)).toEqual([]);
}

/** The item under test (index 1) is the only one rejected, and the message starts with the field. */
export function expectRejected(kind: ArrayName, item: unknown, field: RegExp): MinorError {
  const errors = minorErrorsFor(kind, item);
  expect(errors).toHaveLength(1);
  expect(errors[0]).toMatchObject({ input_array: kind, index: 1 });
  expect(errors[0].type).toMatch(field);
  return errors[0];
}
