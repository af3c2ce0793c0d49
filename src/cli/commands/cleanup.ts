// `track cleanup`: deletes push-import profiles that no longer hold a push token (spec 2.5 rule 5).
import type { Command } from 'commander';
import { openEmulatorDb } from './emulator-db.js';

interface CleanupFlags {
  db: string;
  dryRun?: boolean;
}

async function runCleanup(flags: CleanupFlags): Promise<void> {
  const store = await openEmulatorDb(flags.db);
  try {
    const { cleanupPushImports } = await import('../../emulator/inspect.js');
    const orphans = store.orphanPushImportIds().length;
    const result = cleanupPushImports(store, flags.dryRun === true);
    process.stdout.write(
      flags.dryRun
        ? `${orphans} push-import profile(s) hold no token and would be deleted; ${result.kept} still hold one\n`
        : `deleted ${result.deleted} push-import profile(s) with no token; kept ${result.kept} that still hold one\n`,
    );
  } finally {
    store.close();
  }
}

export function registerCleanup(program: Command): void {
  program
    .command('cleanup')
    .description('delete push-import profiles that no longer hold a push token (the monthly clean-up)')
    .requiredOption('--db <path>', 'SQLite database file written by `track emulate`')
    .option('--dry-run', 'count them without deleting')
    .action(runCleanup);
}
