// The resume journal on disk: which rows of which input files reached a final outcome, appended
// (and fsynced in small batches) as answers arrive, and read back by --resume to skip those rows.
import { fdatasyncSync, statSync, writeSync } from 'node:fs';
import { open, readFile, stat, truncate, type FileHandle } from 'node:fs/promises';
import { resolve } from 'node:path';
import { InputError } from '../errors.js';
import type { ArrayName } from '../model/types.js';
import type { ItemLines, ItemOrigin } from '../model/plan.js';
import { createRangeSet, type RangeSet } from './range-set.js';
import { fileLine, headerLine, itemsLine, parseJournal, rangesLine, type FileIdentity, type ParsedJournal } from './journal-format.js';

export type { FileIdentity } from './journal-format.js';

export interface JournalOptions {
  /** Where the journal lives. */
  path: string;
  /** The input files of this run, as the reader names them in ItemOrigin.file. */
  files: readonly string[];
  /** Read the journal of an earlier run and skip its rows; otherwise start a new journal. */
  resume: boolean;
  /** How often buffered acknowledgements are written and fsynced; default 200 ms. */
  flushIntervalMs?: number;
}

/** A request's items, by their origins or, when it has them, by their lines alone. */
export type SettledItems = { origins: Readonly<Record<ArrayName, readonly ItemOrigin[]>>; lines?: ItemLines };

export interface Journal {
  readonly path: string;
  /** True when an earlier run already settled this row (resume); the reader skips it. */
  skipRow(file: string, line: number): boolean;
  /** How many rows of this file earlier runs settled. */
  settledBefore(file: string): number;
  /** The rows of this file earlier runs settled, as [first, last] line ranges (what skipRow skips). */
  settledRanges(file: string): Array<[number, number]>;
  /** Marks every row behind a request's items as settled. */
  record(request: SettledItems): void;
  /** Marks rows as settled (for example rows the uploader rejected before sending). */
  recordRows(file: string, lines: Iterable<number>): void;
  /** Marks one item of a line of several as settled, before the whole line is. */
  recordItem(file: string, line: number, item: number): void;
  /** Per line of this file that an earlier run settled in part: the places of its settled items. */
  settledItems(file: string): ReadonlyMap<number, ReadonlySet<number>>;
  /** Writes and fsyncs what is buffered. */
  flush(): Promise<void>;
  /** The same, synchronously: for a handler that must exit at once (a second Ctrl-C). */
  flushSync(): void;
  close(): Promise<void>;
}

const DEFAULT_FLUSH_INTERVAL_MS = 200;

