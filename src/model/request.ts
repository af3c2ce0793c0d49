// What the uploader's stages hand each other: a request body plus, for every item in it, where it
// came from, so that a server's verdict on an item can be joined back to its file and line.
// A RequestLine is an NDJSON line shaped like a request body: it may hold several items, which
// may travel in different requests.
import type { ArrayName, TrackRequest } from './types.js';

/** Where one item came from: the file, the 1-based physical line its row starts on, the row as read. */
export interface ItemOrigin {
  file: string;
  line: number;
  /** The source row as read (CSV: header -> cell text; NDJSON: the parsed line), for the rejects file. */
  row: unknown;
  /** For an item of a RequestLine: its place among the line's items, from 0. */
  item?: number;
  /** The line of the file where the row begins, when `line` is not it (a JSON array's element is numbered by its place). */
  fileLine?: number;
}

/** One request ready to send, with the origin of each item at the same array and index. */
export interface PlannedRequest {
  /** 0-based sequence number in the run, in the order requests were planned. */
  seq: number;
  body: TrackRequest;
  origins: Record<ArrayName, ItemOrigin[]>;
  /**
   * identityHash() of every user the request touches (a push-token import: a number below zero of
   * its own). The sender never has two requests that share a key in flight at once, so one user's
   * updates apply in the file's order.
   */
  userKeys: number[];
  /** The data points each item costs (model/data-points.ts), in the order attributes, events, purchases. */
  points?: number[];
  /** What the planner gave the batcher with each item (BatchEntry.tag), in the same order; it stays in the planning thread. */
  tags?: unknown[];
  /** What the delta state learns when the server accepts the items (records/state-record.ts). */
  learn?: Uint8Array;
}

/**
 * A reject record; it names `item` only for an item of a RequestLine, so other records keep their
 * shape. `fileLine`: the line of the file where the row begins, when `line` is not it (see
 * withFileLine).
 */
export function rejectRecord(file: string, line: number, kind: RejectRecord['kind'], row: unknown, errors: string[], item?: number, fileLine?: number): RejectRecord {
  const record: RejectRecord = item === undefined ? { file, line, kind, row, errors } : { file, line, item, kind, row, errors };
  return fileLine === undefined ? record : withFileLine(record, fileLine);
}

/**
 * The record, told the line of the file where its row begins when its `line` is not that line (a
 * JSON array's element, numbered by its place), for what points a person at the file (a CI
 * annotation). Not a field of the rejects file: not enumerable, so no JSON of the record holds it.
 */
export function withFileLine(record: RejectRecord, fileLine: number): RejectRecord {
  return Object.defineProperty(record, 'fileLine', { value: fileLine, enumerable: false, configurable: true });
}

/** The line of the file where a rejected row begins (see withFileLine). */
export const fileLineOf = (record: RejectRecord): number => (record as RejectRecord & { fileLine?: number }).fileLine ?? record.line;

/** One rejected row, one line of the rejects file (NDJSON); fixable and feedable back as input. */
export interface RejectRecord {
  file: string;
  line: number;
  /** For an item of a RequestLine: its place among the line's items, from 0. */
  item?: number;
  kind: ArrayName | 'unknown';
  /** For a field left out of a row that was sent without it (--drop-invalid-fields): its column and value; `row` then holds it and the user's identifier. */
  column?: string;
  value?: unknown;
  row: unknown;
  errors: string[];
}
