// `track upload FILES`: reads, maps, checks and batches the files, then sends the requests; with
// --dry-run it stops before the network and reports what would be sent.
import type { Command } from 'commander';
import { UsageError } from '../../errors.js';
import { addPlanOptions, planOptionsFrom, type PlanFlags } from './plan-options.js';

interface UploadFlags extends PlanFlags {
  dryRun?: boolean;
}

export function registerUpload(program: Command): void {
  const command = program
    .command('upload')
    .description('upload CSV or NDJSON files to POST /users/track (this build: --dry-run only)')
    .argument('<files...>', 'CSV or NDJSON files (.csv, .ndjson, .jsonl, optionally .gz); - reads standard input')
    .option('--dry-run', 'do everything but send: check, batch, report (and --out the requests)');
  addPlanOptions(command)
    .addHelpText('after', '\nExit status: 0 every row is valid, 1 some row was rejected (see the rejects file), 2 usage error.')
    .action(async (files: string[], flags: UploadFlags) => {
      const options = planOptionsFrom(files, flags, flags.dryRun === true);
      if (flags.dryRun !== true) {
        // the sender (src/transport/) plugs in here: options.deliver = (requests, io) => deliver(requests, {...})
        throw new UsageError('sending is not available in this build yet; check the files with --dry-run (or track validate)');
      }
      const { runPlanCommand } = await import('./plan-report.js');
      await runPlanCommand('upload --dry-run', options, flags);
    });
}
