// The journal of a run to a target, and the guard on running again an upload a journal holds: the
// same files, unchanged, to the same target are refused unless --resume or --restart says what to
// do, wherever that journal lies (beside the inputs, under another name, or noted in their folder).
import { appendFile, readFile, readdir, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { isRemote, localName } from '../input/location.js';
import { checkReadable, STDIN } from '../input/source.js';
import { resolveEndpoint } from '../transport/endpoint.js';
import { findJournal, identifyFile, rowsInDoubt, type ParsedJournal } from '../records/journal.js';
import type { RemoteIdentities } from '../records/journal-read.js';
import { checkWritable, isOneOf } from './check.js';

/**
 * The target as a file-name part, its scheme first: `https://rest.example.com:8443/v2` ->
 * `https-rest.example.com-8443-v2` (an http:// and an https:// run to one host and port are two
 * targets). `scheme: false` gives the name journals had before they named it.
 */
function targetSlug(endpoint: URL, scheme = true): string {
  const prefix = endpoint.pathname.replace(/\/users\/track$/, '');
  const text = `${scheme ? `${endpoint.protocol}-` : ''}${endpoint.hostname}${endpoint.port === '' ? '' : `-${endpoint.port}`}${prefix}`;
  return text.replace(/[^A-Za-z0-9.]+/g, '-').replace(/^-+|-+$/g, '');
}

/**
 * `users.csv.gz` to `http://127.0.0.1:4000` -> `users.http-127.0.0.1-4000.journal` beside it (an input
 * in storage, `s3://bucket/users/`, in the current folder): each target resumes its own run.
 */
export function defaultJournalPath(firstInput: string, endpoint: URL, scheme = true): string {
  const remote = isRemote(firstInput);
  const name = (remote ? localName(firstInput) : basename(firstInput)).replace(/\.gz$/i, '').replace(/\.[^.]+$/, '');
  return join(remote ? '.' : dirname(firstInput), `${name}.${targetSlug(endpoint, scheme)}.journal`);
}

/**
 * The journal of this target beside the first input: under today's name, or under the name without
 * the scheme that an earlier version gave it (taken only when its header names this very target).
 */
async function journalBeside(firstInput: string, endpoint: URL, target: string): Promise<string> {
  const path = defaultJournalPath(firstInput, endpoint);
  if ((await stat(path).catch(() => undefined)) !== undefined) return path;
  const before = defaultJournalPath(firstInput, endpoint, false);
  const found = await readableJournal(before);
  return found?.target === target ? before : path;
}

const count = (n: number): string => n.toLocaleString('en-US');
const when = (iso: string): string => iso.replace('T', ' ').replace(/:\d\d(\.\d+)?Z$/, ' UTC');

/** What an earlier run's journal holds, in a sentence. */
function journalStory(found: ParsedJournal): string {
  const settled = found.files.reduce((n, f) => n + f.settled.size, 0);
  const total = found.files.every((f) => f.rows !== undefined) ? found.files.reduce((n, f) => n + (f.rows ?? 0), 0) : undefined;
  const of = total === undefined ? `${count(settled)} rows settled` : `${count(settled)} of ${count(total)} rows settled`;
  if (found.end?.complete === true) return `completed on ${when(found.end.at)} (${of})`;
  if (found.end !== undefined) return `was stopped on ${when(found.end.at)} with ${of}`;
  const inFlight = found.files.reduce((n, f) => n + rowsInDoubt(f).size, 0);
  return `was interrupted (killed or crashed) with ${of}${inFlight > 0 ? ` and ${count(inFlight)} in flight` : ''}`;
}

/** The files of a journal of which rows were sent or settled (what running them again would double). */
function touchedFiles(found: ParsedJournal): ParsedJournal['files'] {
  return found.files.filter((f) => f.settled.size > 0 || f.settledItems.size > 0 || rowsInDoubt(f).size > 0);
}

/** A journal at `path`, or undefined when there is none or it cannot be read (a scan passes over it). */
async function readableJournal(path: string): Promise<ParsedJournal | undefined> {
  if ((await stat(path).catch(() => undefined))?.isFile() !== true) return undefined;
  return findJournal(path).catch(() => undefined);
}

/**
 * Refuses a run that would send again rows a journal of this target holds as sent (the same files,
 * unchanged): the run's own journal, or another one beside the inputs (the files given in another
 * order or with others), unless --resume or --restart says what to do. Returns a note when it
 * replaces a journal of other inputs.
 */
async function checkRerun(
  journalPath: string,
  target: string,
  inputs: readonly string[],
  options: { resume?: boolean; restart?: boolean; journalPath?: string; rerunSafe?: RerunSafe; remote?: RemoteIdentities },
): Promise<string | undefined> {
  if (options.resume === true || options.restart === true) return undefined;
  let own: ParsedJournal | undefined;
  if ((await stat(journalPath).catch(() => undefined)) !== undefined) {
    try {
      own = await findJournal(journalPath);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  }
  if (own?.target !== undefined && own.target !== target && touchedFiles(own).length > 0) {
    throw new UsageError(
      `the journal ${journalPath} holds an upload to ${own.target}, not to ${target}; give another --journal (or none: each target keeps its own), or --restart to replace it`,
    );
  }
  const identities = await Promise.all(inputs.map((file) => identifyFile(file, options.remote)));
  const same = (a: { path: string; size: number; mtimeMs: number }, b: typeof a): boolean => a.path === b.path && a.size === b.size && a.mtimeMs === b.mtimeMs;
  /** The inputs of which this journal holds rows sent or settled to this target. */
  const overlap = (found: ParsedJournal): string[] =>
    found.target !== undefined && found.target !== target
      ? []
      : inputs.filter((_, i) => touchedFiles(found).some((f) => same(f.identity, identities[i])));
  const refuse = async (path: string, found: ParsedJournal, files: string[]): Promise<string | undefined> => {
    // asked only when a journal would refuse the run
    if (options.rerunSafe !== undefined && (await options.rerunSafe(found))) {
      const own = path === journalPath ? `the journal ${path}` : `a journal of the same files (${path}) is left as it is, and ${journalPath}`;
      return `an upload of ${files.join(', ')} to ${target} ${journalStory(found)}; this run sends only what the target has not acknowledged, so ${own} was started anew`;
    }
    const resume = path === journalPath ? '--resume' : `--resume --journal ${path}`;
    throw new UsageError(
      `an upload of ${files.join(', ')} to ${target} ${journalStory(found)}; its journal is ${path}.\n` +
        `Running it again would send those rows again (events and purchases would be stored twice). Give ${resume} to send\n` +
        'only the rows not settled yet, or --restart to start over and send every row again.',
    );
  };
  if (own !== undefined) {
    const files = overlap(own);
    if (files.length > 0) return refuse(journalPath, own, files);
  }
  // the same files given in another order, or with others, keep their journal under another name;
  // a --journal given names the one journal to look at (one that does not exist starts fresh)
  const folders = new Set(options.journalPath === undefined ? localFiles(inputs).map((file) => dirname(resolve(file))) : []);
  const suffixes = [`.${targetSlug(new URL(target))}.journal`, `.${targetSlug(new URL(target), false)}.journal`];
  for (const folder of folders) {
    const names = await readdir(folder).catch(() => [] as string[]);
    const beside = names.filter((n) => suffixes.some((suffix) => n.endsWith(suffix))).map((name) => join(folder, name));
    // journals kept beside an input in another folder, which named this folder's files too
    const elsewhere = names.includes(JOURNALS_NOTE) ? await journalsNoted(join(folder, JOURNALS_NOTE), target) : [];
    for (const path of new Set([...beside, ...elsewhere])) {
      if (resolve(path) === resolve(journalPath)) continue;
      const found = await readableJournal(path);
      const files = found === undefined ? [] : overlap(found);
      if (found !== undefined && files.length > 0) return refuse(path, found, files);
    }
  }
  if (own === undefined) return undefined;
  return touchedFiles(own).length === 0
    ? `the journal ${journalPath} of an earlier run that sent nothing was replaced`
    : `the journal ${journalPath} of an earlier upload of other files (or of these files before they changed) was replaced`;
}

/**
 * A journal holds rows of files in several folders but lies beside the first only; each other
 * folder gets a line in this file naming it, so that a later run of those files alone finds it.
 */
const JOURNALS_NOTE = '.track-journals';

/** The inputs that lie in folders (no object in storage). */
const localFiles = (inputs: readonly string[]): string[] => inputs.filter((file) => !isRemote(file));

/** The journals of this target a folder's note names. */
async function journalsNoted(path: string, target: string): Promise<string[]> {
  if ((await stat(path).catch(() => undefined))?.isFile() !== true) return [];
  const text = await readFile(path, 'utf8').catch(() => '');
  const paths: string[] = [];
  for (const line of text.split('\n')) {
    try {
      const entry = JSON.parse(line) as { journal?: unknown; target?: unknown };
      if (typeof entry.journal === 'string' && entry.target === target) paths.push(entry.journal);
    } catch {
      // a line cut short or edited: passed over
    }
  }
  return paths;
}

/** Notes the journal in every folder of the inputs but its own (best effort: a folder may be read-only). */
export async function noteJournal(journalPath: string, target: string, inputs: readonly string[]): Promise<void> {
  const home = dirname(resolve(journalPath));
  const folders = new Set(localFiles(inputs).map((file) => dirname(resolve(file))).filter((folder) => folder !== home));
  for (const folder of folders) {
    const note = join(folder, JOURNALS_NOTE);
    if ((await journalsNoted(note, target)).includes(resolve(journalPath))) continue;
    await appendFile(note, `${JSON.stringify({ journal: resolve(journalPath), target })}\n`).catch(() => undefined);
  }
}

/** The journal must be a regular file (or none yet) in a folder this run can write. */
async function checkJournalPath(path: string): Promise<void> {
  const info = await stat(path).catch(() => undefined);
  if (info !== undefined && !info.isFile()) throw new UsageError(`--journal ${path} is not a regular file`);
  await checkWritable('--journal', path);
}

/** Whether running again what an earlier run's journal holds can store nothing twice (a delta run may then go). */
export type RerunSafe = (earlier: ParsedJournal) => Promise<boolean>;

/** Where a delivery goes, and the journal it keeps (none for standard input, which cannot be read again). */
export interface Target {
  endpoint: URL;
  /** The endpoint's origin and path: what a journal names. */
  target: string;
  journalPath?: string;
  /** Said in the summary: an earlier journal this run replaces. */
  note?: string;
}

/** Checks a delivery's URL, its --resume/--restart and its journal, and refuses a run that would send rows twice. */
export async function checkTarget(
  inputs: readonly string[],
  options: { url: string; journalPath?: string; noJournal?: boolean; resume?: boolean; restart?: boolean; rerunSafe?: RerunSafe; remote?: RemoteIdentities; namedAfter?: string },
): Promise<Target> {
  const endpoint = resolveEndpoint(options.url); // a bad URL is a usage error before anything is read
  const target = `${endpoint.origin}${endpoint.pathname}`;
  if (inputs.length === 0) throw new UsageError('give at least one input file (or - for standard input)');
  if (options.resume === true && options.restart === true) throw new UsageError('give --resume or --restart, not both');
  const fromStdin = inputs.includes(STDIN);
  if (fromStdin && options.resume === true) throw new UsageError('--resume cannot be used with standard input (-): it cannot be read again');
  if (options.noJournal === true) {
    if (options.journalPath !== undefined) throw new UsageError('give --journal or --no-journal, not both');
    // --restart asks for what a run without a journal does anyway
    if (options.resume === true) {
      throw new UsageError('--resume reads the journal of a run, and this one keeps none (--no-journal, or the emulator of track emulate --exec): give --journal PATH');
    }
  }
  // the same messages as a dry run for a missing or unreadable input, before the journal looks at it
  const readable = async (): Promise<void> => {
    for (const file of inputs) await checkReadable(file);
  };
  if (fromStdin || options.noJournal === true) {
    await readable();
    return { endpoint, target };
  }
  const journalPath = options.journalPath ?? (await journalBeside(options.namedAfter ?? inputs[0], endpoint, target));
  if (await isOneOf(journalPath, inputs)) throw new UsageError(`--journal ${journalPath} is also an input file`);
  await readable();
  await checkJournalPath(journalPath);
  const note = await checkRerun(journalPath, target, inputs, options);
  return { endpoint, target, journalPath, note };
}
