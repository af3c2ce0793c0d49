// `track state`: what a delta state file holds per target (users, attributes, events, last update,
// the keys it learned it through), forgetting a target, so that its next --delta run sends
// everything again, and recording another API key of a target's workspace.
import type { Command } from 'commander';
import { UsageError } from '../../errors.js';
import { UPLOAD_DEFAULTS } from '../options.js';

interface StateFlags {
  state: string;
  forget?: string;
  addKey?: string;
  apiKey?: string;
  json?: boolean;
}

async function runState(flags: StateFlags): Promise<void> {
  if (flags.forget !== undefined && flags.addKey !== undefined) throw new UsageError('give --forget or --add-key, not both');
  if (flags.apiKey !== undefined && flags.addKey === undefined) throw new UsageError('--api-key goes with --add-key: it is the key to record');
  if (flags.addKey !== undefined) return addKey(flags.state, flags.addKey, flags.apiKey ?? (process.env.TRACK_API_KEY || undefined));
  const [{ forgetTarget, listState }, { targetOf }, { counted, number }] = await Promise.all([
    import('../../records/state.js'),
    import('../../transport/endpoint.js'),
    import('../output/progress.js'),
  ]);
  if (flags.forget !== undefined) {
    const target = targetOf(flags.forget, '--forget');
    const forgotten = forgetTarget(flags.state, target);
    if (!forgotten) {
      process.stderr.write(`track: ${flags.state} holds nothing of ${target}\n`);
      process.exitCode = 1;
      return;
    }
    process.stdout.write(
      `forgot ${target} and the keys it was learned through: its next --delta run sends every attribute (and --dedupe-events every event); an emptied cell (--empty-as-null) then clears nothing the server holds of a user the state no longer knows: run --delta --full to clear those\n`,
    );
    return;
  }
  const targets = listState(flags.state);
  if (flags.json === true) {
    process.stdout.write(`${JSON.stringify({ state: flags.state, targets })}\n`);
    return;
  }
  if (targets.length === 0) {
    process.stdout.write(`${flags.state} holds no target yet\n`);
    return;
  }
  for (const t of targets) {
    process.stdout.write(`${t.url}\n`);
    process.stdout.write(`  users         ${number(t.users)}, ${number(t.attributes)} attribute values\n`);
    process.stdout.write(`  events        ${counted(t.activities, 'event or purchase', 'events and purchases')} (--dedupe-events)\n`);
    process.stdout.write(`  last update   ${t.updated === undefined ? 'never' : t.updated.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}\n`);
    process.stdout.write(`  API keys      ${t.keys.length === 0 ? "none yet (the next upload's key is recorded)" : t.keys.join(', ')}\n`);
  }
}

/** `--add-key URL`: records the key (its fingerprint, never the key) as one the state may use for that target. */
async function addKey(path: string, url: string, apiKey: string | undefined): Promise<void> {
  if (apiKey === undefined || apiKey === '') throw new UsageError('--add-key records the API key given with --api-key or TRACK_API_KEY: give one');
  const [{ addTargetKey, keyFingerprint }, { targetOf }, { checkApiKey }] = await Promise.all([
    import('../../records/state.js'),
    import('../../transport/endpoint.js'),
    import('../../transport/api-key.js'),
  ]);
  // a key no upload can send is never recorded
  checkApiKey(apiKey);
  const target = targetOf(url, '--add-key');
  const key = keyFingerprint(apiKey);
  const added = addTargetKey(path, target, key);
  process.stdout.write(
    added
      ? `recorded key ${key} for ${target}: an upload with it now compares with what ${path} holds of that target (the same workspace's profiles)\n`
      : `${path} already holds key ${key} for ${target}: nothing to do\n`,
  );
}

export function registerState(program: Command): void {
  program
    .command('state')
    .description("show what a --delta state file holds per target, forget a target, or record another API key of a target's workspace")
    .option('--state <file>', 'the state file', UPLOAD_DEFAULTS.state)
    .option('--forget <url>', 'forget everything the state holds of this target, its keys included (its next --delta run sends every attribute, but clears an emptied cell only with --full)')
    .option('--add-key <url>', "record the API key of --api-key or TRACK_API_KEY as one of this target's workspace (a new or second key), so that its uploads use what the state holds")
    .option('--api-key <key>', 'with --add-key: the key to record (or TRACK_API_KEY; only its fingerprint is kept, never the key)')
    .option('--json', 'print as JSON')
    .action(runState);
}
