// The resume journal's text form: NDJSON, one header line, then a line naming each input file
// (path, size, mtime) and lines of settled line-number ranges. Reading stops cleanly at a torn
// last line (the process died mid-write); damage anywhere else is reported, not guessed around.
import { InputError } from '../errors.js';
import { createRangeSet, type RangeSet } from './range-set.js';

/** Version 2 adds entries for items of a line of several settled on their own; version 1 is read too. */
export const JOURNAL_HEADER = { journal: 'track-upload', version: 2 } as const;
const READABLE_VERSIONS: readonly unknown[] = [1, 2];

/** An input file as the journal knows it: when any of these differ, its line numbers mean other rows. */
export interface FileIdentity {
  /** Absolute path. */
  path: string;
  size: number;
  mtimeMs: number;
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
}

export interface ParsedJournal {
  files: JournalFile[];
  /** Bytes of the text that hold whole, valid lines; anything after is a torn tail to cut off. */
  validBytes: number;
  tornTail: boolean;
  /** The last valid line lacks its newline (cut just before it). */
  missingNewline: boolean;
}

export function headerLine(): string {
  return `${JSON.stringify(JOURNAL_HEADER)}\n`;
}

export function fileLine(index: number, identity: FileIdentity): string {
  return `${JSON.stringify({ file: index, path: identity.path, size: identity.size, mtimeMs: identity.mtimeMs })}\n`;
}

export function rangesLine(index: number, ranges: Array<[number, number]>): string {
  return `${JSON.stringify({ file: index, lines: ranges })}\n`;
}

/** Items settled on their own: [line, place of the item among its line's items]. */
export function itemsLine(index: number, items: Array<[number, number]>): string {
  return `${JSON.stringify({ file: index, items })}\n`;
}

type Entry =
  | { type: 'header' }
  | { type: 'newer'; version: unknown }
  | { type: 'file'; index: number; identity: FileIdentity }
  | { type: 'ranges'; index: number; ranges: Array<[number, number]> }
  | { type: 'items'; index: number; items: Array<[number, number]> };

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

function readEntry(text: string): Entry | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (v.journal === JOURNAL_HEADER.journal && READABLE_VERSIONS.includes(v.version)) return { type: 'header' };
  if (v.journal === JOURNAL_HEADER.journal) return { type: 'newer', version: v.version };
  if (!isCount(v.file)) return undefined;
  if (typeof v.path === 'string' && isCount(v.size) && typeof v.mtimeMs === 'number') {
    return { type: 'file', index: v.file, identity: { path: v.path, size: v.size, mtimeMs: v.mtimeMs } };
  }
  if (Array.isArray(v.lines)) {
    const ok = v.lines.every((r) => Array.isArray(r) && r.length === 2 && isCount(r[0]) && isCount(r[1]) && r[0] <= r[1]);
    if (ok) return { type: 'ranges', index: v.file, ranges: v.lines as Array<[number, number]> };
  }
  if (Array.isArray(v.items)) {
    const ok = v.items.every((r) => Array.isArray(r) && r.length === 2 && isCount(r[0]) && isCount(r[1]));
    if (ok) return { type: 'items', index: v.file, items: v.items as Array<[number, number]> };
  }
  return undefined;
}

/** Reads a journal's bytes; `where` names it in messages. */
export function parseJournal(bytes: Buffer, where: string): ParsedJournal {
  const files = new Map<number, JournalFile>();
  let offset = 0;
  let lineNo = 0;
  let validBytes = 0;
  let tornTail = false;
  let missingNewline = false;
  while (offset < bytes.length) {
    const newline = bytes.indexOf(0x0a, offset);
    const end = newline === -1 ? bytes.length : newline;
    const text = bytes.toString('utf8', offset, end);
    const next = newline === -1 ? bytes.length : newline + 1;
    lineNo += 1;
    const entry = text.trim() === '' ? undefined : readEntry(text);
    const isLast = next >= bytes.length;
    if (entry === undefined) {
      // only the last line can have been cut short by a kill; it is dropped, never half-read
      if (isLast && (lineNo > 1 || headerLine().startsWith(text))) {
        tornTail = true;
        break;
      }
      throw new InputError(`the resume journal is damaged at line ${lineNo}; start without --resume`, where);
    }
    if (entry.type === 'newer') {
      throw new InputError(`the resume journal was written by a newer version of track (journal version ${String(entry.version)}); resume with that version`, where);
    }
    if (lineNo === 1 && entry.type !== 'header') {
      throw new InputError('this is not a track upload journal', where);
    }
    if (entry.type === 'file') {
      files.set(entry.index, { index: entry.index, identity: entry.identity, settled: createRangeSet(), settledItems: new Map() });
    } else if (entry.type === 'ranges' || entry.type === 'items') {
      const file = files.get(entry.index);
      if (file === undefined) {
        throw new InputError(`the resume journal is damaged at line ${lineNo} (unknown file ${entry.index})`, where);
      }
      if (entry.type === 'ranges') for (const [start, end] of entry.ranges) file.settled.add(start, end);
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
  return { files: [...files.values()], validBytes, tornTail, missingNewline };
}
