// The resume journal's text form: NDJSON, one header line (naming the target the rows go to), then
// a line naming each input file (path, size, mtime), lines of line-number ranges sent (in flight)
// and settled, and a last line when a run ends. Reading stops cleanly at a torn last line (the
// process died mid-write); damage anywhere else is reported, not guessed around.
import { InputError } from '../errors.js';
import { createRangeSet, difference, type RangeSet } from './range-set.js';

/**
 * Version 4 adds the rejects the rejects file could not take (`owed`); version 3 names the target in
 * the header and adds the rows in flight (`sent`) and the end of a run (`end`); version 2 added items
 * of a request line settled on their own. 1 to 3 are read too.
 */
export const JOURNAL_HEADER = { journal: 'track-upload', version: 4 } as const;
const READABLE_VERSIONS: readonly unknown[] = [1, 2, 3, 4];

/** An input file as the journal knows it: when any of these differ, its line numbers mean other rows. */
export interface FileIdentity {
  /** Absolute path; for an object in storage, its URL. */
  path: string;
  size: number;
  mtimeMs: number;
  /** An object in storage's ETag (its mtimeMs is then 0). */
  etag?: string;
}

export interface JournalFile {
  index: number;
  identity: FileIdentity;
  /** 1-based lines whose rows reached a final outcome (accepted, or written to the rejects file). */
  settled: RangeSet;
  /**
   * Lines of several items (a request-shaped NDJSON line) some of whose items settled before the
   * whole line did: line -> the 0-based places of those items among the line's.
   */
  settledItems: Map<number, Set<number>>;
  /** Lines whose rows were about to be posted: a row here and not in `settled` may have reached the server. */
  sent: RangeSet;
  /** Data rows the run read from this file, once it had read all of it. */
  rows?: number;
}

/** How a run that wrote the journal ended; absent when it was killed. */
export interface JournalEnd {
  /** ISO time. */
  at: string;
  /** Every row of every input was settled. */
  complete: boolean;
}

export interface ParsedJournal {
  /** The endpoint the rows were sent to; undefined in journals of version 1 and 2. */
  target?: string;
  /** What the run's delta state remembered of what it sent (`attributes`, `activities`); empty for a plain run. */
  remembers: string[];
  /** The fingerprint of the API key the run was sent with (keyFingerprint); undefined in a journal of an earlier version. */
  key?: string;
  /**
   * The shard whose rows the run sent (--shard K/N: `K/N`), null for a run of every row; undefined in
   * a journal of an earlier version, which did not say.
   */
  shard?: string | null;
  /**
   * Rows sent again although they may have been applied already, by runs after the last end: a run
   * that was killed never reported them, so the next one does.
   */
  unreported: number;
  files: JournalFile[];
  /** The last run's end, when it ended on its own terms (not killed). */
  end?: JournalEnd;
  /** Rejects of settled rows that the rejects file could not take (a full disk): a resumed run writes them. */
  owed: unknown[];
  /** Bytes of the text that hold whole, valid lines; anything after is a torn tail to cut off. */
  validBytes: number;
  tornTail: boolean;
  /** The last valid line lacks its newline (cut just before it). */
  missingNewline: boolean;
}

/**
 * The journal's first line: the target, what the delta state remembers, the fingerprint of the run's
 * API key (keyFingerprint), and the shard whose rows it sends (`K/N`, null for every row). Earlier
 * versions read a header's fields they know and pass over the others.
 */
export function headerLine(target: string, remembers: readonly string[] = [], key?: string, shard: string | null = null): string {
  return `${JSON.stringify({ ...JOURNAL_HEADER, target, ...(remembers.length === 0 ? {} : { remembers }), ...(key === undefined ? {} : { key }), shard })}\n`;
}

export function fileLine(index: number, identity: FileIdentity): string {
  const { path, size, mtimeMs, etag } = identity;
  return `${JSON.stringify(etag === undefined ? { file: index, path, size, mtimeMs } : { file: index, path, size, mtimeMs, etag })}\n`;
}

export function rangesLine(index: number, ranges: Array<[number, number]>): string {
  return `${JSON.stringify({ file: index, lines: ranges })}\n`;
}

/** Lines about to be posted. */
export function sentLine(index: number, ranges: Array<[number, number]>): string {
  return `${JSON.stringify({ file: index, sent: ranges })}\n`;
}

