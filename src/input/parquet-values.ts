// The values of a Parquet column, as Arrow data (parquet-wasm decodes each row group into it) ->
// plain values, one row at a time, by the rules of docs/upload.md "Parquet": BOOLEAN a boolean;
// whole numbers a number while JavaScript holds them exactly, else a bigint; FLOAT and DOUBLE
// numbers (a FLOAT in its shortest form that reads back as it); DECIMAL a Decimal (its exact text);
// BYTE_ARRAY and STRING text (bytes that are no UTF-8 a NotText); DATE `YYYY-MM-DD`; a TIMESTAMP
// adjusted to UTC an ISO 8601 time in UTC, a local one a LocalTime for --timezone; LIST an array;
// STRUCT and MAP an object; null null. Strings are cut from one text per buffer where it is ASCII,
// as CSV cells are cut from their chunk: a string made per value cost more than the decoding.
import { isAscii, isUtf8 } from 'node:buffer';
import { Type, makeVector, type Data, type DataType } from 'apache-arrow';
import { isoString } from '../model/time.js';
import { Decimal, LocalTime, MAX_TIME_MS, NotText, TimeOutOfRange, Unsupported, type ValueAt } from '../model/typed-values.js';

export type { ValueAt } from '../model/typed-values.js';


const valid = (data: Data, row: number): boolean => {
  const bitmap = data.nullBitmap;
  if (data.nullCount === 0 || bitmap === undefined || bitmap.length === 0) return true;
  const at = data.offset + row;
  return (bitmap[at >> 3] & (1 << (at & 7))) !== 0;
};

/** Reads nulls around `read`, where the column has any. */
const nullable = (data: Data, read: ValueAt): ValueAt => (data.nullCount === 0 ? read : (row) => (valid(data, row) ? read(row) : null));

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** A whole number: a number while it is safe, else a bigint (the mapping decides: text, or refused). */
const whole = (n: bigint): number | bigint => (n <= MAX_SAFE && n >= -MAX_SAFE ? Number(n) : n);

/** A FLOAT's value in the fewest digits that read back as the same FLOAT (0.1, not 0.10000000149011612). */
export function float32Number(value: number): number {
  if (!Number.isFinite(value) || Number.isInteger(value)) return value;
  for (let digits = 1; digits < 9; digits += 1) {
    const shorter = Number(value.toPrecision(digits));
    if (Math.fround(shorter) === value) return shorter;
  }
  return value;
}

function strings(data: Data): ValueAt {
  const offsets = data.valueOffsets as Int32Array | BigInt64Array;
  const bytes = data.values as Uint8Array;
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const big = offsets instanceof BigInt64Array;
  const start = (row: number): number => (big ? Number(offsets[row]) : (offsets[row] as number));
  const binary = data.type.typeId === Type.Binary || data.type.typeId === Type.LargeBinary;
  if (isAscii(buffer)) {
    // one text for the buffer: each value a cut of it, as cheap as a CSV cell
    const text = buffer.toString('latin1');
    if (!big) {
      const small = offsets as Int32Array;
      return nullable(data, (row) => text.slice(small[row], small[row + 1]));
    }
    return nullable(data, (row) => text.slice(start(row), start(row + 1)));
  }
  return nullable(data, (row) => {
    const from = start(row);
    const to = start(row + 1);
    if (binary && !isUtf8(buffer.subarray(from, to))) return new NotText(to - from);
    return buffer.toString('utf8', from, to);
  });
}

