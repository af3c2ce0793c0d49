// `track emulate`, `track inspect` and `track cleanup`: the emulator and its database file.
import { Option, type Command } from 'commander';
import { existsSync } from 'node:fs';
import { InputError, UsageError } from '../../errors.js';
import { positiveInteger } from './plan-options.js';

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

function number(name: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n)) throw new UsageError(`${name}: expected a number, got "${value}"`);
    return n;
  };
}

async function openExisting(path: string) {
  if (!existsSync(path)) throw new InputError('no emulator database here (start `track emulate --db` with this path first)', path);
  const { Store } = await import('../../emulator/store.js');
  return new Store(path);
}

export function registerEmulate(program: Command): void {
  program
    .command('emulate')
    .description('run a local emulator of POST /users/track backed by a SQLite file')
    .option('--port <n>', 'port to listen on (0 picks a free one)', number('--port'), 4000)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--db <path>', 'SQLite database file (":memory:" keeps nothing)', './track-emulator.sqlite')
    .option('--api-key <key[:perm,...]>', 'accept this key (repeatable); KEY:PERM,... grants only those permissions', collect)
    .option('--blocklist <external_id>', 'refuse requests naming this external_id (repeatable)', collect)
    .addOption(new Option('--limits <profile>', 'batch limit profile: mau (50 items a request) or legacy (75 per array)').choices(['mau', 'legacy']).default('mau'))
    .option('--max-total <n>', 'at most this many items in a request, across the arrays (over the profile)', positiveInteger('--max-total'))
    .option('--max-per-array <n>', 'at most this many items in each array of a request (over the profile)', positiveInteger('--max-per-array'))
    .option('--rate-limit <n/window>', 'requests per window per key, e.g. 3000/3s', '3000/3s')
    .option('--hourly-limit <n>', 'requests per hour per key (off by default)', number('--hourly-limit'))
    .option('--fail-rate <p>', 'fraction of requests answered 500 or 503', number('--fail-rate'), 0)
    .option('--drop-rate <p>', 'fraction of requests whose connection is closed unanswered', number('--drop-rate'), 0)
    .option('--latency <ms|min-max>', 'delay before each answer')
    .option('--max-body <bytes>', 'largest request body accepted', number('--max-body'), 4 * 1024 * 1024)
    .option('--quiet', 'log nothing but the start lines')
    .addHelpText(
      'after',
      '\nForce one outcome per request with the header X-Track-Fault: 429, 500, 503 (any 5xx), drop,\n' +
        'drop-after-commit (applied, then closed unanswered) or none.\nGET /health answers 200 once requests are taken.\n' +
        'One emulator at a time per database file: it holds <db>.lock while it runs, and a second is refused (exit 2).',
    )
    .action(async (opts: Record<string, unknown>) => {
      const { runEmulate } = await import('../emulate.js');
      await runEmulate(opts);
    });

  program
    .command('inspect')
    .description('print profiles of an emulator database, with their events and purchases, as JSON')
    .requiredOption('--db <path>', 'SQLite database file written by `track emulate`')
    .option('--external-id <id>', 'only the profile with this external_id')
    .option('--email <email>', 'only profiles with this email')
    .option('--phone <phone>', 'only profiles with this phone number')
    .option('--alias <name:label>', 'only the profile with this user alias')
    .action(async (opts: { db: string; externalId?: string; email?: string; phone?: string; alias?: string }) => {
      let alias;
      if (opts.alias !== undefined) {
        const at = opts.alias.lastIndexOf(':');
        if (at <= 0) throw new UsageError(`--alias: expected NAME:LABEL, got "${opts.alias}"`);
        alias = { alias_name: opts.alias.slice(0, at), alias_label: opts.alias.slice(at + 1) };
      }
      const store = await openExisting(opts.db);
      try {
        const { inspectProfiles } = await import('../../emulator/inspect.js');
        const profiles = inspectProfiles(store, { externalId: opts.externalId, email: opts.email, phone: opts.phone, alias });
        process.stdout.write(`${JSON.stringify(profiles, null, 2)}\n`);
      } finally {
        store.close();
      }
    });

  program
    .command('cleanup')
    .description('delete push-import profiles that no longer hold a push token (the monthly clean-up)')
    .requiredOption('--db <path>', 'SQLite database file written by `track emulate`')
    .option('--dry-run', 'count them without deleting')
    .action(async (opts: { db: string; dryRun?: boolean }) => {
      const store = await openExisting(opts.db);
      try {
        const { cleanupPushImports } = await import('../../emulator/inspect.js');
        const orphans = store.orphanPushImportIds().length;
        const result = cleanupPushImports(store, opts.dryRun === true);
        process.stdout.write(
          opts.dryRun
            ? `${orphans} push-import profile(s) hold no token and would be deleted; ${result.kept} still hold one\n`
            : `deleted ${result.deleted} push-import profile(s) with no token; kept ${result.kept} that still hold one\n`,
        );
      } finally {
        store.close();
      }
    });
}