export async function identifyFile(file: string): Promise<FileIdentity> {
  const path = resolve(file);
  try {
    const info = await stat(path);
    return { path, size: info.size, mtimeMs: info.mtimeMs };
  } catch (error) {
    throw new InputError(`cannot read it: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, file);
  }
}

function identifyFileSync(file: string): FileIdentity {
  const path = resolve(file);
  const info = statSync(path);
  return { path, size: info.size, mtimeMs: info.mtimeMs };
}

function changedMessage(journalPath: string, was: FileIdentity, now: FileIdentity): string {
  const parts: string[] = [];
  if (was.size !== now.size) parts.push(`size ${was.size} -> ${now.size} bytes`);
  if (was.mtimeMs !== now.mtimeMs) {
    parts.push(`modified ${new Date(was.mtimeMs).toISOString()} -> ${new Date(now.mtimeMs).toISOString()}`);
  }
  return (
    `changed since the journal ${journalPath} was written (${parts.join(', ')}), so its line numbers ` +
    'may name other rows; restore the file, or upload it again without --resume'
  );
}

function checkUnchanged(journalPath: string, file: string, was: FileIdentity, now: FileIdentity): void {
  if (was.size !== now.size || was.mtimeMs !== now.mtimeMs) throw new InputError(changedMessage(journalPath, was, now), file);
}

/** Reads a journal without opening it for writing (to inspect it, or to test it). */
export async function readJournal(path: string): Promise<ParsedJournal> {
  return parseJournal(await readFile(path), path);
}

async function readForResume(path: string): Promise<ParsedJournal> {
  try {
    return await readJournal(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new InputError('there is no journal to resume from here; check --journal, or start without --resume', path);
    }
    throw error;
  }
}

export async function openJournal(options: JournalOptions): Promise<Journal> {
  const journalPath = resolve(options.path);
  const identities = await Promise.all(options.files.map((f) => identifyFile(f)));
  if (identities.some((identity) => identity.path === journalPath)) {
    throw new InputError('is an input file; the journal needs a path of its own (--journal)', options.path);
  }
  const previous = options.resume
    ? await readForResume(journalPath)
    : { files: [], validBytes: 0, tornTail: false, missingNewline: false };

  /** Absolute path -> file index in this journal, and the rows earlier runs settled. */
  const indexes = new Map<string, number>();
  const settledEarlier = new Map<string, RangeSet>();
  const itemsEarlier = new Map<string, Map<number, Set<number>>>();
  let nextIndex = 0;
  for (const f of previous.files) {
    indexes.set(f.identity.path, f.index);
    settledEarlier.set(f.identity.path, f.settled);
    itemsEarlier.set(f.identity.path, f.settledItems);
    nextIndex = Math.max(nextIndex, f.index + 1);
  }
  const known = new Map(previous.files.map((f) => [f.identity.path, f.identity]));
  options.files.forEach((file, i) => {
    const was = known.get(identities[i].path);
    if (was !== undefined) checkUnchanged(journalPath, file, was, identities[i]);
  });

  let head = '';
  let handle: FileHandle;
  if (options.resume) {
    if (previous.tornTail) await truncate(journalPath, previous.validBytes);
    handle = await open(journalPath, 'a');
    if (previous.validBytes === 0) head += headerLine(); // killed before its first line was whole
    else if (previous.missingNewline) head += '\n';
  } else {
    handle = await open(journalPath, 'w');
    head += headerLine();
  }
  for (const identity of identities) {
    if (indexes.has(identity.path)) continue;
    indexes.set(identity.path, nextIndex);
    head += fileLine(nextIndex, identity);
    nextIndex += 1;
  }
  if (head !== '') {
    await handle.write(head);
    await handle.datasync();
  }

  const fd = handle.fd;
  const flushEvery = options.flushIntervalMs ?? DEFAULT_FLUSH_INTERVAL_MS;
  /** ItemOrigin.file text -> absolute path; resolving once per distinct name. */
  const resolved = new Map<string, string>();
  let pending = new Map<number, RangeSet>();
  /** Items settled on their own and not written yet: file index -> line -> places. */
  let pendingItems = new Map<number, Map<number, number[]>>();
  let pendingHead = '';
  let timer: NodeJS.Timeout | undefined;
  let chain: Promise<void> = Promise.resolve();
  let failure: Error | undefined;
  let closed = false;

  const absolute = (file: string): string => {
    let abs = resolved.get(file);
    if (abs === undefined) {
      abs = resolve(file);
      resolved.set(file, abs);
    }
    return abs;
  };

  /** The journal index of a file; a file first seen here is identified now. */
  const fileIndex = (file: string): number => {
    const abs = absolute(file);
    let index = indexes.get(abs);
    if (index === undefined) {
      const identity = identifyFileSync(abs);
      const was = known.get(abs);
      if (was !== undefined) checkUnchanged(journalPath, file, was, identity);
      index = nextIndex;
      nextIndex += 1;
      indexes.set(abs, index);
      pendingHead += fileLine(index, identity);
    }
    return index;
  };

  const take = (): string => {
    let text = pendingHead;
    for (const [index, lines] of pendingItems) {
      const items: Array<[number, number]> = [];
      for (const [line, places] of lines) for (const place of places) items.push([line, place]);
      if (items.length > 0) text += itemsLine(index, items);
    }
    for (const [index, set] of pending) text += rangesLine(index, set.ranges());
    pending = new Map();
    pendingItems = new Map();
    pendingHead = '';
    return text;
  };

  const writeOut = async (): Promise<void> => {
    const text = take();
    if (text === '') return;
    await handle.write(text);
    await handle.datasync();
  };

  const flush = (): Promise<void> => {
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    chain = chain.then(writeOut).catch((error: unknown) => {
      failure ??= error instanceof Error ? error : new Error(String(error));
    });
    return chain.then(() => {
      if (failure !== undefined) throw failure;
    });
  };

  const mark = (file: string, line: number): void => {
    const index = fileIndex(file);
    let set = pending.get(index);
    if (set === undefined) {
      set = createRangeSet();
      pending.set(index, set);
    }
    set.add(line);
    // the whole line settled before its items were written: they need no entries of their own
    if (pendingItems.size > 0) pendingItems.get(index)?.delete(line);
  };

  const scheduled = (): void => {
    if (failure !== undefined) throw failure;
    if (closed) throw new Error('the journal is closed');
    if (timer === undefined) {
      timer = setTimeout(() => {
        timer = undefined;
        void flush().catch(() => undefined);
      }, flushEvery);
      timer.unref();
    }
  };

  const skipCache = new Map<string, RangeSet | null>();
  const earlierFor = (file: string): RangeSet | null => {
    let set = skipCache.get(file);
    if (set === undefined) {
      set = settledEarlier.get(absolute(file)) ?? null;
      skipCache.set(file, set);
    }
    return set;
  };

  return {
    path: journalPath,
    skipRow: (file, line) => earlierFor(file)?.has(line) ?? false,
    settledBefore: (file) => earlierFor(file)?.size ?? 0,
    settledRanges: (file) => earlierFor(file)?.ranges() ?? [],
    record(request) {
      scheduled();
      const lines = request.lines;
      if (lines !== undefined) {
        for (let i = 0; i < lines.lines.length; i += 1) mark(lines.files[lines.fileOf[i]], lines.lines[i]);
        return;
      }
      // not destructured: origins may be built on demand, and are not needed when there are lines
      const origins = request.origins;
      for (const o of origins.attributes) mark(o.file, o.line);
      for (const o of origins.events) mark(o.file, o.line);
      for (const o of origins.purchases) mark(o.file, o.line);
    },
    recordRows(file, lines) {
      scheduled();
      for (const line of lines) mark(file, line);
    },
    recordItem(file, line, item) {
      scheduled();
      const index = fileIndex(file);
      let lines = pendingItems.get(index);
      if (lines === undefined) pendingItems.set(index, (lines = new Map()));
      const places = lines.get(line);
      if (places === undefined) lines.set(line, [item]);
      else places.push(item);
    },
    settledItems: (file) => itemsEarlier.get(absolute(file)) ?? new Map(),
    flush,
    flushSync() {
      if (closed) return;
      const text = take();
      if (text === '') return;
      writeSync(fd, text);
      fdatasyncSync(fd);
    },
    async close() {
      if (closed) return;
      await flush().finally(async () => {
        closed = true;
        await handle.close();
      });
    },
  };
}