/** 128- or 256-bit two's complement words, least significant first -> the decimal's exact text. */
function decimals(data: Data, scale: number, words: number): ValueAt {
  const values = data.values as Uint32Array;
  return nullable(data, (row) => {
    let n = 0n;
    for (let w = words - 1; w >= 0; w -= 1) n = (n << 32n) | BigInt(values[row * words + w]);
    if (values[row * words + words - 1] >= 0x80000000) n -= 1n << BigInt(32 * words);
    const negative = n < 0n;
    let digits = (negative ? -n : n).toString();
    if (scale > 0) {
      digits = digits.padStart(scale + 1, '0');
      digits = `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
    } else if (scale < 0) digits += '0'.repeat(-scale);
    return new Decimal(negative ? `-${digits}` : digits);
  });
}

const UNIT_PER_MS = [1000n, 1n, 1000n, 1_000_000n]; // Arrow's TimeUnit: SECOND, MILLISECOND, MICROSECOND, NANOSECOND
const UNIT_NAMES = ['seconds', 'milliseconds', 'microseconds', 'nanoseconds'];

/** Whether a time of `ms` from 1970 is one JavaScript holds (a sentinel such as INT32 days' maximum is not). */
const held = (ms: number): boolean => ms >= -MAX_TIME_MS && ms <= MAX_TIME_MS;

/** Floor of a / b for b > 0. */
const floorDiv = (a: bigint, b: bigint): bigint => (a >= 0n ? a / b : -((-a + b - 1n) / b));

function timestamps(data: Data, unit: number, utc: boolean): ValueAt {
  const values = data.values as BigInt64Array;
  const per = UNIT_PER_MS[unit] ?? 1n;
  // sub-millisecond digits are dropped, as a CSV time cell's are
  const msOf = unit === 0 ? (v: bigint) => Number(v * per) : (v: bigint) => Number(floorDiv(v, per));
  return nullable(data, (row) => {
    const ms = msOf(values[row]);
    if (!held(ms)) return new TimeOutOfRange('TIMESTAMP', `${values[row]} ${UNIT_NAMES[unit] ?? 'units'} from 1970-01-01`);
    return utc ? isoString(ms) : new LocalTime(ms);
  });
}

const DAY_MS = 86_400_000;

function dates(data: Data): ValueAt {
  const values = data.values as Int32Array | BigInt64Array;
  const millis = (data.type as DataType & { unit: number }).unit === 1; // DateMillisecond
  return nullable(data, (row) => {
    const ms = millis ? Number(values[row]) : (values[row] as number) * DAY_MS;
    if (!held(ms)) return new TimeOutOfRange('DATE', `${values[row]} ${millis ? 'milliseconds' : 'days'} from 1970-01-01`);
    return isoString(ms).slice(0, 10);
  });
}

function lists(data: Data): ValueAt {
  const offsets = data.valueOffsets as Int32Array | BigInt64Array;
  const child = valuesOf(data.children[0]);
  const fixed = data.type.typeId === Type.FixedSizeList ? (data.type as DataType & { listSize: number }).listSize : undefined;
  return nullable(data, (row) => {
    const from = fixed === undefined ? Number(offsets[row]) : row * fixed;
    const to = fixed === undefined ? Number(offsets[row + 1]) : from + fixed;
    const out: unknown[] = [];
    for (let i = from; i < to; i += 1) out.push(child(i));
    return out;
  });
}

function structs(data: Data): ValueAt {
  const fields = (data.type as DataType & { children: Array<{ name: string }> }).children.map((field) => field.name);
  const children = data.children.map((child) => valuesOf(child));
  return nullable(data, (row) => {
    const out: Record<string, unknown> = {};
    fields.forEach((name, i) => (out[name] = children[i](row)));
    return out;
  });
}

/** A MAP: its entries, a list of {key, value} structs, as an object keyed by the keys' text. */
function maps(data: Data): ValueAt {
  const offsets = data.valueOffsets as Int32Array;
  const entries = data.children[0];
  const keys = valuesOf(entries.children[0]);
  const values = valuesOf(entries.children[1]);
  return nullable(data, (row) => {
    const out: Record<string, unknown> = {};
    for (let i = offsets[row]; i < offsets[row + 1]; i += 1) out[String(keys(i))] = values(i);
    return out;
  });
}

function dictionaries(data: Data): ValueAt {
  const indexes = data.values as ArrayLike<number | bigint>;
  const dictionary = data.dictionary!;
  const words = dictionary.data.map((part) => valuesOf(part));
  // a dictionary in one part is the common case; several are read through their lengths
  const lengths = dictionary.data.map((part) => part.length);
  return nullable(data, (row) => {
    let index = Number(indexes[row]);
    for (let part = 0; part < words.length; part += 1) {
      if (index < lengths[part]) return words[part](index);
      index -= lengths[part];
    }
    return null;
  });
}

/**
 * At least the bytes of JSON any one value of a column takes, whatever reads it (a text value six
 * times its bytes, any other single value at most 32), without reading the values: Infinity for a
 * nested or dictionary column, whose values are measured one by one.
 */
export function valueBytesBound(data: Data): number {
  switch (data.type.typeId) {
    case Type.Utf8:
    case Type.Binary: {
      const offsets = data.valueOffsets as Int32Array;
      let longest = 0;
      for (let row = 0; row < data.length; row += 1) longest = Math.max(longest, offsets[row + 1] - offsets[row]);
      return 6 * longest + 2;
    }
    case Type.Null:
    case Type.Bool:
    case Type.Int:
    case Type.Float:
    case Type.Date:
    case Type.Timestamp:
      return 32;
    case Type.Decimal:
      return 6 * 80;
    default:
      return Infinity;
  }
}

/** The values of one column (or a nested part of one), by its Arrow type. */
export function valuesOf(data: Data): ValueAt {
  const type = data.type as DataType & { unit: number; timezone?: string | null; scale: number; bitWidth: number; precision: number };
  if (data.offset !== 0) {
    // sliced data: read through Arrow's own vector, slowly (parquet-wasm's batches are not sliced)
    const vector = makeVector(data);
    return (row) => vector.get(row);
  }
  switch (type.typeId) {
    case Type.Null:
      return () => null;
    case Type.Bool: {
      const bits = data.values as Uint8Array;
      return nullable(data, (row) => (bits[row >> 3] & (1 << (row & 7))) !== 0);
    }
    case Type.Int: {
      const values = data.values as ArrayLike<number | bigint>;
      return type.bitWidth === 64 ? nullable(data, (row) => whole(values[row] as bigint)) : nullable(data, (row) => values[row]);
    }
    case Type.Float: {
      const values = data.values as Float32Array | Float64Array | Uint16Array;
      if (values instanceof Float32Array) return nullable(data, (row) => float32Number(values[row]));
      if (values instanceof Uint16Array) {
        const vector = makeVector(data);
        return (row) => vector.get(row) as number | null;
      }
      return nullable(data, (row) => values[row]);
    }
    case Type.Utf8:
    case Type.LargeUtf8:
    case Type.Binary:
    case Type.LargeBinary:
      return strings(data);
    case Type.Decimal:
      return decimals(data, type.scale, type.bitWidth / 32);
    case Type.Timestamp:
      return timestamps(data, type.unit, type.timezone !== null && type.timezone !== undefined && type.timezone !== '');
    case Type.Date:
      return dates(data);
    case Type.List:
    case Type.LargeList:
    case Type.FixedSizeList:
      return lists(data);
    case Type.Struct:
      return structs(data);
    case Type.Map:
      return maps(data);
    case Type.Dictionary:
      return dictionaries(data);
    default: {
      const unsupported = new Unsupported(String(type));
      return nullable(data, () => unsupported);
    }
  }
}
