// What a plan tells of the files it read, as a fold over the plan's events: rows, items by kind,
// rejects and warnings by reason, requests. The same events come from a plan made in this thread or
// in the worker, so the summary is made one way.
import { readUndecodableProblem } from '../input/decode.js';
import { grouped } from '../mapping/header-notes.js';
import type { PlanEvent } from './plan.js';
import type { InputFormat } from '../input/source.js';
import { ARRAY_NAMES, type ArrayName } from '../model/types.js';

export interface FileSummary {
  file: string;
  format: InputFormat;
  /** The kind of a CSV file's rows. */
  kind?: ArrayName;
  rows: number;
  /** Its rows were all settled by an earlier run: counted, and not read again (only then). */
  unread?: true;
}

export interface PlanSummary {
  files: FileSummary[];
  /** Data rows read (CSV rows after the header; NDJSON lines that are not blank), and those of files not read again (`unread`). */
  rows: number;
  /** Of the rows, those of files an earlier run settled whole: counted as skipped, and not read again (only when there are any). */
  unread?: number;
  /** Rows left out because an earlier run settled them, or settled every item of them. */
  skipped: number;
  /** Items left out of RequestLines that still had others to send (lines an earlier run delivered in part). */
  skippedItems: number;
  /** Items planned into requests, by kind. */
  items: Record<ArrayName, number>;
  /** Valid items left out whole because the target acknowledged them already (--delta, --dedupe-events). */
  unchanged: number;
  /** Rows (and items of RequestLines) left out because their user is in another shard (--shard). */
  otherShards: number;
  /** The data points of the items planned, and of what was left out as unchanged (docs/upload.md "Data points"). */
  dataPoints: { planned: number; avoided: number };
  /** Rejected rows (lines of the rejects file); a RequestLine counts once per rejected item. */
  rejected: number;
  /** Rejected rows by reason (a row with several problems counts under each). */
  rejectReasons: Record<string, number>;
  warnings: number;
  /** Of the warnings, those on items left out as unchanged (--delta, --dedupe-events): on what was not sent. */
  warningsUnsent: number;
  /** Fields left out of rows sent without them (--drop-invalid-fields), each a line of the rejects file. */
  droppedFields: number;
  warningReasons: Record<string, number>;
  /** The first few warnings with their place, `file:line: message`. */
  warningExamples: string[];
  requests: number;
  /** Things a person should know about the files that are not rows (an empty file, an unused --map column). */
  notes: string[];
  /**
   * With --delta, per attribute: how many values were planned as changed, left out as unchanged, and
   * planned as null (cleared).
   */
  deltaColumns?: Record<string, { changed: number; unchanged: number; cleared: number }>;
}

const MAX_WARNING_EXAMPLES = 10;
const MAX_REASONS = 100;

export function emptyPlanSummary(): PlanSummary {
  return {
    files: [],
    rows: 0,
    skipped: 0,
    skippedItems: 0,
    items: { attributes: 0, events: 0, purchases: 0 },
    unchanged: 0,
    otherShards: 0,
    dataPoints: { planned: 0, avoided: 0 },
    rejected: 0,
    rejectReasons: {},
    warnings: 0,
    warningsUnsent: 0,
    droppedFields: 0,
    warningReasons: {},
    warningExamples: [],
    requests: 0,
    notes: [],
  };
}

/** The place a row's size was found too large, in its reason: every such row has its own size. */
const TOO_LARGE = /^row: the item is \d+ bytes as JSON; a request body may be at most (\d+) bytes$/;

/**
 * A number that cannot be held, as numberTextProblem names it (the number first, then what it would
 * become but for null and 0, which every such number becomes): `account_id: 12345678901234567890 is a
 * whole number beyond ...`. Read again, the reason is left as it is: its counts pass through here twice.
 */
const INEXACT_NUMBER =
  /(^|: )-?\.?\d[\d.eE+-]*(?:\.\.\.)? (is a whole number beyond ±\d+, which a number cannot tell from its neighbours|is too large for a number|is too small for a number|has more digits than a number holds)( \(it would become (?:null|0)\))?(?: \(it would become [^)]*\))?;/;
