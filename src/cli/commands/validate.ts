// `track validate FILES`: reads, maps, checks and batches the files as an upload would, sends nothing.
import type { Command } from 'commander';
import { addPlanOptions, planOptionsFrom, type PlanFlags } from './plan-options.js';

export function registerValidate(program: Command): void {
  const command = program
    .command('validate')
    .description('check input files as an upload would read them; nothing is sent')
    .argument('<files...>', 'CSV or NDJSON files (.csv, .ndjson, .jsonl, optionally .gz); - reads standard input');
  addPlanOptions(command)
    .addHelpText('after', '\nExit status: 0 every row is valid, 1 some row was rejected (see the rejects file), 2 usage error, 3 a file it\n' + 'writes could not be written (a full disk), 130 interrupted (Ctrl-C).')
    .action(async (files: string[], flags: PlanFlags) => {
      const options = planOptionsFrom(files, flags, true);
      const { runPlanCommand } = await import('./plan-report.js');
      await runPlanCommand('validate', options, flags);
    });
}
