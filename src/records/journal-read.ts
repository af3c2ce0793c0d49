// Reading a journal: an earlier run's, to resume it or to tell what it holds, and the identity of
// the input files it names (a file changed since its rows were recorded cannot be resumed).
import { createReadStream, statSync } from 'node:fs';
import { open, readFile, stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { InputError } from '../errors.js';
import { canonicalPath } from '../lock-file.js';
import { parseJournal, type FileIdentity, type JournalFile, type ParsedJournal } from './journal-format.js';
import type { JournalOptions } from './journal.js';
import { difference, type RangeSet } from './range-set.js';

/** What an object in storage is known by: its size and ETag (from its listing). */
export type RemoteIdentities = Readonly<Record<string, { size: number; etag: string }>>;

const isUrl = (file: string): boolean => /^(s3|https?):\/\//i.test(file);

/**
 * A journal names a local file by its absolute path with symbolic links resolved (a link to a file
 * sent is that file), an object in storage by its URL.
 */
export const inputKey = (file: string): string => (isUrl(file) ? file : canonicalPath(file));

const remoteIdentity = (file: string, remote: RemoteIdentities | undefined): FileIdentity | undefined => {
  const object = remote?.[file];
  return object === undefined ? undefined : { path: file, size: object.size, mtimeMs: 0, etag: object.etag };
};

export async function identifyFile(file: string, remote?: RemoteIdentities): Promise<FileIdentity> {
  const listed = remoteIdentity(file, remote);
  if (listed !== undefined) return listed;
  const path = inputKey(file);
  try {
    const info = await stat(path);
    return { path, size: info.size, mtimeMs: info.mtimeMs };
  } catch (error) {
    throw new InputError(`cannot read it: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, file);
  }
}

export function identifyFileSync(file: string, remote?: RemoteIdentities): FileIdentity {
  const listed = remoteIdentity(file, remote);
  if (listed !== undefined) return listed;
  const path = inputKey(file);
  const info = statSync(path);
  return { path, size: info.size, mtimeMs: info.mtimeMs };
}

export const sameIdentity = (a: FileIdentity, b: FileIdentity): boolean => a.size === b.size && a.mtimeMs === b.mtimeMs && a.etag === b.etag;

export function changedMessage(journalPath: string, was: FileIdentity, now: FileIdentity): string {
  const parts: string[] = [];
  if (was.etag !== now.etag) parts.push(`ETag ${was.etag ?? 'none'} -> ${now.etag ?? 'none'}`);
  if (was.size !== now.size) parts.push(`size ${was.size} -> ${now.size} bytes`);
  if (was.mtimeMs !== now.mtimeMs) {
    parts.push(`modified ${new Date(was.mtimeMs).toISOString()} -> ${new Date(now.mtimeMs).toISOString()}`);
  }
  return (
    `changed since the journal ${journalPath} was written (${parts.join(', ')}), so its line numbers ` +
    `may name other rows; restore the ${now.etag === undefined ? 'file' : 'object'}, or upload it again with --restart`
  );
}

/**
 * Reads a journal without opening it for writing (to inspect it, or to test it). The local files it
 * names are named with symbolic links resolved, as inputKey names them (an earlier version named them
 * as given, made absolute).
 */
export async function readJournal(path: string): Promise<ParsedJournal> {
  const found = parseJournal(await readFile(path), path);
  for (const file of found.files) if (!isUrl(file.identity.path)) file.identity.path = canonicalPath(file.identity.path);
  return found;
}

/** The journal at this path, or undefined when there is none. */
export async function findJournal(path: string): Promise<ParsedJournal | undefined> {
  try {
    return await readJournal(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Rows of a journal's file that were sent and never settled. */
export function rowsInDoubt(file: { sent: RangeSet; settled: RangeSet }): RangeSet {
  return difference(file.sent, file.settled);
}

/** The files of a journal of which rows were sent or settled (what running them again would double). */
export const touchedFiles = (found: ParsedJournal): ParsedJournal['files'] =>
  found.files.filter((f) => f.settled.size > 0 || f.settledItems.size > 0 || rowsInDoubt(f).size > 0);

/** A file read to its end whose every row was settled, none in doubt and no line in part: a resumed run need not read it. */
export const isWhole = (f: ParsedJournal['files'][number]): boolean =>
  f.rows !== undefined && f.settled.size === f.rows && f.settledItems.size === 0 && rowsInDoubt(f).size === 0;

const LF = 0x0a;
const CR = 0x0d;

const count = (chunk: Buffer, bytes: number | string): number => {
  let n = 0;
  for (let at = chunk.indexOf(bytes); at !== -1; at = chunk.indexOf(bytes, at + 1)) n += 1;
  return n;
};

/** Line breaks: \n, \r\n, or \r alone (a CSV file may end its lines so); a \r\n split across chunks counts twice. */
const lineBreaks = (chunk: Buffer): number => count(chunk, LF) + count(chunk, CR) - count(chunk, '\r\n');

/**
 * The last line a file can have, counted in its text (unpacked when gzipped): a CSV or NDJSON line
 * ends at a line break (or the end of the text), and a JSON array's element begins with `{`. A
 * Parquet file's rows are no lines, and an object in storage is not read here: no bound for them.
 * Reading stops once the count reaches `named`, the last line a journal names: a healthy journal's
 * is never past the end.
 */
async function lastPossibleLine(path: string, named: number): Promise<number> {
  const head = Buffer.alloc(4);
  const handle = await open(path, 'r').catch(() => undefined);
  if (handle === undefined) return Number.MAX_SAFE_INTEGER;
  try {
    await handle.read(head, 0, 4, 0);
  } finally {
    await handle.close();
  }
  if (head.toString('latin1') === 'PAR1') return Number.MAX_SAFE_INTEGER;
  const gzipped = head[0] === 0x1f && head[1] === 0x8b;
  let breaks = 0;
  let braces = 0;
  /** The text ends in a line break: no line follows the last. */
  let brokenLast = false;
  const tally = async (text: AsyncIterable<Buffer>): Promise<void> => {
    for await (const chunk of text) {
      breaks += lineBreaks(chunk);
      braces += count(chunk, '{');
      if (chunk.length > 0) brokenLast = chunk[chunk.length - 1] === LF || chunk[chunk.length - 1] === CR;
      // each line break ends a line: so many lines there are at least
      if (Math.max(breaks, braces) >= named) return;
    }
  };
  try {
    await (gzipped ? pipeline(createReadStream(path), createGunzip(), tally) : pipeline(createReadStream(path), tally));
  } catch {
    // a file that cannot be read (or unpacked) to its end is refused by its reading, not here
    return Number.MAX_SAFE_INTEGER;
  }
  return Math.max(brokenLast ? breaks : breaks + 1, braces);
}

/**
 * Refuses a journal that names lines the file cannot have (`[[2, 9007199254740991]]`, or line
 * 100,000 of a file of 2,001 lines): a resume would skip rows that were never sent.
 */
async function checkLines(file: JournalFile, journalPath: string): Promise<void> {
  const last = (set: RangeSet): number => set.ranges().at(-1)?.[1] ?? 0;
  let named = Math.max(last(file.settled), last(file.sent), file.rows ?? 0);
  for (const line of file.settledItems.keys()) named = Math.max(named, line);
  if (named <= 1) return;
  const possible = await lastPossibleLine(file.identity.path, named);
  if (named <= possible) return;
  throw new InputError(
    `the resume journal is damaged: it names line ${named} of ${file.identity.path}, which has at most ${possible.toLocaleString('en-US')} lines; ` +
      'restore the journal from a copy, or give --restart to send every row again (rows the earlier run delivered are then sent twice)',
    journalPath,
  );
}

/** What earlier runs of a journal left, as a resumed run needs it. */
export interface EarlierRuns {
  previous: ParsedJournal;
  /** Absolute path -> file index in the journal. */
  indexes: Map<string, number>;
  /** Per absolute path: the rows earlier runs settled, the items of RequestLines they settled, the rows they left in doubt. */
  settledEarlier: Map<string, RangeSet>;
  itemsEarlier: Map<string, Map<number, Set<number>>>;
  doubtEarlier: Map<string, RangeSet>;
  /** Rows left in doubt, across the files. */
  inDoubt: number;
  /** Per absolute path (or URL): the rows of a file read to its end, every one of them settled, none in doubt. */
  wholeEarlier: Map<string, number>;
  /** Files whose identity changed but of which no row was sent: they are simply read anew. */
  renewed: Map<number, FileIdentity>;
  /** Absolute path -> the file's identity as the journal knows it. */
  known: Map<string, FileIdentity>;
  /** The index the next file new to the journal gets. */
  firstNewIndex: number;
}

/**
 * Reads the journal a run resumes (none for a fresh run) and checks it is this run's: the same
 * target, and input files unchanged since it recorded rows of them.
 */
export async function readEarlierRuns(
  options: Pick<JournalOptions, 'path' | 'files' | 'target' | 'resume'>,
  journalPath: string,
  identities: readonly FileIdentity[],
): Promise<EarlierRuns> {
  let previous: ParsedJournal = { files: [], remembers: [], unreported: 0, owed: [], validBytes: 0, tornTail: false, missingNewline: false };
  if (options.resume) {
    const found = await findJournal(journalPath);
    if (found === undefined) {
      throw new InputError('there is no journal to resume from here; check --journal, or start without --resume', options.path);
    }
    if (found.target !== undefined && found.target !== options.target) {
      throw new InputError(
        `records an upload to ${found.target}, not to ${options.target}; resume with that --url, or leave out --journal (each target keeps a journal of its own)`,
        options.path,
      );
    }
    // a journal of other files holds nothing to resume of these: resumed, it would send them whole,
    // and none of its own run's rows
    if (!identities.some((now) => found.files.some((f) => f.identity.path === now.path))) {
      throw new InputError(
        `holds no upload of ${options.files.join(', ')} (it holds ${found.files.map((f) => f.identity.path).join(', ')}), so there is nothing to resume from here; ` +
          'check --journal, or start without --resume',
        options.path,
      );
    }
    // a file of its run left out, with rows not all settled: resumed without it, the run would end
    // complete and those rows would never be sent
    const leftOut = found.files.filter((f) => !isWhole(f) && !identities.some((now) => now.path === f.identity.path)).map((f) => f.identity.path);
    if (leftOut.length > 0) {
      throw new InputError(
        `holds an upload of ${found.files.map((f) => f.identity.path).join(', ')}, and this run leaves out ${leftOut.join(', ')}, whose rows it has not all settled; ` +
          'resume with every input of that run, or give this upload its own --journal',
        options.path,
      );
    }
    previous = found;
  }

  const indexes = new Map<string, number>();
  const settledEarlier = new Map<string, RangeSet>();
  const itemsEarlier = new Map<string, Map<number, Set<number>>>();
  const doubtEarlier = new Map<string, RangeSet>();
  let inDoubt = 0;
  let nextIndex = 0;
  const known = new Map<string, FileIdentity>();
  const wholeEarlier = new Map<string, number>();
  const renewed = new Map<number, FileIdentity>();
  for (const f of previous.files) {
    nextIndex = Math.max(nextIndex, f.index + 1);
    indexes.set(f.identity.path, f.index);
    const now = identities.find((identity) => identity.path === f.identity.path);
    const touched = f.settled.size > 0 || f.sent.size > 0 || f.settledItems.size > 0;
    if (now !== undefined && !sameIdentity(f.identity, now) && !touched) {
      renewed.set(f.index, now);
      known.set(now.path, now);
      continue;
    }
    known.set(f.identity.path, f.identity);
    if (isWhole(f)) wholeEarlier.set(f.identity.path, f.rows!);
    // a file changed since is refused below, by what changed
    if (now !== undefined && sameIdentity(f.identity, now)) await checkLines(f, journalPath);
    settledEarlier.set(f.identity.path, f.settled);
    itemsEarlier.set(f.identity.path, f.settledItems);
    const doubt = rowsInDoubt(f);
    if (doubt.size > 0) {
      doubtEarlier.set(f.identity.path, doubt);
      inDoubt += doubt.size;
    }
  }
  options.files.forEach((file, i) => {
    const was = known.get(identities[i].path);
    if (was !== undefined && !sameIdentity(was, identities[i])) throw new InputError(changedMessage(journalPath, was, identities[i]), file);
  });

  return { previous, indexes, settledEarlier, itemsEarlier, doubtEarlier, inDoubt, wholeEarlier, renewed, known, firstNewIndex: nextIndex };
}

/**
 * What a --restart carries over from the journal it replaces: the rows that journal's run left in
 * doubt (sent, never settled) of files unchanged since, and the rows it sent again unreported. Sent
 * again, those may be stored twice, and the new run counts them. A journal that cannot be read, or
 * of another target, carries nothing.
 */
export async function doubtToCarry(
  journalPath: string,
  target: string,
  identities: readonly FileIdentity[],
): Promise<{ doubt: Map<string, RangeSet>; unreported: number }> {
  const doubt = new Map<string, RangeSet>();
  const found = await findJournal(journalPath).catch(() => undefined);
  if (found === undefined || (found.target !== undefined && found.target !== target)) return { doubt, unreported: 0 };
  for (const f of found.files) {
    const now = identities.find((identity) => identity.path === f.identity.path);
    const rows = rowsInDoubt(f);
    if (now !== undefined && sameIdentity(f.identity, now) && rows.size > 0) doubt.set(f.identity.path, rows);
  }
  return { doubt, unreported: found.unreported };
}
