// What a column header says: the field it fills (dotted names nest) and an optional `:annotation`,
// and which reader its cells get when there is no annotation.
import { isCustomAttributeName, TIME_FIELDS } from '../model/fields.js';
import type { ArrayName } from '../model/types.js';
import {
  ANNOTATION_READERS,
  COLUMN_OPERATIONS,
  COLUMN_TYPES,
  isAnnotation,
  readInferred,
  readJson,
  readText,
  type Annotation,
  type CellReader,
} from './cells.js';
import { dateOfBirthReader, listReader, phoneReader, timeReader, type CellOptions } from './export-cells.js';

export interface ColumnSpec {
  /** The field as written, dots and all: `properties.plan`. */
  field: string;
  path: string[];
  annotation?: Annotation;
}

/** Reads `name`, `a.b.c` and `name:type`; a colon followed by other text is part of the name. */
export function parseColumnSpec(text: string): ColumnSpec | { problem: string } {
  let field = text;
  let annotation: Annotation | undefined;
  const colon = text.lastIndexOf(':');
  if (colon > 0) {
    const suffix = text.slice(colon + 1);
    if (isAnnotation(suffix)) {
      annotation = suffix;
      field = text.slice(0, colon).trim();
    } else if (/^[a-z]+$/.test(suffix)) {
      return {
        problem:
          `unknown annotation ":${suffix}"; known are ${[...COLUMN_TYPES, ...COLUMN_OPERATIONS].map((a) => `:${a}`).join(' ')}` +
          ' (to keep a colon in a field name, rename the column with --map)',
      };
    }
  }
  const path = field.split('.');
  if (path.some((part) => part.length === 0)) return { problem: `"${field}" has an empty part between dots` };
  return { field, path, annotation };
}

const IDENTIFIER_COLUMNS = new Set(['external_id', 'service_id', 'email', 'phone']);

/** Standard attribute fields whose only valid value is text: never inferred as numbers or booleans. */
const TEXT_ATTRIBUTE_FIELDS = new Set([
  'first_name',
  'last_name',
  'gender',
  'country',
  'home_city',
  'time_zone',
  'dob',
  'language',
  'email_subscribe',
  'push_subscribe',
]);

/** decisions.md "Reading files (uploader)": identifiers, phone, app_id, product_id, currency, event name and time. */
function alwaysText(kind: ArrayName, path: string[]): boolean {
  const [top] = path;
  if (top === 'user_alias') return true;
  if (path.length > 1) return false;
  if (IDENTIFIER_COLUMNS.has(top) || top === 'app_id' || top === 'product_id' || top === 'currency') return true;
  if (kind === 'events') return top === 'name' || top === 'time';
  if (kind === 'purchases') return top === 'time';
  return TEXT_ATTRIBUTE_FIELDS.has(top);
}

/** Fields whose only valid value is an object or an array of objects: read as JSON. */
function structured(kind: ArrayName, path: string[]): boolean {
  if (path.length > 1) return false;
  const [top] = path;
  if (top === 'user_alias') return true;
  if (kind === 'attributes') return top === 'push_tokens' || top === 'subscription_groups';
  return top === 'properties';
}

function isTopCustomAttribute(kind: ArrayName, path: string[]): boolean {
  return kind === 'attributes' && path.length === 1 && isCustomAttributeName(path[0]);
}

/** The time of an event or a purchase, and the standard fields that hold a time. */
function isTimeField(kind: ArrayName, path: string[]): boolean {
  if (path.length > 1) return false;
  return kind === 'attributes' ? TIME_FIELDS.includes(path[0]) : path[0] === 'time';
}

/** The reader for a column's cells, or a problem with its annotation. */
export function readerFor(kind: ArrayName, spec: ColumnSpec, options: CellOptions = {}): CellReader | { problem: string } {
  const { annotation, path } = spec;
  const top = path.length === 1 ? path[0] : undefined;
  if (annotation === undefined || annotation === 'string') {
    if (annotation === undefined && isTimeField(kind, path)) return timeReader(options, false, false);
    if (kind === 'attributes' && top === 'dob') return dateOfBirthReader(options);
    // the phone of any row: the profile's, or the identifier of an event or a purchase
    if (top === 'phone' && options.defaultCountry !== undefined) return phoneReader(options.defaultCountry);
    if (annotation === 'string') return readText;
    if (alwaysText(kind, path)) return readText;
    if (structured(kind, path)) return readJson;
    return readInferred;
  }
  if (annotation === 'inc' || annotation === 'add' || annotation === 'remove') {
    // spec 2.3: the operation forms are values of custom attributes on a profile
    if (!isTopCustomAttribute(kind, path)) {
      const what =
        kind !== 'attributes' ? `${kind} rows` : path.length > 1 ? 'nested fields' : `${path[0]}, which is not a custom attribute`;
      return { problem: `:${annotation} applies to custom attributes of attributes rows, not to ${what}` };
    }
  }
  if (annotation === 'time') return timeReader(options, isTopCustomAttribute(kind, path), true);
  const separator = options.arraySeparator;
  if (separator !== undefined && (annotation === 'array' || annotation === 'add' || annotation === 'remove')) {
    return listReader(separator, annotation, annotation === 'array' ? undefined : annotation);
  }
  return ANNOTATION_READERS[annotation];
}
