// The resume journal on disk: which rows of which input files were sent to which target, and which
// reached a final outcome. A request's rows are written as sent before it is posted, straight to the
// operating system (a write, no fsync: that survives the process being killed, and costs a few
// microseconds), so after any stop of the process, kill -9 included, a resume knows which rows may
// have reached the server. Settled rows are appended every 200 ms, each time after the rejects file
// is synced (the rejects it could not take are carried here instead), and everything written is then
// fsynced, so a machine that loses power loses at most that much of the journal. A run that stops on a
// usage error before anything was sent leaves the journal as it was (revert). Reading an earlier
// run's journal is in journal-read.ts. At about 640 lines this is one class with a lifetime whose
// methods share its buffers and open file; split further, each part would reach into the others' state.
import { rmSync, writeSync, type Stats } from 'node:fs';
import { copyFile, link, lstat, open, readdir, rename, rm, truncate, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { InputError, OutputError } from '../errors.js';
import { canonicalPath } from '../lock-file.js';
import { asideOf } from './journal-lock.js';
import { forEachRow, type SettledRequest } from '../transport/request.js';
import { createRangeSet, type RangeSet } from './range-set.js';
import { changedMessage, doubtToCarry, identifyFile, identifyFileSync, inputKey, readEarlierRuns, sameIdentity, type EarlierRuns, type RemoteIdentities } from './journal-read.js';
import {
  againLine,
  endLine,
  fileLine,
  headerLine,
  itemsLine,
  owedLine,
  rangesLine,
  rowsLine,
  sentLine,
  unsentLine,
} from './journal-format.js';

import type { FileIdentity } from './journal-format.js';

export type { FileIdentity, ParsedJournal } from './journal-format.js';
export { findJournal, identifyFile, inputKey, isWhole, readJournal, rowsInDoubt, sameIdentity, touchedFiles } from './journal-read.js';

export interface JournalOptions {
  /** Where the journal lives. */
  path: string;
  /** The input files of this run, as the reader names them in ItemOrigin.file. */
  files: readonly string[];
  /** Where the rows go (the endpoint URL): a journal holds one target's run. */
  target: string;
  /** What the run's delta state remembers of what it sends (`attributes`, `activities`), said in the header. */
  remembers?: readonly string[];
  /** The fingerprint of the run's API key (keyFingerprint), said in the header: a run under another key does not resume it (rerun.ts). */
  key?: string;
  /** The shard whose rows the run sends (`K/N`), said in the header: another shard's run does not resume it (rerun.ts). */
  shard?: string;
  /** Read the journal of an earlier run and skip its rows; otherwise start a new journal. */
  resume: boolean;
  /** A new journal replaces one of the same upload (--restart): the rows it left in doubt stay in doubt, and are counted when sent again. */
  restart?: boolean;
  /** The inputs that are objects in storage, by URL: their size and ETag, as listed. */
  remote?: RemoteIdentities;
  /** How often buffered acknowledgements are written and fsynced; default 200 ms. */
  flushIntervalMs?: number;
  /**
   * Runs before each write that records rows as settled: whatever those rows need on disk first
   * (their lines in the rejects file) must be made durable here; what cannot be (the rejects file is
   * full) is returned, and the journal carries it (`owed`) with the rows it settles.
   */
  beforeSettling?: () => Promise<unknown[] | undefined | void>;
}

/** What a resumed run leaves out of its plan, as one cloneable value (it crosses to the planning thread). */
export interface ResumeSkips {
  /** Per input file, the rows earlier runs settled, as [first, last] line ranges. */
  rows: ReadonlyMap<string, Array<[number, number]>>;
  /** Per input file, the RequestLines earlier runs settled in part: line -> the places of its settled items. */
  items: ReadonlyMap<string, ReadonlyMap<number, ReadonlySet<number>>>;
  /** Per input file, rows an earlier run sent and never saw settled, to reject unsent (--on-unknown reject). */
  inDoubt?: ReadonlyMap<string, Array<[number, number]>>;
  /** The input files earlier runs read to their end and settled every row of, with their rows: not read again. */
  whole?: ReadonlyMap<string, number>;
}

export interface Journal {
  readonly path: string;
  /** What the plan of a resumed run leaves out; with `rejectInDoubt`, also the rows to reject unsent. */
  skips(files: readonly string[], rejectInDoubt: boolean): ResumeSkips;
  /** True when an earlier run already settled this row (resume); the reader skips it. */
  skipRow(file: string, line: number): boolean;
  /** How many rows of this file earlier runs settled. */
  settledBefore(file: string): number;
  /** The rows of this file earlier runs settled, as [first, last] line ranges (what skipRow skips). */
  settledRanges(file: string): Array<[number, number]>;
  /** Per line of this file that an earlier run settled in part: the places of its settled items. */
  settledItems(file: string): ReadonlyMap<number, ReadonlySet<number>>;
  /** Rows an earlier run sent and never saw settled: they may have reached the server. */
  inDoubtRanges(file: string): Array<[number, number]>;
  /** How many rows earlier runs left in doubt, across the files. */
  readonly inDoubt: number;
  /**
   * How many distinct rows of this request an earlier run left in doubt (sending them again may
   * duplicate them); with `into`, only those not in it yet, which are added to it (`file\u0000line`).
   */
  inDoubtRows(request: SettledRequest, into?: Set<string>): number;
  /** Records the request's rows as sent (written to the OS before it resolves), so the request may be posted. */
  sending(request: SettledRequest): Promise<void>;
  /** The request recorded as sent never left, or was refused unapplied: its rows are no longer in doubt. */
  notApplied(request: SettledRequest): void;
  /** Records that a file was read to its end and holds `rows` rows (once all are settled, a resumed run does not read it again). */
  readToEnd(file: string, rows: number): void;
  /** Records rows sent again although they may have been applied (counted as possibly duplicated), for a run that reports them. */
  sentAgain(rows: number): void;
  /** Rows earlier runs sent again and never reported (they were killed before their summary): this run reports them. */
  readonly unreported: number;
  /** Rejects the journal carries for earlier runs, which their rejects file could not take. */
  readonly owed: readonly unknown[];
  /** Marks every row behind a request's items as settled. */
  record(request: SettledRequest): void;
  /** Marks rows as settled (for example rows the uploader rejected before sending). */
  recordRows(file: string, lines: Iterable<number>): void;
  /** Marks rows of whole lines as settled, as [first, last] line ranges (rows the target held already). */
  recordRanges(file: string, ranges: ReadonlyArray<readonly [number, number]>): void;
  /** Marks one item of a RequestLine as settled, before the whole line is. */
  recordItem(file: string, line: number, item: number): void;
  /** Writes and fsyncs what is buffered. */
  flush(): Promise<void>;
  /** Flushes, records how the run ended (and how many rows each file read to its end holds), and closes. */
  close(end?: { complete: boolean; rowsRead?: ReadonlyMap<string, number> }): Promise<void>;
  /**
   * Closes, leaving the journal as it was before this run: for a run that stopped on a usage error
   * before anything was sent. A new journal is not put in place (an earlier run's stays), a resumed
   * one is cut back to its length before. Once a row was recorded as sent, the journal stays.
   */
  revert(): Promise<void>;
}

const DEFAULT_FLUSH_INTERVAL_MS = 200;

/** Writes all of text: a short write (a disk filling up) is carried on until it fails. */
function writeAllSync(fd: number, text: string): void {
  const bytes = Buffer.from(text);
  let at = 0;
  while (at < bytes.length) {
    const written = writeSync(fd, bytes, at, bytes.length - at);
    if (written === 0) throw new Error('nothing could be written');
    at += written;
  }
}

function asOutputError(error: unknown, path: string): Error {
  if (error instanceof OutputError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new OutputError(`cannot write the journal ${path}: ${message}`, path);
}

/**
 * Keeps the journal of the run before aside (a regular file only), as a second name of the same file
 * (or a copy): what a run that changes nothing puts back. The journal stays where it is until the new one, its head
 * written beside it (partialOf), replaces it (startFile): a kill at any moment leaves one or the other
 * there, never none. Gives what it found: 'aside' with the journal's mode and owner, for the new one.
 */
async function keepAside(path: string, aside: string): Promise<{ before: 'aside' | 'none' | 'written-over'; was?: Stats }> {
  const found = await lstat(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (found !== undefined && !found.isFile()) return { before: 'written-over' };
  // one a killed run left there is of no use now (nor beside a journal a person deleted)
  await removeFile(aside);
  if (found === undefined) return { before: 'none' };
  // a journal of another owner is copied (a link would be theirs, which a folder that lets only
  // owners remove their files would keep); so is one on a file system that makes no hard links
  const own = process.getuid === undefined || found.uid === process.getuid();
  const linked = own && (await link(path, aside).then(() => true, () => false));
  if (!linked) await copyFile(path, aside);
  return { before: 'aside', was: found };
}

/** Removes a file, when there is one. */
async function removeFile(path: string): Promise<void> {
  await unlink(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
}

/** Removes what killed runs left beside the journal as they wrote a new one (partialOf): a name of a process's no longer running (the journal's lock is held). */
async function removePartials(journalPath: string): Promise<void> {
  const name = basename(journalPath);
  const left = await readdir(dirname(journalPath)).catch(() => [] as string[]);
  for (const entry of left) {
    if (entry.startsWith(`${name}.`) && /^\.\d+\.partial$/.test(entry.slice(name.length))) await removeFile(join(dirname(journalPath), entry)).catch(() => undefined);
  }
}

/** Where a new journal's head is written before it replaces the journal before: a name of this process's, as --summary-file's. */
const partialOf = (journalPath: string): string => `${journalPath}.${process.pid}.partial`;

/** The new journal, its head written, put in place of the one before with its mode and owner (the owner where this process may give it), for good (its folder synced). */
async function replaceJournal(handle: FileHandle, journalPath: string, was: Stats): Promise<void> {
  await handle.chmod(was.mode & 0o7777);
  await handle.chown(was.uid, was.gid).catch(() => undefined);
  await rename(partialOf(journalPath), journalPath);
  const folder = await open(dirname(journalPath), 'r').catch(() => undefined);
  await folder?.sync().catch(() => undefined);
  await folder?.close().catch(() => undefined);
}

export async function openJournal(options: JournalOptions): Promise<Journal> {
  const journalPath = resolve(options.path);
  const identities = await Promise.all(options.files.map((f) => identifyFile(f, options.remote)));
  if (identities.some((identity) => identity.path === canonicalPath(journalPath))) {
    throw new InputError('is an input file; the journal needs a path of its own (--journal)', options.path);
  }
  const earlier = await readEarlierRuns(options, journalPath, identities);
  const carried = options.restart === true && !options.resume ? await doubtToCarry(journalPath, options.target, identities) : undefined;
  const opened = await startFile(options, journalPath, earlier, identities, carried);
  return new RunJournal(options, journalPath, earlier, opened);
}

/** The journal's file as this run opened it, and what its head said beyond the earlier runs'. */
interface OpenedFile {
  handle: FileHandle;
  /** The journal of the run before: kept aside (see RunJournal.revert; for a resumed run, one a killed run left aside), none, or another kind of file (a link) written through as ever, which cannot be put back. */
  before: 'aside' | 'none' | 'written-over' | undefined;
  /** A resumed journal's length before this run. */
  lengthBefore: number;
  /** Rows left in doubt, with those a restart carries. */
  inDoubt: number;
  /** Rows sent again and never reported, with those a restart carries. */
  unreported: number;
  /** The index the next file new to the journal gets. */
  nextIndex: number;
}

/** Opens the journal (appending to a resumed one; a new one after keeping the one before aside) and writes its head, synced. */
async function startFile(
  options: JournalOptions,
  journalPath: string,
  earlier: EarlierRuns,
  identities: readonly FileIdentity[],
  carried: Awaited<ReturnType<typeof doubtToCarry>> | undefined,
): Promise<OpenedFile> {
  const { previous, indexes, doubtEarlier, renewed } = earlier;
  let { inDoubt, firstNewIndex: nextIndex } = earlier;
  let unreported = previous.unreported;
  let head = '';
  let handle: FileHandle | undefined;
  let before: OpenedFile['before'];
  /** The journal before, kept aside, which the new one replaces once its head is written. */
  let was: Stats | undefined;
  let lengthBefore = 0;
  try {
    await removePartials(journalPath);
    if (options.resume) {
      if (previous.tornTail) await truncate(journalPath, previous.validBytes);
      handle = await open(journalPath, 'a');
      lengthBefore = (await handle.stat()).size;
      // a journal kept aside by a run killed before its first send is of no use once this run sends
      // or closes: let go then (RunJournal.#letGoAside), left as it is by a revert
      if ((await lstat(asideOf(journalPath)).catch(() => undefined))?.isFile() === true) before = 'aside';
      if (previous.missingNewline) head += '\n';
      // a journal of an earlier version names no API key, nor its shard: this run's are said now (a
      // header again, as every version reads one), so that a run under another key, or of another
      // shard, does not resume it after this one
      if ((options.key !== undefined && previous.key === undefined) || previous.shard === undefined) {
        head += headerLine(previous.target ?? options.target, previous.remembers, previous.key ?? options.key, options.shard ?? null);
      }
    } else {
      ({ before, was } = await keepAside(journalPath, asideOf(journalPath)));
      // over a journal kept aside, the new one is written beside it (a file of its own, made here: what
      // killed runs left was removed above) and replaces it once its head is written
      handle = await open(was === undefined ? journalPath : partialOf(journalPath), was === undefined ? 'w' : 'wx');
      head += headerLine(options.target, options.remembers, options.key, options.shard ?? null);
    }
    for (const [index, identity] of renewed) head += fileLine(index, identity);
    for (const identity of identities) {
      if (indexes.has(identity.path)) continue;
      indexes.set(identity.path, nextIndex);
      head += fileLine(nextIndex, identity);
      nextIndex += 1;
    }
    // a restart keeps in doubt what the run it replaces left so, and reports what it never did
    for (const [path, rows] of carried?.doubt ?? []) {
      doubtEarlier.set(path, rows);
      inDoubt += rows.size;
      head += sentLine(indexes.get(path)!, rows.ranges());
    }
    if (carried !== undefined && carried.unreported > 0) {
      unreported = carried.unreported;
      head += againLine(unreported);
    }
    writeAllSync(handle.fd, head);
    await handle.datasync();
    if (was !== undefined) await replaceJournal(handle, journalPath, was);
  } catch (error) {
    // (a head that could not be written, a full disk: the file is let go, and the journal before stays)
    await handle?.close().catch(() => undefined);
    if (was !== undefined) {
      // (what could not be removed is left: the error that stopped the run is the one told)
      await removeFile(partialOf(journalPath)).catch(() => undefined);
      await removeFile(asideOf(journalPath)).catch(() => undefined);
    }
    throw asOutputError(error, journalPath);
  }
  return { handle: handle!, before, lengthBefore, inDoubt, unreported, nextIndex };
}

/**
 * The journal of a run, open: rows recorded as sent are written at once, settled ones buffered and
 * written with a sync by the timer (flush), one flush at a time.
 */
class RunJournal implements Journal {
  readonly path: string;
  readonly unreported: number;
  readonly owed: readonly unknown[];
  readonly #options: JournalOptions;
  readonly #handle: FileHandle;
  readonly #fd: number;
  readonly #flushEvery: number;
  readonly #earlier: EarlierRuns;
  #inDoubt: number;
  #nextIndex: number;
  #before: OpenedFile['before'];
  readonly #lengthBefore: number;
  /** A row was recorded as sent: the journal stays, whatever ends the run. */
  #sentAny = false;
  /** ItemOrigin.file text -> absolute path; resolving once per distinct name. */
  readonly #resolved = new Map<string, string>();
  #pending = new Map<number, RangeSet>();
  /** Items settled on their own and not written yet: file index -> line -> places. */
  #pendingItems = new Map<number, Map<number, number[]>>();
  #timer: NodeJS.Timeout | undefined;
  #failure: Error | undefined;
  #closed = false;
  /** One flush at a time, in order. */
  #chain: Promise<void> = Promise.resolve();
  readonly #skipCache = new Map<string, RangeSet | null>();

  constructor(options: JournalOptions, journalPath: string, earlier: EarlierRuns, opened: OpenedFile) {
    this.path = journalPath;
    this.#options = options;
    this.#earlier = earlier;
    this.#handle = opened.handle;
    this.#fd = opened.handle.fd;
    this.#before = opened.before;
    this.#lengthBefore = opened.lengthBefore;
    this.#inDoubt = opened.inDoubt;
    this.#nextIndex = opened.nextIndex;
    this.unreported = opened.unreported;
    this.owed = earlier.previous.owed;
    this.#flushEvery = options.flushIntervalMs ?? DEFAULT_FLUSH_INTERVAL_MS;
  }

  /** The journal of the run before, kept aside, is let go: this run's journal stays. */
  #letGoAside(): void {
    if (this.#before !== 'aside') return;
    this.#before = 'written-over';
    rmSync(asideOf(this.path), { force: true });
  }

  /**
   * Hands text to the operating system at once (a write, no fsync): what is written here survives
   * the process being killed, whatever happens to it next. The timer's flush syncs it to the disk.
   */
  #writeNow(text: string): void {
    if (this.#failure !== undefined) throw this.#failure;
    try {
      writeAllSync(this.#fd, text);
    } catch (error) {
      this.#failure = asOutputError(error, this.path);
      throw this.#failure;
    }
  }

  #absolute(file: string): string {
    let abs = this.#resolved.get(file);
    if (abs === undefined) {
      abs = inputKey(file);
      this.#resolved.set(file, abs);
    }
    return abs;
  }

  /** The journal index of a file; a file first seen here is identified now, and written before any entry names it. */
  #fileIndex(file: string): number {
    const abs = this.#absolute(file);
    const { indexes, known } = this.#earlier;
    let index = indexes.get(abs);
    if (index === undefined) {
      const identity = identifyFileSync(abs, this.#options.remote);
      const was = known.get(abs);
      if (was !== undefined && !sameIdentity(was, identity)) throw new InputError(changedMessage(this.path, was, identity), file);
      index = this.#nextIndex;
      this.#nextIndex += 1;
      indexes.set(abs, index);
      this.#writeNow(fileLine(index, identity));
    }
    return index;
  }

  /** The settled entries buffered, as text. */
  #take(): string {
    let text = '';
    for (const [index, lines] of this.#pendingItems) {
      const items: Array<[number, number]> = [];
      for (const [line, places] of lines) for (const place of places) items.push([line, place]);
      if (items.length > 0) text += itemsLine(index, items);
    }
    for (const [index, set] of this.#pending) text += rangesLine(index, set.ranges());
    this.#pending = new Map();
    this.#pendingItems = new Map();
    return text;
  }

  /** Writes the settled entries (after what they need on disk first) and syncs everything written so far. */
  async #writeOut(): Promise<void> {
    let text = this.#take();
    // the rows settled here include rejected ones: their reject lines must be on disk before they
    // count as settled, or else be here, before them
    if (text !== '') {
      const owed = await this.#options.beforeSettling?.();
      if (owed !== undefined) text = owed.map(owedLine).join('') + text;
      this.#writeNow(text);
    }
    try {
      await this.#handle.datasync();
    } catch (error) {
      this.#failure ??= asOutputError(error, this.path);
      throw this.#failure;
    }
  }

  flush(): Promise<void> {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    const run = this.#chain.then(() => {
      if (this.#failure !== undefined) throw this.#failure;
      return this.#writeOut();
    });
    this.#chain = run.catch((error: unknown) => {
      this.#failure ??= error instanceof Error ? error : new Error(String(error));
    });
    return run;
  }

  /**
   * Entries naming a request's rows (`sent`, `unsent`): runs of consecutive lines per file, found in
   * one pass with no set (the runs may overlap or come out of order: the reader merges them).
   */
  #runsText(request: SettledRequest, entry: (index: number, ranges: Array<[number, number]>) => string): string {
    const runs = new Map<number, Array<[number, number]>>();
    let index = -1;
    let current: [number, number] | undefined;
    let lastFile: string | undefined;
    forEachRow(request, (file, line) => {
      if (file !== lastFile) {
        lastFile = file;
        index = this.#fileIndex(file);
        current = undefined;
      }
      if (current !== undefined && (line === current[1] || line === current[1] + 1)) {
        current[1] = line;
        return;
      }
      current = [line, line];
      const list = runs.get(index);
      if (list === undefined) runs.set(index, [current]);
      else list.push(current);
    });
    let text = '';
    for (const [file, list] of runs) text += entry(file, list);
    return text;
  }

  /** Marks a row settled, to be written by the next flush. */
  readonly #mark = (file: string, line: number): void => {
    const index = this.#fileIndex(file);
    addTo(this.#pending, index, line);
    // the whole line settled before its items were written: they need no entries of their own
    if (this.#pendingItems.size > 0) this.#pendingItems.get(index)?.delete(line);
  };

  /** Something settled waits to be written: the timer's flush writes it. */
  #scheduled(): void {
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#closed) throw new Error('the journal is closed');
    if (this.#timer === undefined) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        void this.flush().catch(() => undefined);
      }, this.#flushEvery);
      this.#timer.unref();
    }
  }

  #earlierFor(file: string): RangeSet | null {
    let set = this.#skipCache.get(file);
    if (set === undefined) {
      set = this.#earlier.settledEarlier.get(this.#absolute(file)) ?? null;
      this.#skipCache.set(file, set);
    }
    return set;
  }

  skips(files: readonly string[], rejectInDoubt: boolean): ResumeSkips {
    const wholeEarlier = this.#earlier.wholeEarlier;
    const rows = perFile(files, (file) => this.settledRanges(file));
    const items = perFile(files, (file) => this.settledItems(file));
    const whole = new Map(files.flatMap((file) => (wholeEarlier.has(this.#absolute(file)) ? [[file, wholeEarlier.get(this.#absolute(file))!] as const] : [])));
    const skips: ResumeSkips = { rows, items, ...(whole.size > 0 ? { whole } : {}) };
    return !rejectInDoubt || this.#inDoubt === 0 ? skips : { ...skips, inDoubt: perFile(files, (file) => this.inDoubtRanges(file)) };
  }

  skipRow(file: string, line: number): boolean {
    return this.#earlierFor(file)?.has(line) ?? false;
  }

  settledBefore(file: string): number {
    return this.#earlierFor(file)?.size ?? 0;
  }

  settledRanges(file: string): Array<[number, number]> {
    return this.#earlierFor(file)?.ranges() ?? [];
  }

  settledItems(file: string): ReadonlyMap<number, ReadonlySet<number>> {
    return this.#earlier.itemsEarlier.get(this.#absolute(file)) ?? new Map();
  }

  inDoubtRanges(file: string): Array<[number, number]> {
    return this.#earlier.doubtEarlier.get(this.#absolute(file))?.ranges() ?? [];
  }

  get inDoubt(): number {
    return this.#inDoubt;
  }

  inDoubtRows(request: SettledRequest, into = new Set<string>()): number {
    if (this.#inDoubt === 0) return 0;
    const doubtEarlier = this.#earlier.doubtEarlier;
    let rows = 0;
    forEachRow(request, (file, line) => {
      const key = `${file}\u0000${line}`;
      if (!into.has(key) && (doubtEarlier.get(this.#absolute(file))?.has(line) ?? false)) {
        into.add(key);
        rows += 1;
      }
    });
    return rows;
  }

  sending(request: SettledRequest): Promise<void> {
    try {
      if (this.#closed) throw new Error('the journal is closed');
      // from the first row sent on, a stop of any kind leaves this run's journal
      if (!this.#sentAny) this.#letGoAside();
      this.#sentAny = true;
      // rows an earlier run left in doubt, sent again: if this run is killed, the next reports them
      const again = this.inDoubtRows(request);
      this.#writeNow(this.#runsText(request, sentLine) + (again > 0 ? againLine(again) : ''));
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  notApplied(request: SettledRequest): void {
    this.#writeNow(this.#runsText(request, unsentLine));
  }

  readToEnd(file: string, rows: number): void {
    this.#writeNow(rowsLine(this.#fileIndex(file), rows));
  }

  sentAgain(rows: number): void {
    if (rows > 0) this.#writeNow(againLine(rows));
  }

  record(request: SettledRequest): void {
    this.#scheduled();
    forEachRow(request, this.#mark);
  }

  recordRows(file: string, lines: Iterable<number>): void {
    this.#scheduled();
    for (const line of lines) this.#mark(file, line);
  }

  recordRanges(file: string, ranges: ReadonlyArray<readonly [number, number]>): void {
    this.#scheduled();
    const index = this.#fileIndex(file);
    for (const [first, last] of ranges) addTo(this.#pending, index, first, last);
  }

  recordItem(file: string, line: number, item: number): void {
    this.#scheduled();
    const index = this.#fileIndex(file);
    let lines = this.#pendingItems.get(index);
    if (lines === undefined) this.#pendingItems.set(index, (lines = new Map()));
    const places = lines.get(line);
    if (places === undefined) lines.set(line, [item]);
    else places.push(item);
  }

  async close(end?: { complete: boolean; rowsRead?: ReadonlyMap<string, number> }): Promise<void> {
    if (this.#closed) return;
    try {
      await this.flush();
      if (end !== undefined && this.#failure === undefined) {
        const rows = [...(end.rowsRead ?? [])].map(([file, count]) => rowsLine(this.#fileIndex(file), count));
        this.#writeNow(rows.join('') + endLine({ at: new Date().toISOString(), complete: end.complete }));
        await this.#handle.datasync().catch((error: unknown) => {
          throw asOutputError(error, this.path);
        });
      }
    } finally {
      // closed, this run's journal stays, whatever it holds
      this.#letGoAside();
      this.#closed = true;
      if (this.#timer !== undefined) clearTimeout(this.#timer);
      await this.#handle.close().catch(() => undefined);
    }
  }

  async revert(): Promise<void> {
    if (this.#closed) return;
    if (this.#sentAny) return this.close({ complete: false });
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    await this.#chain;
    await this.#handle.close().catch(() => undefined);
    if (this.#options.resume) await truncate(this.path, this.#lengthBefore);
    else if (this.#before === 'aside') await rename(asideOf(this.path), this.path);
    else if (this.#before === 'none') await rm(this.path, { force: true });
  }
}

function addTo(sets: Map<number, RangeSet>, index: number, line: number, last = line): void {
  let set = sets.get(index);
  if (set === undefined) {
    set = createRangeSet();
    sets.set(index, set);
  }
  set.add(line, last);
}

const perFile = <T>(files: readonly string[], of: (file: string) => T): Map<string, T> => new Map(files.map((file) => [file, of(file)]));