/** Lines that were recorded as sent but never left, or were refused unapplied: no longer in doubt. */
export function unsentLine(index: number, ranges: Array<[number, number]>): string {
  return `${JSON.stringify({ file: index, unsent: ranges })}\n`;
}

/** Rows sent again although they may have been applied already (counted as possibly duplicated). */
export function againLine(rows: number): string {
  return `${JSON.stringify({ again: rows })}\n`;
}

/** The number of data rows in a file, once it has been read to its end. */
export function rowsLine(index: number, rows: number): string {
  return `${JSON.stringify({ file: index, rows })}\n`;
}

export function endLine(end: JournalEnd): string {
  return `${JSON.stringify({ end: end.at, complete: end.complete })}\n`;
}

/** A reject the rejects file could not take, carried here so that its row can settle. */
export function owedLine(record: unknown): string {
  return `${JSON.stringify({ owed: record })}\n`;
}

/** Items settled on their own: [line, place of the item among its line's items]. */
export function itemsLine(index: number, items: Array<[number, number]>): string {
  return `${JSON.stringify({ file: index, items })}\n`;
}

type Entry =
  | { type: 'header'; target?: string; remembers: string[]; key?: string; shard?: string | null }
  | { type: 'end'; end: JournalEnd }
  | { type: 'sent'; index: number; ranges: Array<[number, number]> }
  | { type: 'unsent'; index: number; ranges: Array<[number, number]> }
  | { type: 'again'; rows: number }
  | { type: 'owed'; record: unknown }
  | { type: 'rows'; index: number; rows: number }
  | { type: 'newer'; version: unknown }
  | { type: 'file'; index: number; identity: FileIdentity }
  | { type: 'ranges'; index: number; ranges: Array<[number, number]> }
  | { type: 'items'; index: number; items: Array<[number, number]> };

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;
const isRanges = (v: unknown[]): v is Array<[number, number]> =>
  v.every((r) => Array.isArray(r) && r.length === 2 && isCount(r[0]) && isCount(r[1]) && r[0] <= r[1]);

function readEntry(text: string): Entry | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (v.journal === JOURNAL_HEADER.journal && READABLE_VERSIONS.includes(v.version)) {
    const remembers = Array.isArray(v.remembers) ? v.remembers.filter((r): r is string => typeof r === 'string') : [];
    const shard = v.shard === null || typeof v.shard === 'string' ? v.shard : undefined;
    return { type: 'header', target: typeof v.target === 'string' ? v.target : undefined, remembers, key: typeof v.key === 'string' ? v.key : undefined, shard };
  }
  if (v.journal === JOURNAL_HEADER.journal) return { type: 'newer', version: v.version };
  if (typeof v.end === 'string' && typeof v.complete === 'boolean') return { type: 'end', end: { at: v.end, complete: v.complete } };
  if (isCount(v.again)) return { type: 'again', rows: v.again };
  if (typeof v.owed === 'object' && v.owed !== null) return { type: 'owed', record: v.owed };
  if (!isCount(v.file)) return undefined;
  if (isCount(v.rows)) return { type: 'rows', index: v.file, rows: v.rows };
  if (Array.isArray(v.sent) && isRanges(v.sent)) return { type: 'sent', index: v.file, ranges: v.sent };
  if (Array.isArray(v.unsent) && isRanges(v.unsent)) return { type: 'unsent', index: v.file, ranges: v.unsent };
  if (typeof v.path === 'string' && isCount(v.size) && typeof v.mtimeMs === 'number') {
    const identity: FileIdentity = { path: v.path, size: v.size, mtimeMs: v.mtimeMs };
    if (typeof v.etag === 'string') identity.etag = v.etag;
    return { type: 'file', index: v.file, identity };
  }
  if (Array.isArray(v.lines) && isRanges(v.lines)) return { type: 'ranges', index: v.file, ranges: v.lines };
  if (Array.isArray(v.items)) {
    const ok = v.items.every((r) => Array.isArray(r) && r.length === 2 && isCount(r[0]) && isCount(r[1]));
    if (ok) return { type: 'items', index: v.file, items: v.items as Array<[number, number]> };
  }
  return undefined;
}

/** How every header begins, so a first line cut short by a kill is known as one. */
const HEAD = `{"journal":"${JOURNAL_HEADER.journal}"`;

