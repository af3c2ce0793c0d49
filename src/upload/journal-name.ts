// Where a run's journal lies: its default name beside the first input (after the input's whole file
// name, the target and the shard), the names earlier versions gave it, and what a name tells of its
// shard. The re-run guard (rerun.ts) decides what a run may do with the journal it finds there.
import { stat } from 'node:fs/promises';
import { isRemote, nameBeside } from '../input/location.js';
import { findJournal, inputKey, type ParsedJournal } from '../records/journal.js';
import { shardTag, type Shard } from './shard.js';

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
 * `users.csv.gz` to `http://127.0.0.1:4000` -> `users.csv.gz.http-127.0.0.1-4000.journal` beside it (an
 * input in storage, `s3://bucket/users/`, in the current folder): each target resumes its own run,
 * each shard its own (`users.csv.gz.http-127.0.0.1-4000.shard-2-of-4.journal`), and `users.csv` and
 * `users.ndjson` each their own. `extension: false` gives the name earlier versions gave it, without
 * the input's extension (`users.http-127.0.0.1-4000.journal`).
 */
export function defaultJournalPath(firstInput: string, endpoint: URL, scheme = true, shard?: Shard, extension = true): string {
  return nameBeside(firstInput, journalSuffix(endpoint, scheme, shard), extension);
}

/** The shard whose default journal of this target `path` is, by its name (`….shard-2-of-4.journal`). */
export function splitOf(path: string, endpoint: URL): Shard | undefined {
  const tag = `.${targetSlug(endpoint)}.shard-`;
  const at = path.lastIndexOf(tag);
  const match = at === -1 ? null : /^(\d+)-of-(\d+)\.journal$/.exec(path.slice(at + tag.length));
  return match === null ? undefined : { index: Number(match[1]), count: Number(match[2]) };
}

/** How the name of a journal of this target (and shard) ends. */
export const journalSuffix = (endpoint: URL, scheme: boolean, shard: Shard | undefined): string =>
  `.${targetSlug(endpoint, scheme)}${shard === undefined ? '' : `.${shardTag(shard)}`}.journal`;

/**
 * The journal of this target beside the first input: under today's name, or under a name an earlier
 * version gave it, without the input's extension (`users.http-….journal`) or, before that, without
 * the scheme; one of those is taken only when its header names this very target and it holds these
 * inputs (`users.ndjson` does not go on with the journal `users.csv` left under the shared name).
 */
export async function journalBeside(inputs: readonly string[], firstInput: string, endpoint: URL, target: string, shard: Shard | undefined): Promise<string> {
  const path = defaultJournalPath(firstInput, endpoint, true, shard);
  if ((await stat(path).catch(() => undefined)) !== undefined) return path;
  const earlier = [defaultJournalPath(firstInput, endpoint, true, shard, false), ...(shard === undefined ? [defaultJournalPath(firstInput, endpoint, false, undefined, false)] : [])];
  const keys = new Set(localFiles(inputs).map(inputKey));
  for (const before of earlier) {
    const found = await readableJournal(before);
    if (found?.target === target && found.files.some((f) => keys.has(f.identity.path))) return before;
  }
  return path;
}

/** A journal at `path`, or undefined when there is none or it cannot be read (a scan passes over it). */
export async function readableJournal(path: string): Promise<ParsedJournal | undefined> {
  if ((await stat(path).catch(() => undefined))?.isFile() !== true) return undefined;
  return findJournal(path).catch(() => undefined);
}

/** The inputs that lie in folders (no object in storage). */
export const localFiles = (inputs: readonly string[]): string[] => inputs.filter((file) => !isRemote(file));
