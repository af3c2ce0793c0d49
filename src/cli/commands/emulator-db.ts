// Opens the database file a `track emulate` wrote, for `track inspect` and `track cleanup`.
import { existsSync } from 'node:fs';
import type { Store } from '../../emulator/store.js';
import { InputError } from '../../errors.js';

export async function openEmulatorDb(path: string): Promise<Store> {
  if (!existsSync(path)) throw new InputError('no emulator database here (start `track emulate --db` with this path first)', path);
  const { Store } = await import('../../emulator/store.js');
  return new Store(path);
}
