// Opens the database file a `track emulate` wrote, for `track inspect` and `track cleanup`.
import { existsSync } from 'node:fs';
import type { Store } from '../../emulator/store.js';
import { InputError, UsageError } from '../../errors.js';
import { folderProblem, notAFileProblem } from '../../file-folder.js';

export async function openEmulatorDb(path: string): Promise<Store> {
  if (path === '') throw new UsageError("--db: an empty path; give the emulator's database file");
  const notAFile = notAFileProblem(path);
  if (notAFile !== undefined) throw new UsageError(`--db ${path}: ${notAFile}`);
  if (!existsSync(path)) {
    // a folder that is not there is said: an emulator could not make its database there either
    const folder = folderProblem(path);
    const why = folder === undefined || folder.includes('cannot write in the folder') ? 'start `track emulate --db` with this path first' : folder.replace(/; create it, .*$/, '');
    throw new InputError(`no emulator database here (${why})`, path);
  }
  const { Store } = await import('../../emulator/store.js');
  // a file an earlier version wrote is rebuilt once: said on stderr, as it may take a while
  return new Store(path, { note: (line) => process.stderr.write(`track: ${line}\n`) });
}
