// `track report FILES...`: adds the summaries of a sharded run (--summary-file) into one, names
// missing and doubled shards, and exits with the worst status among them.
import type { Command } from 'commander';
import { readFile } from 'node:fs/promises';
import { InputError, UsageError } from '../../errors.js';
import type { BatchLimits } from '../../model/limits.js';
import type { UploadSummary } from '../../upload/upload.js';

export function registerReport(program: Command): void {
  program
    .command('report')
    .description('add the summaries of a sharded run (--summary-file) into one; exits with the worst status among them')
    .argument('<files...>', 'summary files written by upload or validate --summary-file')
    .option('--json', 'print the report as JSON')
    .addHelpText('after', '\nExit status: the worst among the summaries (3 a fatal stop, 2 a usage error, 130 interrupted, 1 rows\nrejected, 0 all accepted); 3 when a shard is missing or named twice, or the summaries are of\ndifferent commands or splits; 2 when a file is not a summary, or is named twice.')
    .action(async (files: string[], flags: { json?: boolean }) => {
      const [{ formatReport, mergeSummaries, parseSummary, totalRejectsPath }, { formatSummary }] = await Promise.all([import('../output/merge-summaries.js'), import('../output/summary.js')]);
      const summaries = [];
      // one summary named twice (two globs that overlap) would be added twice
      const { canonicalPath } = await import('../../lock-file.js');
      const { statSync } = await import('node:fs');
      const named = new Map<string, string>();
      for (const file of files) {
        // by the file itself (a hard link is another name of it), else by its path
        const info = statSync(file, { throwIfNoEntry: false });
        const key = info === undefined ? canonicalPath(file) : `${info.dev}:${info.ino}`;
        const earlier = named.get(key);
        if (earlier !== undefined) throw new UsageError(`${file}: the summary ${earlier} given again; name each summary once`);
        named.set(key, file);
      }
      for (const file of files) {
        const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
          throw new InputError(`cannot read the summary (${error.code === 'ENOENT' ? 'no such file' : error.message})`, file);
        });
        summaries.push({ file, summary: parseSummary(file, text) });
      }
      const report = mergeSummaries(summaries);
      if (flags.json === true) process.stdout.write(`${JSON.stringify(report)}\n`);
      else {
        const verb = String(report.total.command ?? 'upload');
        const limits = report.total.limits as BatchLimits | undefined;
        // each summary names its own rejects file, which the total, of many runs, does not have
        const rejectsPath = totalRejectsPath(report);
        // dry runs' estimate of all their requests at the one pace, told as a dry run tells its own (none when the paces differ)
        const estimate = report.total.estimate as { rate?: number; hourly?: number; seconds?: number } | undefined;
        const pace = estimate?.rate !== undefined && estimate.seconds !== undefined ? { rate: estimate.rate, hourly: estimate.hourly } : undefined;
        process.stdout.write(formatReport(report, (total) => formatSummary(verb, { ...total, rejectsPath } as unknown as UploadSummary, limits, pace)));
      }
      process.exitCode = report.exitStatus;
    });
}