/** An element's place in an array, in the path of a value: `pets.$add[2]: must be an object`. */
const ELEMENT = /\[\d+\](?=[.[:])/g;

/**
 * A problem without the value or the place that caused it, so that rows refused for one reason count
 * together: `email: is not a valid email address` (not `, got "x"`); `Company: bytes not valid UTF-8`
 * (not the byte and its offset); `line: is not valid JSON` (not where the parser stopped);
 * `account_id: is a whole number beyond ...` (not the number); `pets.$add[*]: must be an object`
 * (not the element's index).
 */
export function reasonOf(problem: string): string {
  const undecodable = readUndecodableProblem(problem);
  if (undecodable !== undefined) return undecodable.reason;
  const got = problem.indexOf(', got ');
  const reason = (got === -1 ? problem : problem.slice(0, got)).replace(INEXACT_NUMBER, '$1$2$3;').replace(ELEMENT, '[*]');
  const json = reason.indexOf(' is not valid JSON (');
  if (json !== -1 && reason.endsWith(')')) return reason.slice(0, json + ' is not valid JSON'.length);
  return reason.replace(TOO_LARGE, 'row: the item is larger as JSON than a request body may be ($1 bytes)');
}

function count(reasons: Record<string, number>, problem: string): void {
  countReason(reasons, reasonOf(problem));
}

function countReason(reasons: Record<string, number>, reason: string, times = 1): void {
  if (reason in reasons || Object.keys(reasons).length < MAX_REASONS) reasons[reason] = (reasons[reason] ?? 0) + times;
  else reasons['(other reasons)'] = (reasons['(other reasons)'] ?? 0) + times;
}

/** Counts a rejected row under each of its reasons (once each). */
export function countReasons(reasons: Record<string, number>, errors: readonly string[]): void {
  if (errors.length === 1) return countReason(reasons, reasonOf(errors[0]));
  for (const reason of new Set(errors.map(reasonOf))) countReason(reasons, reason);
}

/**
 * One step of the fold: the summary so far with the event added. The summary is the caller's own
 * accumulator (as in Array#reduce), so a step adds to it in place rather than copy a hundred reasons
 * per rejected row.
 */
export function addPlanEvent(summary: PlanSummary, event: PlanEvent<unknown>): PlanSummary {
  switch (event.type) {
    case 'file':
      summary.files.push({ file: event.file, format: event.format, rows: 0 });
      break;
    case 'header': {
      const file = summary.files.findLast((f) => f.file === event.file);
      if (file !== undefined) file.kind = event.kind;
      for (const note of event.notes) addNote(summary, event.file, note);
      break;
    }
    case 'note':
      addNote(summary, event.file, event.note, event.files);
      break;
    case 'read': {
      const file = summary.files.findLast((f) => f.file === event.file);
      if (file !== undefined) file.rows += event.rows;
      summary.rows += event.rows;
      if (event.settledWhole === true && file !== undefined) file.unread = true;
      if (event.unread > 0) summary.unread = (summary.unread ?? 0) + event.unread;
      summary.skipped += event.skipped;
      summary.skippedItems += event.skippedItems;
      for (const kind of ARRAY_NAMES) summary.items[kind] += event.items[kind];
      summary.unchanged += event.unchanged;
      summary.otherShards += event.otherShards;
      summary.dataPoints.planned += event.points;
      summary.dataPoints.avoided += event.avoided;
      if (event.columns !== undefined) addColumns((summary.deltaColumns ??= {}), event.columns);
      for (const { line, row, message, unsent } of event.warnings) {
        summary.warnings += 1;
        if (unsent === true) summary.warningsUnsent += 1;
        count(summary.warningReasons, message);
        if (summary.warningExamples.length < MAX_WARNING_EXAMPLES) summary.warningExamples.push(`${event.file}:${line}${row === undefined ? '' : ` (row ${row})`}: ${message}`);
      }
      break;
    }
    case 'reject':
      summary.rejected += 1;
      countReasons(summary.rejectReasons, event.record.errors);
      break;
    case 'dropped-field':
      summary.droppedFields += 1;
      break;
    case 'rejects': {
      // reasons in the order each first came, as one reject at a time would add them
      const { batch } = event;
      summary.rejected += batch.rejected;
      summary.droppedFields += batch.ends.length - batch.rejected;
      for (const [reason, times] of batch.reasons) countReason(summary.rejectReasons, reason, times);
      break;
    }
    case 'request':
      summary.requests += 1;
      break;
    case 'line-items':
    case 'unchanged':
    case 'unchanged-rows':
    case 'read-all':
      break;
  }
  return summary;
}

/**
 * The notes of each summary being folded, by their text: a note on many files (a header's, an empty
 * file's) is one line naming the first few of them and how many others, not a line a file held to
 * the end of the run.
 */
const notesByText = new WeakMap<PlanSummary, Map<string, { at: number; named: string[]; last: string; files: number }>>();

/** Files a note names before it counts the others. */
const NAMED_FILES = 3;

function noteLine(named: readonly string[], files: number, note: string): string {
  const others = files - named.length;
  return `${named.join(', ')}${others === 0 ? '' : ` and ${grouped(others)} other ${others === 1 ? 'file' : 'files'}`}: ${note}`;
}

/** Adds a note on `file` (and the `files` - 1 after it that it speaks for). */
function addNote(summary: PlanSummary, file: string, note: string, files = 1): void {
  let known = notesByText.get(summary);
  if (known === undefined) notesByText.set(summary, (known = new Map()));
  const seen = known.get(note);
  if (seen === undefined) {
    known.set(note, { at: summary.notes.length, named: [file], last: file, files });
    summary.notes.push(noteLine([file], files, note));
    return;
  }
  // the same note twice on one file says nothing more
  if (seen.last === file && files === 1) return;
  seen.last = file;
  if (seen.named.length < NAMED_FILES && seen.named.length === seen.files) seen.named.push(file);
  seen.files += files;
  summary.notes[seen.at] = noteLine(seen.named, seen.files, note);
}

/** The summary of a whole plan. */
export function summarizePlan(events: Iterable<PlanEvent<unknown>>): PlanSummary {
  let summary = emptyPlanSummary();
  for (const event of events) summary = addPlanEvent(summary, event);
  return summary;
}

function addColumns(to: NonNullable<PlanSummary['deltaColumns']>, columns: Record<string, [number, number, number]>): void {
  for (const name in columns) {
    const [changed, unchanged, cleared] = columns[name];
    const counts = (to[name] ??= { changed: 0, unchanged: 0, cleared: 0 });
    counts.changed += changed;
    counts.unchanged += unchanged;
    counts.cleared += cleared;
  }
}
