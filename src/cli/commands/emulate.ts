// `track emulate`: runs the emulator in the foreground until SIGINT, SIGTERM or SIGHUP (decisions.md "Running
// the emulator"), or, with --exec, around one command whose exit status becomes its own.
import { Option, type Command } from 'commander';
import { constants } from 'node:os';
import type { EmulatorOptions } from '../../emulator/options.js';
import type { Emulator } from '../../emulator/server.js';
import { UsageError } from '../../errors.js';
import { signalsSeen, takeHeldSignal } from '../held-signals.js';
import { describeLimits, resolveLimits } from '../../model/limits.js';
import { MAX_REQUEST_LOG_SIZE } from '../../emulator/defaults.js';
import { isRemote } from '../../input/location.js';
import type { RemoteSettings } from '../../input/remote.js';
import { EMULATE_DEFAULTS, collect, number, positiveInteger, s3Endpoint, storageFrom, wholeNumber, type EmulateFlags } from '../options.js';

/**
 * The signals that would end this process: each stops the --exec command (passed on to its process
 * group; a second, or 10 s without it ending, kills the group). The command has a group of its own,
 * so a terminal's Ctrl-C (SIGINT) and Ctrl-\ (SIGQUIT) reach only this process, which passes them on.
 * Not SIGUSR1 (Node's debugger), SIGPIPE (ignored), SIGPROF (V8's profiler), nor the faults after
 * which no JavaScript can run (SIGSEGV, SIGBUS, SIGFPE, SIGILL); SIGKILL cannot be caught.
 */
const STOP_SIGNALS = (
  ['SIGHUP', 'SIGINT', 'SIGQUIT', 'SIGTERM', 'SIGUSR2', 'SIGALRM', 'SIGVTALRM', 'SIGXCPU', 'SIGXFSZ', 'SIGTRAP', 'SIGABRT', 'SIGSYS', 'SIGIO', 'SIGPWR', 'SIGSTKFLT'] as const
).filter((signal) => signal in constants.signals);

/** The emulator's options the flags ask for; its lines go to `log`. */
function emulatorOptions(flags: EmulateFlags, log: (line: string) => void): EmulatorOptions & { seed?: string[]; storage?: RemoteSettings } {
  return {
    storage: flags.seed?.some(isRemote) === true ? storageFrom(flags, process.env) : undefined,
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
    requestLog: flags.requestLog,
    seed: flags.seed,
    log,
  };
}

/** The start lines: the base URL first (the first URL printed), the web view and its key rule, a generated key. */
function startLines(emulator: Emulator, flags: EmulateFlags, options: EmulatorOptions): string {
  // startEmulator() has refused a profile or number that is not one, so these are the active limits
  const limits = describeLimits(flags.limits, resolveLimits(flags.limits, options.batchLimits));
  const seeded = flags.seed === undefined ? '' : `; seeded from ${flags.seed.join(', ')}`;
  const keyRule = emulator.fixtureKeyRequired
    ? 'needs one of the API keys, as this address can be reached from other machines'
    : 'no key needed on this loopback address';
  return (
    `track emulator listening on ${emulator.url} (database ${options.db}; batch limits ${limits}${seeded})\n` +
    `web view and request log: ${emulator.webUrl} (${keyRule})\n` +
    (flags.apiKey === undefined ? `API key: ${emulator.apiKey}\n` : '')
  );
}

async function runEmulate(flags: EmulateFlags, command: Command): Promise<void> {
  const log = (line: string): void => {
    if (flags.quiet !== true) process.stderr.write(`${new Date().toISOString()} ${line}\n`);
  };
  if (flags.exec !== undefined) {
    // a CI step: any free port and nothing kept, unless asked
    const given = (name: string): boolean => command.getOptionValueSource(name) !== 'default';
    const options = emulatorOptions({ ...flags, port: given('port') ? flags.port : 0, db: given('db') ? flags.db : ':memory:' }, log);
    return runExec(flags, flags.exec, options);
  }
  const { startEmulator } = await import('../../library/fixture.js');
  await signalsSeen();
  let stopping = false;
  let emulator: Emulator | undefined;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    const done = emulator === undefined ? Promise.resolve() : emulator.close();
    void done.then(() => process.exit(0));
  };
  // handlers first, so a signal right after the start line is never missed (nor one that came before them)
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  // its terminal closed: its log lines find no reader (quietOnClosedOutput), and it stops as at SIGTERM
  process.on('SIGHUP', stop);
  if (takeHeldSignal() !== undefined) return stop();
  const options = emulatorOptions(flags, log);
  emulator = await startEmulator(options);
  process.stdout.write(startLines(emulator, flags, options));
}

