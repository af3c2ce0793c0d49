// Runs the emulator in the foreground until SIGINT or SIGTERM (decisions.md "Running the emulator").
import { startEmulator } from '../emulator/server.js';
import { describeLimits, resolveLimits, type LimitProfileName } from '../model/index.js';

export async function runEmulate(opts: Record<string, unknown>): Promise<void> {
  const quiet = opts.quiet === true;
  const log = (line: string): void => {
    if (!quiet) process.stderr.write(`${new Date().toISOString()} ${line}\n`);
  };
  let stopping = false;
  let emulator: Awaited<ReturnType<typeof startEmulator>> | undefined;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    const done = emulator === undefined ? Promise.resolve() : emulator.close();
    void done.then(() => process.exit(0));
  };
  // handlers first, so a signal right after the start line is never missed
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  emulator = await startEmulator({
    port: opts.port as number,
    host: opts.host as string,
    db: opts.db as string,
    apiKeys: (opts.apiKey as string[] | undefined) ?? [],
    blocklist: (opts.blocklist as string[] | undefined) ?? [],
    limits: opts.limits as LimitProfileName,
    batchLimits: { maxTotal: opts.maxTotal as number | undefined, maxPerArray: opts.maxPerArray as number | undefined },
    rateLimit: opts.rateLimit as string,
    hourlyLimit: opts.hourlyLimit as number | undefined,
    failRate: opts.failRate as number,
    dropRate: opts.dropRate as number,
    latency: opts.latency as string | undefined,
    maxBodyBytes: opts.maxBody as number,
    log,
  });
  const keys = (opts.apiKey as string[] | undefined) ?? [];
  // startEmulator() has refused a profile or number that is not one, so these are the active limits
  const profile = (opts.limits as LimitProfileName | undefined) ?? 'mau';
  const limits = describeLimits(profile, resolveLimits(profile, { maxTotal: opts.maxTotal as number | undefined, maxPerArray: opts.maxPerArray as number | undefined }));
  process.stdout.write(`track emulator listening on ${emulator.url} (database ${opts.db as string}; batch limits ${limits})\n`);
  if (keys.length === 0) process.stdout.write(`API key: ${emulator.apiKey}\n`);
}
