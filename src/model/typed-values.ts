// Values a typed input (Parquet) gives that JSON has no type for, kept apart from text so that the
// mapping can treat each as its type says: a decimal's exact digits, a time not adjusted to UTC
// (read in --timezone), a time no JavaScript time holds, bytes that are no text, a type with no
// JSON form.

/** An exact decimal number as text (`-12.50`). */
export class Decimal {
  constructor(readonly text: string) {}
}

/** A TIMESTAMP not adjusted to UTC: the wall-clock time it names, in ms as if it were UTC. */
export class LocalTime {
  constructor(readonly wallMs: number) {}
}

/** BYTE_ARRAY bytes that are not UTF-8 text. */
export class NotText {
  constructor(readonly bytes: number) {}
}

/** A DATE or TIMESTAMP past the times JavaScript holds (±8.64e15 ms from 1970, about ±275,000 years); `text` says what the file holds. */
export class TimeOutOfRange {
  constructor(
    readonly type: 'DATE' | 'TIMESTAMP',
    readonly text: string,
  ) {}
}

/** The most milliseconds from 1970-01-01 a JavaScript time holds, either way. */
export const MAX_TIME_MS = 8.64e15;

/** A value of a type that has no JSON form here (an interval, a union); `type` names it. */
export class Unsupported {
  constructor(readonly type: string) {}
}

/** A column's value at a row of its batch (undefined or null for none): how a typed input gives its rows. */
export type ValueAt = (row: number) => unknown;
