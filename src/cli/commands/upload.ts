// `track upload FILES`: reads, maps, checks and batches the files, then sends the requests; with
// --dry-run it stops before the network and reports what would be sent.
import { Option, type Command } from 'commander';
import { stat } from 'node:fs/promises';
import type { SendOptions, UploadOptions } from '../../upload/upload.js';
import { addOutputOptions, addReadOptions, fileFlag, INPUTS_HELP, seconds, sendOptionsFrom, UPLOAD_DEFAULTS, uploadOptionsFrom, wholeNumber, type UploadFlags } from '../options.js';
import { EXIT, runAndReport } from '../run.js';

export function registerUpload(program: Command): void {
  const command = program
    .command('upload')
    .description('upload CSV, NDJSON, JSON or Parquet files to POST /users/track')
    .argument('<files...>', INPUTS_HELP)
    .option('--dry-run', 'do everything but send: check, batch, report (and --out the requests)')
    .option('--url <url>', 'the service base URL, e.g. https://rest.example.com (or TRACK_URL)')
    .option('--api-key <key>', 'API key with the users.track permission (or TRACK_API_KEY; never printed)')
    .option('--concurrency <n>', 'requests in flight at once', wholeNumber('--concurrency', 1), UPLOAD_DEFAULTS.concurrency)
    .option('--rate <n>', 'most requests started in any one second', wholeNumber('--rate', 1), UPLOAD_DEFAULTS.rate)
    .option('--hourly <n>', 'most requests started in any hour (off by default)', wholeNumber('--hourly', 1))
    .option('--retries <n>', 'tries after the first for 5xx, network errors and unknown outcomes', wholeNumber('--retries', 0), UPLOAD_DEFAULTS.retries)
    .option('--request-timeout <seconds>', "longest a request may take; past it its outcome is unknown (see --on-unknown)", seconds('--request-timeout'), UPLOAD_DEFAULTS.requestTimeout)
    .addOption(
      new Option('--on-unknown <action>', 'a request that may have been applied (connection broke after sending): send again, or reject its rows')
        .choices(['retry', 'reject'])
        .default('retry'),
    )
    .option('--journal <file>', "where sent and acknowledged rows are recorded, and under which API key (its fingerprint): another key's run does not resume it (default: beside the first input, named for it and the --url: users.csv.http-127.0.0.1-4000.journal, users.csv.https-rest.example.com.journal)", fileFlag('--journal'))
    .option('--no-journal', 'keep no journal, for a throwaway target (no --resume; the default against the emulator of track emulate --exec)')
    .option('--resume', 'skip the rows the journal says were delivered, and add to the rejects file')
    .option('--restart', 'start over although the journal holds a run of the same files to the same target (sends every row again)')
    .option('--resume-or-start', "resume the journal's run of these files when there is one, else start: one command for a scheduler's first try and its retries")
    .option('--rate-store <url>', 'share --rate and --hourly with every process sending to the target through Redis (redis://HOST:PORT[/DB]); if it fails mid-run, each goes on at its share')
    .option('--rate-store-key <key>', 'the key of the shared budget in the store (default: one per target)')
    .option('--quiet', 'no progress output');
  addOutputOptions(addReadOptions(command), true)
    .addHelpText(
      'after',
      '\nExit status: 0 every row accepted, 1 finished with rows rejected (see the rejects file), 2 usage or\n' +
        'configuration error (nothing sent), 3 stopped on a fatal error (401, 403, a request over the\n' +
        "server's batch limit, retries exhausted, server unreachable, a file that cannot be written, or\n" +
        'any error once something was sent), 130 interrupted (run again with --resume). With --dry-run:\n' +
        '0 or 1 for valid or rejected rows, 2 for a usage error, 3 a file it writes could not be written,\n' +
        '130 interrupted.\n\n' +
        'An upload the journal already holds (the same files, unchanged, to the same target) is refused\n' +
        'unless --resume (send only what is left) or --restart (send everything again) is given.',
    )
    .action(async (files: string[], flags: UploadFlags) => {
      const options = uploadOptionsFrom(files, flags, process.env);
      if (flags.dryRun === true) {
        const { runDryRun } = await import('./validate.js');
        await runDryRun('upload --dry-run', options, flags);
        return;
      }
      await runUpload(options, sendOptionsFrom(flags, process.env), flags);
    });
}

/** Runs an upload over the network: signals, progress, the summary and the exit status. */
async function runUpload(options: UploadOptions, send: SendOptions, flags: UploadFlags): Promise<void> {
  const { startUploadProgress } = await import('../output/progress.js');
  const { both, openRunOutputs, originOf, runFiles } = await import('../output/run-outputs.js');
  const stop = new AbortController();
  const abort = new AbortController();
  const ndjson = flags.progress === 'ndjson';
  const { maxTotal, maxPerArray } = options.limits ?? {};
  await (await import('../../upload/check.js')).checkFilesApart(await runFiles(options, send, flags));
  const outputs = await openRunOutputs(flags, process.env, {
    command: 'upload',
    inputs: options.inputs,
    target: originOf(send.url),
    limits: { maxTotal, maxPerArray, rate: send.rate ?? UPLOAD_DEFAULTS.rate, hourly: send.hourly, concurrency: send.concurrency, retries: send.retries },
  }, { shard: options.shard });
  let totalBytes = 0;
  for (const file of options.inputs) totalBytes += await stat(file).then((s) => s.size).catch(() => 0);
  // NDJSON progress takes stderr: no human lines there, not even the stop line (a 'stop' event tells it)
  const progress = await startUploadProgress({
    quiet: flags.quiet === true || ndjson,
    silent: ndjson,
    totalBytes,
    hourly: send.hourly,
    timeoutSeconds: flags.requestTimeout,
    // none with --no-journal (or against the emulator of track emulate --exec), nor from standard input
    journal: send.noJournal !== true && !options.inputs.includes('-'),
    intervalMs: flags.progressInterval * 1000,
  });
  await runAndReport('upload', flags, {
    names: options.shard === undefined ? undefined : { shard: options.shard },
    ended: () => progress.end(),
    outputs,
    stop: (signal) => {
      outputs?.stop(signal, 'finish');
      // the delivery, when it has begun, tells at once what it waits for (a 'stopping' notice)
      stop.abort();
      progress.stopping();
    },
    abort: (signal) => {
      outputs?.stop(signal, 'abort');
      abort.abort();
      // the journal is append-only and tolerates a torn last line; give the abort a moment, then go
      setTimeout(() => process.exit(EXIT.interrupted), 2000).unref();
    },
    options: {
      ...options,
      stopSignal: stop.signal,
      onProgress: both(progress.onRead, outputs?.read),
      onReject: outputs?.reject,
      send: {
        ...send,
        // the process is track's own: V8 may keep undici's HTTP parser unoptimised (30 MB less at peak)
        baselineWasm: true,
        abortSignal: abort.signal,
        onProgress: both(progress.onDelivery, outputs?.delivery),
        onNotice: both(progress.onNotice, outputs?.notice),
      },
    },
  });
}
