// What the uploader's stages hand each other: a request body plus, for every item in it, where it
// came from, so that a server's verdict on an item can be joined back to its file and line.
import type { ArrayName, TrackRequest } from './types.js';

/** Where one item came from: the file, the 1-based physical line its row starts on, the row as read. */
export interface ItemOrigin {
  file: string;
  line: number;
  /** The source row as read (CSV: header -> cell text; NDJSON: the parsed line), for the rejects file. */
  row: unknown;
  /** For a line of several items (a request-shaped NDJSON line): this item's place among them, from 0. */
  item?: number;
}

/**
 * Where a request's items came from, as columns: item i (attributes, then events, then purchases)
 * is line lines[i] of files[fileOf[i]]. What settling a request needs, at no object per item.
 */
export interface ItemLines {
  /** How many items each array holds, in the order attributes, events, purchases. */
  readonly counts: readonly number[];
  readonly files: readonly string[];
  readonly fileOf: Int32Array;
  readonly lines: Float64Array;
}

/** One request ready to send, with the origin of each item at the same array and index. */
export interface PlannedRequest {
  /** 0-based sequence number in the run, in the order requests were planned. */
  seq: number;
  body: TrackRequest;
  /** The body as UTF-8 JSON, when it was serialized already (a plan made in a worker thread). */
  readonly json?: Uint8Array;
  origins: Record<ArrayName, ItemOrigin[]>;
  /** The items' files and lines without their origins, when those are built only on demand. */
  readonly lines?: ItemLines;
  /**
   * identityHash() of every user the request touches (a push-token import: a number below zero of
   * its own). The sender never has two requests that share a key in flight at once, so one user's
   * updates apply in the file's order.
   */
  userKeys: readonly number[] | Float64Array;
}

/** A reject record; it names `item` only for an item of a line of several, so other records keep their shape. */
export function rejectRecord(file: string, line: number, kind: RejectRecord['kind'], row: unknown, errors: string[], item?: number): RejectRecord {
  return item === undefined ? { file, line, kind, row, errors } : { file, line, item, kind, row, errors };
}

/** Why a CSV reader could not split a row into cells; such a reject's `row` is the row's text. */
export const CSV_TEXT_AFTER_QUOTE =
  'row: a quoted cell on this row has text after its closing quote; quote the whole cell and double each quote inside it';
export const CSV_UNCLOSED_QUOTE =
  'row: a quoted cell on this row is never closed, so the rest of the file was read as one cell; close the quote';
/** Asked of a reject fed back whose `row` is still the text of a CSV row. */
export const CSV_ROW_TEXT = 'row: is the text of a CSV row that could not be read; write it as an object of cells under their headers';

/** True for a reject reason given only to the text of a CSV row. */
export function isCsvTextReason(error: unknown): boolean {
  return error === CSV_TEXT_AFTER_QUOTE || error === CSV_UNCLOSED_QUOTE || error === CSV_ROW_TEXT;
}

/** One rejected row, one line of the rejects file (NDJSON); fixable and feedable back as input. */
export interface RejectRecord {
  file: string;
  line: number;
  /** For an item of a line of several (a request-shaped NDJSON line): its place among them, from 0. */
  item?: number;
  kind: ArrayName | 'unknown';
  row: unknown;
  errors: string[];
}
