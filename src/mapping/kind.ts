// Which array a file's rows (or an NDJSON line's item) belong to, when --kind does not say.
import type { ArrayName } from '../model/types.js';

export function isKind(value: unknown): value is ArrayName {
  return value === 'attributes' || value === 'events' || value === 'purchases';
}

/** A `product_id` field means purchases; `name` and `time` mean events; anything else is attributes. */
export function inferKind(fields: Iterable<string>): ArrayName {
  const names = new Set(fields);
  if (names.has('product_id')) return 'purchases';
  if (names.has('name') && names.has('time')) return 'events';
  return 'attributes';
}
