// `track validate FILES`: reads, maps, checks and batches the files as an upload would, sends
// nothing. `track upload --dry-run` is the same run under another name.
import type { Command } from 'commander';
import { setFlagsFromString } from 'node:v8';
import type { ReadProgress, UploadOptions } from '../../upload/upload.js';
import type { OutputFlags } from '../output/run-outputs.js';
import { holdStopSignals, releaseHeldSignal, signalHeld } from '../held-signals.js';
import { runAndReport } from '../run.js';
import { addOutputOptions, addPaceOptions, addReadOptions, INPUTS_HELP, uploadOptionsFrom, wholeNumber, type ReadFlags } from '../options.js';

export function registerValidate(program: Command): void {
  const command = program
    .command('validate')
    .description('check input files as an upload would read them; nothing is sent')
    .argument('<files...>', INPUTS_HELP);
  addOutputOptions(addPaceOptions(addReadOptions(command)), false)
    .option('--preview <n>', 'first print the first N rows of each file as the items they become (with --json, in the summary)', wholeNumber('--preview', 1))
    .option('--quiet', 'no progress output')
    .addHelpText('after', '\nExit status: 0 every row is valid, 1 some row was rejected (see the rejects file), 2 usage error, 3 a file it\n' + 'writes could not be written (a full disk), 130 interrupted (Ctrl-C).')
    .action(async (files: string[], flags: ReadFlags & { preview?: number; quiet?: boolean }) => {
      const options = uploadOptionsFrom(files, flags, process.env);
      if (flags.preview === undefined) return runDryRun('validate', options, flags);
      const [{ previewRows, formatPreview }, { checkHeaders, readColumnMap }, { readAhead, STDIN }, { resolveInputs }] = await Promise.all([
        import('../../upload/preview.js'),
        import('../../upload/check.js'),
        import('../../input/source.js'),
        import('../../upload/inputs.js'),
      ]);
      const map = options.mapFile === undefined ? undefined : await readColumnMap(options.mapFile);
      // a header or a map that cannot be used stops the run before any row is previewed (each object as listed)
      await checkHeaders({ ...options, ...(await resolveInputs(options.inputs, options.storage)) }, map);
      // a signal that came while the program started stops the run before its preview is read
      if (signalHeld()) return runDryRun('validate', options, flags);
      // standard input's first rows are read for the preview and kept, and the run reads it from the start
      const stdin = files.includes(STDIN) ? readAhead(process.stdin) : undefined;
      // the preview may wait on standard input: a signal then ends the process, as it would any program
      releaseHeldSignal();
      const preview = await previewRows({ ...options, map }, flags.preview, stdin?.ahead);
      holdStopSignals();
      const run = stdin === undefined ? options : { ...options, stdin: stdin.again() };
      if (flags.json === true) return runDryRun('validate', run, flags, { preview });
      // with --out -, standard output carries the request bodies alone
      (options.outPath === '-' ? process.stderr : process.stdout).write(formatPreview(preview));
      await runDryRun('validate', run, flags);
    });
}

/**
 * A dry run plans in this thread, where V8 lets the heap grow to several times what it holds before
 * collecting: with rows of 20,000 cells, peak memory then grows with the file. Growing it by 10% at
 * a time keeps the peak near what is live (a 20,000-column file: 157 MB at 100 rows, 163 MB at
 * 1,000, against 218 and 284 MB) for no time measured.
 */
const HEAP_GROWING_PERCENT = '--heap-growing-percent=10';

/** Runs a dry run: progress on a terminal (unless --quiet or --json), then the summary, then the exit status. */
export async function runDryRun(
  verb: string,
  options: UploadOptions,
  flags: OutputFlags & { json?: boolean; quiet?: boolean; rate: number; hourly?: number; rateStore?: string },
  extra?: Record<string, unknown>,
): Promise<void> {
  setFlagsFromString(HEAP_GROWING_PERCENT);
  const { readingLine, spinnerFits, startSpinner } = await import('../output/progress.js');
  const { both, openRunOutputs, runFiles } = await import('../output/run-outputs.js');
  const { maxTotal, maxPerArray } = options.limits ?? {};
  await (await import('../../upload/check.js')).checkFilesApart(await runFiles(options, undefined, flags));
  // a shard without a shared budget paces at its share, as its upload would: refused as it would be, and estimated so
  const store = flags.rateStore ?? process.env.TRACK_RATE_STORE;
  const shards = options.shard !== undefined && (store === undefined || store.trim() === '') ? options.shard.count : undefined;
  if (shards !== undefined) (await import('../../upload/shared-pace.js')).checkShares(flags.rate, flags.hourly, shards);
  const outputs = await openRunOutputs(flags, process.env, { command: verb, inputs: options.inputs, limits: { maxTotal, maxPerArray, rate: flags.rate, hourly: flags.hourly } });
  // Ctrl-C: stop reading and report what was read; a second one ends the process at once
  const stop = new AbortController();
  const spinner = spinnerFits() && flags.json !== true && flags.quiet !== true && flags.progress !== 'ndjson' ? await startSpinner('reading') : undefined;
  let last = 0;
  await runAndReport(verb, flags, {
    names: options.shard === undefined ? undefined : { shard: options.shard },
    pace: { rate: flags.rate, hourly: flags.hourly, shards },
    extra,
    outputs,
    stop: (signal) => {
      outputs?.stop(signal, 'finish');
      stop.abort();
    },
    ended: () => spinner?.stop(),
    options: {
        ...options,
        stopSignal: stop.signal,
        onProgress: both(
          spinner
            ? ({ file, rows, requests }: ReadProgress) => {
                const now = Date.now();
                if (now - last < 100) return;
                last = now;
                spinner.text = readingLine(file, rows, requests);
              }
            : undefined,
          outputs?.read,
        ),
        onReject: outputs?.reject,
      },
    });
}
