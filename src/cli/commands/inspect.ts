// `track inspect`: prints profiles of an emulator database, with their events and purchases, as JSON.
import type { Command } from 'commander';
import { UsageError } from '../../errors.js';
import type { UserAlias } from '../../model/types.js';
import { openEmulatorDb } from './emulator-db.js';

interface InspectFlags {
  db: string;
  externalId?: string;
  email?: string;
  phone?: string;
  alias?: string;
}

/** `NAME:LABEL` as a user alias: the label is what follows the last colon. */
function parseAlias(text: string): UserAlias {
  const at = text.lastIndexOf(':');
  if (at <= 0) throw new UsageError(`--alias: expected NAME:LABEL, got "${text}"`);
  return { alias_name: text.slice(0, at), alias_label: text.slice(at + 1) };
}

async function runInspect(flags: InspectFlags): Promise<void> {
  const alias = flags.alias === undefined ? undefined : parseAlias(flags.alias);
  const store = await openEmulatorDb(flags.db);
  try {
    const { inspectProfiles } = await import('../../emulator/inspect.js');
    const profiles = inspectProfiles(store, { externalId: flags.externalId, email: flags.email, phone: flags.phone, alias });
    process.stdout.write(`${JSON.stringify(profiles, null, 2)}\n`);
  } finally {
    store.close();
  }
}

export function registerInspect(program: Command): void {
  program
    .command('inspect')
    .description('print profiles of an emulator database, with their events and purchases, as JSON')
    .requiredOption('--db <path>', 'SQLite database file written by `track emulate`')
    .option('--external-id <id>', 'only the profile with this external_id')
    .option('--email <email>', 'only profiles with this email')
    .option('--phone <phone>', 'only profiles with this phone number')
    .option('--alias <name:label>', 'only the profile with this user alias')
    .action(runInspect);
}
