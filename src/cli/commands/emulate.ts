// `track emulate`: runs the emulator in the foreground until SIGINT or SIGTERM (decisions.md "Running the emulator").
import { Option, type Command } from 'commander';
import type { EmulatorOptions } from '../../emulator/options.js';
import type { Emulator } from '../../emulator/server.js';
import { describeLimits, resolveLimits } from '../../model/limits.js';
import { EMULATE_DEFAULTS, collect, number, positiveInteger, type EmulateFlags } from '../options.js';

/** The emulator's options the flags ask for; its lines go to `log`. */
function emulatorOptions(flags: EmulateFlags, log: (line: string) => void): EmulatorOptions {
  return {
    port: flags.port,
    host: flags.host,
    db: flags.db,
    apiKeys: flags.apiKey ?? [],
    blocklist: flags.blocklist ?? [],
    limits: flags.limits,
    batchLimits: { maxTotal: flags.maxTotal, maxPerArray: flags.maxPerArray },
    rateLimit: flags.rateLimit,
    hourlyLimit: flags.hourlyLimit,
    failRate: flags.failRate,
    dropRate: flags.dropRate,
    latency: flags.latency,
    maxBodyBytes: flags.maxBody,
    log,
  };
}

async function runEmulate(flags: EmulateFlags): Promise<void> {
  const { startEmulator } = await import('../../emulator/server.js');
  const log = (line: string): void => {
    if (flags.quiet !== true) process.stderr.write(`${new Date().toISOString()} ${line}\n`);
  };
  let stopping = false;
  let emulator: Emulator | undefined;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    const done = emulator === undefined ? Promise.resolve() : emulator.close();
    void done.then(() => process.exit(0));
  };
  // handlers first, so a signal right after the start line is never missed
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  const options = emulatorOptions(flags, log);
  emulator = await startEmulator(options);
  // startEmulator() has refused a profile or number that is not one, so these are the active limits
  const limits = describeLimits(flags.limits, resolveLimits(flags.limits, options.batchLimits));
  process.stdout.write(`track emulator listening on ${emulator.url} (database ${flags.db}; batch limits ${limits})\n`);
  if (flags.apiKey === undefined) process.stdout.write(`API key: ${emulator.apiKey}\n`);
}

export function registerEmulate(program: Command): void {
  program
    .command('emulate')
    .description('run a local emulator of POST /users/track backed by a SQLite file')
    .option('--port <n>', 'port to listen on (0 picks a free one)', number('--port'), EMULATE_DEFAULTS.port)
    .option('--host <host>', 'address to listen on', EMULATE_DEFAULTS.host)
    .option('--db <path>', 'SQLite database file (":memory:" keeps nothing)', EMULATE_DEFAULTS.db)
    .option('--api-key <key[:perm,...]>', 'accept this key (repeatable); KEY:PERM,... grants only those permissions', collect)
    .option('--blocklist <external_id>', 'refuse requests naming this external_id (repeatable)', collect)
    .addOption(
      new Option('--limits <profile>', 'batch limit profile: mau (50 items a request) or legacy (75 per array)')
        .choices(['mau', 'legacy'])
        .default(EMULATE_DEFAULTS.limits),
    )
    .option('--max-total <n>', 'at most this many items in a request, across the arrays (over the profile)', positiveInteger('--max-total'))
    .option('--max-per-array <n>', 'at most this many items in each array of a request (over the profile)', positiveInteger('--max-per-array'))
    .option('--rate-limit <n/window>', 'requests per window per key, e.g. 3000/3s', EMULATE_DEFAULTS.rateLimit)
    .option('--hourly-limit <n>', 'requests per hour per key (off by default)', number('--hourly-limit'))
    .option('--fail-rate <p>', 'fraction of requests answered 500 or 503', number('--fail-rate'), EMULATE_DEFAULTS.failRate)
    .option('--drop-rate <p>', 'fraction of requests whose connection is closed unanswered', number('--drop-rate'), EMULATE_DEFAULTS.dropRate)
    .option('--latency <ms|min-max>', 'delay before each answer')
    .option('--max-body <bytes>', 'largest request body accepted', number('--max-body'), EMULATE_DEFAULTS.maxBody)
    .option('--quiet', 'log nothing but the start lines')
    .addHelpText(
      'after',
      '\nForce one outcome per request with the header X-Track-Fault: 429, 500, 503 (any 5xx), drop,\n' +
        'drop-after-commit (applied, then closed unanswered) or none.\nGET /health answers 200 once requests are taken.\n' +
        'One emulator at a time per database file: it holds <db>.lock while it runs, and a second is refused (exit 2).',
    )
    .action(runEmulate);
}