/** Reads a journal's bytes; `where` names it in messages. */
export function parseJournal(bytes: Buffer, where: string): ParsedJournal {
  // nothing is sent before the header and the input files are written, in one write: a journal
  // without its whole first line cannot tell which rows an earlier run sent, so it is not read as
  // one that sent none
  const unreadable = (what: string): InputError =>
    new InputError(
      `the resume journal is ${what}, so it cannot tell which rows were sent; restore it from a copy, or give --restart to send every row again (rows the earlier run delivered are then sent twice)`,
      where,
    );
  if (bytes.toString('utf8').trim() === '') throw unreadable('empty');
  const files = new Map<number, JournalFile>();
  let target: string | undefined;
  let remembers: string[] = [];
  let key: string | undefined;
  let shard: string | null | undefined;
  let end: JournalEnd | undefined;
  let unreported = 0;
  const owed: unknown[] = [];
  let offset = 0;
  let lineNo = 0;
  let validBytes = 0;
  let tornTail = false;
  let missingNewline = false;
  while (offset < bytes.length) {
    const newline = bytes.indexOf(0x0a, offset);
    const stop = newline === -1 ? bytes.length : newline;
    const text = bytes.toString('utf8', offset, stop);
    const next = newline === -1 ? bytes.length : newline + 1;
    lineNo += 1;
    const entry = text.trim() === '' ? undefined : readEntry(text);
    const isLast = next >= bytes.length;
    if (entry === undefined) {
      if (lineNo === 1 && isLast && (HEAD.startsWith(text) || text.startsWith(HEAD))) throw unreadable('cut short inside its first line');
      // only the last line can have been cut short by a kill; it is dropped, never half-read
      if (isLast && lineNo > 1) {
        tornTail = true;
        break;
      }
      throw new InputError(`the resume journal is damaged at line ${lineNo}; --restart starts over (sending every row again)`, where);
    }
    if (entry.type === 'newer') {
      throw new InputError(`the resume journal was written by a newer version of track (journal version ${String(entry.version)}); resume with that version`, where);
    }
    if (lineNo === 1 && entry.type !== 'header') {
      throw new InputError('this is not a track upload journal; give another --journal', where);
    }
    if (entry.type === 'header') {
      target = entry.target;
      remembers = entry.remembers;
      key = entry.key;
      shard = entry.shard;
    }
    // entries after an end are a resumed run's, which has not ended until it writes its own
    else end = entry.type === 'end' ? entry.end : undefined;
    if (entry.type === 'end') unreported = 0;
    else if (entry.type === 'again') unreported += entry.rows;
    else if (entry.type === 'owed') owed.push(entry.record);
    if (entry.type === 'file') {
      files.set(entry.index, { index: entry.index, identity: entry.identity, settled: createRangeSet(), settledItems: new Map(), sent: createRangeSet() });
    } else if (entry.type === 'ranges' || entry.type === 'items' || entry.type === 'sent' || entry.type === 'unsent' || entry.type === 'rows') {
      const file = files.get(entry.index);
      if (file === undefined) {
        throw new InputError(`the resume journal is damaged at line ${lineNo} (unknown file ${entry.index}); --restart starts over (sending every row again)`, where);
      }
      if (entry.type === 'ranges') for (const [start, last] of entry.ranges) file.settled.add(start, last);
      else if (entry.type === 'sent') for (const [start, last] of entry.ranges) file.sent.add(start, last);
      else if (entry.type === 'unsent') {
        const unsent = createRangeSet();
        for (const [start, last] of entry.ranges) unsent.add(start, last);
        file.sent = difference(file.sent, unsent);
      }
      else if (entry.type === 'rows') file.rows = entry.rows;
      else {
        for (const [line, item] of entry.items) {
          let items = file.settledItems.get(line);
          if (items === undefined) file.settledItems.set(line, (items = new Set()));
          items.add(item);
        }
      }
    }
    offset = next;
    validBytes = offset;
    // a whole entry cut off just before its newline is kept; the next append starts a new line
    if (newline === -1) missingNewline = true;
  }
  // the input files are written with the header: a journal naming none was cut short as well
  if (files.size === 0) throw unreadable('cut short before it names the input files');
  return { target, remembers, key, shard, unreported, files: [...files.values()], end, owed, validBytes, tornTail, missingNewline };
}
