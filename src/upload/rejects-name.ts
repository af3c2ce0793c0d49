// Where a run writes its rejects when no --rejects names the file: a name of each input's own (its
// whole file name kept), of each shard's own, and apart for a run that sends nothing, so that no run
// replaces or removes rejects another wrote. A run an earlier version left unfinished is resumed into
// the file that version named.
import { readFile, stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { nameBeside } from '../input/location.js';
import { STDIN } from '../input/source.js';
import type { RejectRecord } from '../model/request.js';
import { shardTag, type Shard } from './shard.js';

type Format = 'ndjson' | 'csv';

/** What a default rejects file's name says besides its input: the shard, and a run that sends nothing. */
export interface RejectsNaming {
  shard?: Shard;
  /** validate and --dry-run: a check keeps its rejects apart from an upload's, which it must not replace. */
  check?: boolean;
}

/**
 * `users.csv` -> `users.csv.rejects.ndjson` (or `.rejects.csv`) beside it, the input's whole name kept
 * so that `users.csv` and `users.ndjson` each have their own; standard input -> `stdin.rejects.ndjson`
 * here; `s3://bucket/exports/users/` -> `users.rejects.ndjson` here. A shard's carries its tag
 * (`users.csv.shard-2-of-4.rejects.ndjson`), as its journal does, and a check's says so
 * (`users.csv.check.rejects.ndjson`).
 */
export function defaultRejectsPath(firstInput: string, format: Format = 'ndjson', naming: RejectsNaming = {}): string {
  const tags = `${naming.shard === undefined ? '' : `.${shardTag(naming.shard)}`}${naming.check === true ? '.check' : ''}.rejects.${format}`;
  return firstInput === STDIN ? `stdin${tags}` : nameBeside(firstInput, tags);
}

/**
 * The name an earlier version gave an upload's rejects file, without the input's extension or the
 * shard (`users.rejects.ndjson`).
 */
export function earlierRejectsPath(firstInput: string, format: Format = 'ndjson'): string {
  return firstInput === STDIN ? `stdin.rejects.${format}` : nameBeside(firstInput, `.rejects.${format}`, false);
}

/** The rejects file of a run, and what a resumed run says of one an earlier version named. */
export interface RejectsFile {
  path: string;
  note?: string;
}

/**
 * The rejects file of a run not given --rejects. A resumed upload adds to its default file; when
 * there is none, but there is the file an earlier version named (earlierRejectsPath) and it holds
 * rows of these inputs, the run it resumes wrote there: it adds to that one, and says so.
 */
export async function rejectsFileOf(
  named: readonly string[],
  inputs: readonly string[],
  format: Format = 'ndjson',
  run: RejectsNaming & { resume: boolean },
): Promise<RejectsFile> {
  const path = defaultRejectsPath(named[0], format, run);
  if (!run.resume || run.check === true) return { path };
  const earlier = earlierRejectsPath(named[0], format);
  if (earlier === path || (await isFile(path)) || !(await isFile(earlier))) return { path };
  if (!(await holdsRowsOf(earlier, format, inputs))) return { path };
  return { path: earlier, note: `the run resumed here wrote its rejects to ${earlier}, as an earlier version of track named them: this one adds to it (a new run writes ${path})` };
}

const isFile = async (path: string): Promise<boolean> => (await stat(path).catch(() => undefined))?.isFile() === true;

/** Whether a rejects file holds a row of one of `inputs` (by the path it names, or that path's file name). */
async function holdsRowsOf(path: string, format: Format, inputs: readonly string[]): Promise<boolean> {
  const text = await readFile(path, 'utf8').catch(() => '');
  let files: string[];
  if (format === 'csv') {
    const { csvRejectKeys } = await import('./csv-rejects.js');
    files = csvRejectKeys(text).map((record) => record.file);
  } else {
    files = [];
    for (const line of text.split('\n')) {
      try {
        const record = JSON.parse(line) as Partial<RejectRecord>;
        if (typeof record.file === 'string') files.push(record.file);
      } catch {
        // a torn last line, or one someone edited
      }
    }
  }
  const names = new Set(inputs.flatMap((input) => [input, resolve(input), basename(input)]));
  return files.some((file) => names.has(file) || names.has(resolve(file)) || names.has(basename(file)));
}
