// `track inspect`: prints profiles of an emulator database, with their events and purchases, as JSON.
import type { Command } from 'commander';
import { UsageError } from '../../errors.js';
import type { UserAlias } from '../../model/types.js';
import { EMULATE_DEFAULTS, positiveInteger } from '../options.js';
import { EXIT } from '../run.js';
import { openEmulatorDb } from './emulator-db.js';

interface InspectFlags {
  db: string;
  externalId?: string;
  serviceId?: string;
  email?: string;
  phone?: string;
  alias?: string;
  count?: boolean;
  limit?: number;
}

/** `NAME:LABEL` as a user alias: the label is what follows the last colon. */
function parseAlias(text: string): UserAlias {
  const at = text.lastIndexOf(':');
  if (at <= 0) throw new UsageError(`--alias: expected NAME:LABEL, got "${text}"`);
  return { alias_name: text.slice(0, at), alias_label: text.slice(at + 1) };
}

/** Waits until stdout has taken what it was given, or was closed (a reader gone: quietOnClosedOutput says nothing). */
function drained(): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      for (const event of ['drain', 'close', 'error']) process.stdout.off(event, done);
      resolve();
    };
    for (const event of ['drain', 'close', 'error']) process.stdout.once(event, done);
  });
}

/**
 * Writes the values to stdout as one JSON array, as JSON.stringify(values, null, 2) would, a value at
 * a time: a database of millions of profiles is never held as one text, and a slow reader holds the
 * run rather than its memory. Stops when stdout's reader is gone. Returns how many it wrote.
 */
async function writeJsonArray(values: Iterable<unknown>): Promise<number> {
  let count = 0;
  for (const value of values) {
    if (process.stdout.destroyed) return count;
    // a JSON string holds no line break: indenting each line indents the value
    const text = JSON.stringify(value, null, 2).replaceAll('\n', '\n  ');
    if (!process.stdout.write(`${count === 0 ? '[\n  ' : ',\n  '}${text}`)) await drained();
    count += 1;
  }
  if (!process.stdout.destroyed) process.stdout.write(count === 0 ? '[]\n' : '\n]\n');
  return count;
}

async function runInspect(flags: InspectFlags): Promise<void> {
  const alias = flags.alias === undefined ? undefined : parseAlias(flags.alias);
  // a phone is matched as the emulator stores it (emulator/inspect.ts): in E.164, a valid 10-digit U.S. number read as U.S.
  const filter = { externalId: flags.externalId, serviceId: flags.serviceId, email: flags.email, phone: flags.phone, alias };
  const given = Object.entries({ 'external_id': flags.externalId, service_id: flags.serviceId, email: flags.email, phone: flags.phone, alias: flags.alias })
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `${name} "${value}"`);
  const store = await openEmulatorDb(flags.db);
  try {
    const { countProfiles, eachInspectedProfile } = await import('../../emulator/inspect.js');
    let found: number;
    if (flags.count === true) {
      found = Math.min(countProfiles(store, filter), flags.limit ?? Infinity);
      process.stdout.write(`${found}\n`);
    } else {
      found = await writeJsonArray(eachInspectedProfile(store, filter, flags.limit));
    }
    // an identifier that names nobody is an answer a script must not mistake for a profile
    if (found === 0 && given.length > 0) {
      process.stderr.write(`track: no profile with ${given.join(' and ')} in ${flags.db}\n`);
      process.exitCode = EXIT.noProfile;
    }
  } finally {
    store.close();
  }
}

export function registerInspect(program: Command): void {
  program
    .command('inspect')
    .description('print profiles of an emulator database, with their events and purchases, as JSON')
    .option('--db <path>', 'SQLite database file written by `track emulate`', EMULATE_DEFAULTS.db)
    .option('--external-id <id>', 'only the profile with this external_id')
    .option('--service-id <id>', "only the profile with this service_id (the emulator's own id)")
    .option('--email <email>', 'only profiles with this email')
    .option('--phone <phone>', 'only profiles with this phone number (E.164, or a 10-digit U.S. number as the emulator reads it)')
    .option('--alias <name:label>', 'only the profile with this user alias')
    .option('--count', 'print only the number of profiles that match (at most --limit, when given)')
    .option('--limit <n>', 'at most this many profiles', positiveInteger('--limit'))
    .addHelpText('after', '\nAn identifier that matches no profile prints "no profile" on stderr and exits 1.')
    .action(runInspect);
}
