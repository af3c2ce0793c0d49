// A `.json` file that is one object holding its rows in an array under a key (`{"users": [ {...},
// {...} ]}`, as many APIs and exports write them) is none of the layouts a .json input holds: read as
// one, it was a single row rejected (no identifier), or, with `{"users": [` on a line of its own, its
// lines were read as NDJSON, most rejected and those that parsed sent. It is refused before any row of
// it is planned, naming the key and the way on.
import { basename } from 'node:path';
import { InputError } from '../errors.js';
import { IDENTIFIER_FIELDS } from '../model/fields.js';
import { ARRAY_NAMES } from '../model/types.js';
import type { NdjsonRecord } from './ndjson.js';

/** Keys by which an object names its user, is request-shaped or imports push tokens anonymously: a row, whatever else it holds. */
const ROW_KEYS: ReadonlySet<string> = new Set([...IDENTIFIER_FIELDS, ...ARRAY_NAMES, 'push_token_import']);

/** A JSON string as written (its escapes kept): the first key of an object. */
const KEY = String.raw`"((?:[^"\\]|\\.)*)"`;
/** A line that opens an object whose first key holds an array (of objects), and ends there: no NDJSON line does. */
const OPENING_LINE = new RegExp(String.raw`^\{\s*${KEY}\s*:\s*\[\s*\{?\s*$`);
/** Text that begins an object whose first key holds an array of objects. */
const OPENING = new RegExp(String.raw`^\{\s*${KEY}\s*:\s*\[\s*\{`);

const keyOf = (written: string): string | undefined => {
  const key = JSON.parse(`"${written}"`) as string;
  return ROW_KEYS.has(key) ? undefined : key;
};

/** The key under which an object holds its rows (its first array of objects), when it holds no key of a row; else undefined. */
export function wrappedRowsKey(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const keys = Object.keys(value);
  if (keys.some((key) => ROW_KEYS.has(key))) return undefined;
  return keys.find((key) => {
    const inner = (value as Record<string, unknown>)[key];
    return Array.isArray(inner) && inner.length > 0 && inner.every((element) => typeof element === 'object' && element !== null && !Array.isArray(element));
  });
}

/** The key a wrapper's first text opens its array of rows under (`{"users": [ {`), or undefined. */
export function openingKey(head: string): string | undefined {
  const found = OPENING.exec(head);
  return found === null ? undefined : keyOf(found[1]);
}

/** The key of a first line that opens a wrapper (`{"users": [` alone), or undefined. */
function openingLineKey(text: string): string | undefined {
  const found = OPENING_LINE.exec(text.trim());
  return found === null ? undefined : keyOf(found[1]);
}

/** A word of a shell command line, quoted when it must be. */
const shellWord = (word: string): string => (/^[\w./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`);

/** The error for a file whose rows are under `key`, with the jq command that writes them one a line. */
export function wrapperError(file: string, key: string): InputError {
  const path = /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `.${key}[]` : `.[${JSON.stringify(key)}][]`;
  const out = `${basename(file).replace(/\.json(\.gz)?$/i, '')}.ndjson`;
  return new InputError(
    `is one object holding its rows in an array under the key ${JSON.stringify(key)}, not rows: a .json input is an array of objects, [ {...}, {...} ], or objects one after another. ` +
      `Write the rows out one a line, jq -c ${shellWord(path)} ${shellWord(file)} > ${shellWord(out)}, and upload ${out}`,
    file,
  );
}

/**
 * The batches of a `.json` input read as objects (NDJSON, or objects one after another), refused
 * first when the file is one wrapper: a first line that opens its array (`{"users": [` alone), a
 * first record too long to read whose text opens one (`head`), or one object, the whole file, whose
 * rows are under a key.
 */
export async function* refusingWrapper(batches: AsyncIterator<NdjsonRecord[]>, file: string, head: string): AsyncGenerator<NdjsonRecord[]> {
  let first = await batches.next();
  while (first.done !== true && first.value.length === 0) first = await batches.next();
  if (first.done === true) return;
  const [record] = first.value;
  if ('error' in record) {
    const key = openingLineKey(record.text) ?? (record.text === '' || record.text.endsWith('...') ? openingKey(head) : undefined);
    if (key !== undefined) throw wrapperError(file, key);
  }
  const key = first.value.length === 1 && 'value' in record ? wrappedRowsKey(record.value) : undefined;
  if (key !== undefined) {
    // one object, and the file ends with it: its rows are the array under the key
    let next = await batches.next();
    while (next.done !== true && next.value.length === 0) next = await batches.next();
    if (next.done === true) throw wrapperError(file, key);
    yield first.value;
    yield next.value;
  } else yield first.value;
  for (let next = await batches.next(); next.done !== true; next = await batches.next()) yield next.value;
}
