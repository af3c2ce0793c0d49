// `track state`: what a delta state file holds per target (users, attributes, events, last update),
// and forgetting a target, so that its next --delta run sends everything again.
import type { Command } from 'commander';
import { UPLOAD_DEFAULTS } from '../options.js';

interface StateFlags {
  state: string;
  forget?: string;
  json?: boolean;
}

async function runState(flags: StateFlags): Promise<void> {
  const [{ forgetTarget, listState }, { targetOf }, { number }] = await Promise.all([
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
      `forgot ${target}: its next --delta run sends every attribute (and --dedupe-events every event); an emptied cell (--empty-as-null) then clears nothing the server holds of a user the state no longer knows: run --delta --full to clear those\n`,
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
    process.stdout.write(`  events        ${number(t.activities)} events and purchases (--dedupe-events)\n`);
    process.stdout.write(`  last update   ${t.updated === undefined ? 'never' : t.updated.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}\n`);
  }
}

export function registerState(program: Command): void {
  program
    .command('state')
    .description('show what a --delta state file holds per target, or forget a target')
    .option('--state <file>', 'the state file', UPLOAD_DEFAULTS.state)
    .option('--forget <url>', 'forget everything the state holds of this target (its next --delta run sends every attribute, but clears an emptied cell only with --full)')
    .option('--json', 'print as JSON')
    .action(runState);
}