/**
 * --exec: the emulator, then the command with TRACK_URL and TRACK_API_KEY, then the emulator closed
 * and the command's status as ours. The start lines go to stderr, so the command's stdout is its own;
 * every signal that would end this process stops the command (STOP_SIGNALS), and its end ends both.
 */
async function runExec(flags: EmulateFlags, command: string, options: EmulatorOptions): Promise<void> {
  const { execWithEmulator, KILL_AFTER_MS } = await import('../../library/exec.js');
  // a signal that came while it loaded is held, and the command is not run
  await signalsSeen();
  let stop: ((signal: NodeJS.Signals) => void) | undefined;
  let signals = 0;
  // a signal before the command starts (while the seed loads) stops everything: the command never runs
  const beforeStart = new AbortController();
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stop === undefined) return beforeStart.abort(signal);
    // a closed terminal's shell and its kernel may each send a SIGHUP: the second is no second stop
    if (signals > 0 && signal === 'SIGHUP') return;
    if ((signals += 1) === 1) process.stderr.write(`track: ${signal}: passed on to the command; it is killed if it has not ended in ${KILL_AFTER_MS / 1000} s, or at the next signal\n`);
    stop(signal);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  const held = takeHeldSignal();
  if (held !== undefined) onSignal(held.signal);
  try {
    const result = await execWithEmulator(command, {
      ...options,
      signal: beforeStart.signal,
      onStart: (emulator) => process.stderr.write(startLines(emulator, flags, options)),
      onSpawn: (_child, _toGroup, stopCommand) => (stop = stopCommand),
      onKill: (why) =>
        process.stderr.write(`track: the command ${why === 'time' ? `had not ended ${KILL_AFTER_MS / 1000} s after the signal` : 'outlived a second signal'}: its process group is killed (SIGKILL)\n`),
    });
    if (result.code === null && beforeStart.signal.aborted && stop === undefined) {
      process.stderr.write(`track: stopped by ${result.signal} before the command started; it was not run\n`);
    }
    process.exitCode = result.status;
  } finally {
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
  }
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
    .option('--seed <file>', 'load this CSV, NDJSON, JSON or Parquet file (or s3://, https:// input), read as `track upload` reads it, before serving and again on each reset (repeatable)', collect)
    .option('--s3-endpoint <url>', 'an S3-compatible store for s3:// seeds, addressed path-style (or AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL)', s3Endpoint)
    .option('--request-log <n>', `requests the request log keeps (GET /_track/requests); 0 keeps none, at most ${MAX_REQUEST_LOG_SIZE.toLocaleString('en-US')}`, wholeNumber('--request-log', 0, MAX_REQUEST_LOG_SIZE), EMULATE_DEFAULTS.requestLog)
    .option('--exec <command>', 'start, run COMMAND through the shell with TRACK_URL and TRACK_API_KEY set, stop, and exit with its status (port 0 and :memory: unless given)')
    .addHelpText(
      'after',
      '\nForce one outcome per request with the header X-Track-Fault: 429, 500, 503 (any 5xx), drop,\n' +
        'drop-after-commit (applied, then closed unanswered) or none.\nGET /health answers 200 once requests are taken.\n' +
        'One emulator at a time per database file: it holds <db>.lock while it runs, and a second is refused (exit 2).\n\n' +
        'Its own endpoints: GET /_track/ (a web view of profiles and requests), GET /_track/requests?limit=N\n' +
        '(filters: status, path, and external_id, email, phone or alias: the requests with an item naming that user), DELETE /_track/requests, POST /_track/reset (back to the --seed\n' +
        'files), GET /_track/run (charts of the run: requests per second against the rate limit, statuses, items, minor\n' +
        'errors) and GET /metrics (Prometheus text format). On a loopback --host they need no key; on any other, one of the API keys.\n\n' +
        'In CI:  track emulate --seed users.csv --exec "npm test"   (exit status: the command\'s; 128+N if signal N ended it)\n' +
        'The command runs in a process group of its own: a signal that would end track (SIGINT from Ctrl-C, SIGQUIT\n' +
        'from Ctrl-\\, SIGTERM, SIGHUP, SIGUSR2...) is passed on to all of it, and the group is killed (SIGKILL) at a\n' +
        'second signal or 10 s later if it has not ended; whatever it leaves running is ended with it. At SIGHUP,\n' +
        'SIGINT or SIGTERM the shell waits for the command it runs and exits with its status (a track upload\n' +
        'there stops cleanly, exit 130), running nothing after it. If the emulator cannot start (a seed row,\n' +
        'the port or the database in use), the command is not run and the status is 2.',
    )
    .action(runEmulate);
}
