// `track emulate --exec` and the signals that would end `track`: each is passed on to the command's
// process group, and the group is killed when the command outlives a second signal or 10 s after the
// first; by `kill` and by keys typed in a real terminal (Ctrl-C, Ctrl-\).
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BIN, ROOT, tempDir } from '../helpers/cli.js';
import { isRunning, pidIn, until } from '../helpers/processes.js';
import { hasPython, runInTerminal } from '../helpers/pty.js';

let tmp: ReturnType<typeof tempDir>;
/** Processes a test started, ended after it in case it failed before they ended. */
const started: { kill: () => void }[] = [];
beforeEach(() => (tmp = tempDir()));
afterEach(() => {
  for (const leftover of started.splice(0)) leftover.kill();
  tmp.cleanup();
});

const killPid = (pid: number | undefined) => ({
  kill: () => {
    try {
      if (pid !== undefined) process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  },
});

/**
 * `track emulate --exec` of a command that starts `sleep 300` (its pid written to a file) and waits
 * for it, with `ignore` (a shell trap's list, which the sleep inherits) ignored; resolves once it runs.
 */
async function startExec(ignore: string) {
  const file = join(tmp.dir, 'sleeper');
  const command = `trap '' ${ignore}; sleep 300 & echo $! > ${file}; wait`;
  const child = spawn(process.execPath, [BIN, 'emulate', '--quiet', '--exec', command], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  started.push(killPid(child.pid), { kill: () => killPid(pidIn(file)).kill() });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  if (!(await until(() => pidIn(file) !== undefined))) throw new Error(`the command did not start: ${stderr}`);
  const sleeper = pidIn(file)!;
  return { child, exited, sleeper, stderr: () => stderr };
}

describe('track emulate --exec, a command that ignores the signal', () => {
  it('kills its process group 10 s after SIGTERM: exit 137, nothing left running', async () => {
    const run = await startExec('TERM');
    const sent = Date.now();
    run.child.kill('SIGTERM');
    // passed on, and ignored: still running a little later
    await new Promise((r) => setTimeout(r, 1000));
    expect(isRunning(run.sleeper)).toBe(true);
    expect(await run.exited).toBe(137);
    const took = Date.now() - sent;
    expect(took).toBeGreaterThanOrEqual(10_000);
    expect(took).toBeLessThan(20_000);
    expect(await until(() => !isRunning(run.sleeper), 2000)).toBe(true);
    expect(run.stderr()).toContain('track: SIGTERM: passed on to the command; it is killed if it has not ended in 10 s');
    expect(run.stderr()).toContain('had not ended 10 s after the signal: its process group is killed (SIGKILL)');
  }, 30_000);

  it('kills its process group at a second signal, at once', async () => {
    const run = await startExec('TERM INT');
    const sent = Date.now();
    run.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    expect(isRunning(run.sleeper)).toBe(true);
    run.child.kill('SIGINT');
    expect(await run.exited).toBe(137);
    expect(Date.now() - sent).toBeLessThan(5_000);
    expect(await until(() => !isRunning(run.sleeper), 2000)).toBe(true);
    expect(run.stderr()).toContain('outlived a second signal: its process group is killed (SIGKILL)');
  });
});

describe('track emulate --exec and every signal that would end track', () => {
  // before, these ended `track` by their default action and left the command running
  it.each(['SIGQUIT', 'SIGUSR2', 'SIGALRM', 'SIGXCPU', 'SIGVTALRM'] as const)('passes %s on to the command\'s group, which ends with it', async (signal) => {
    const run = await startExec('HUP'); // the command takes `signal` as it comes
    run.child.kill(signal);
    expect(await run.exited).toBe(128 + constants.signals[signal]);
    expect(await until(() => !isRunning(run.sleeper), 3000)).toBe(true);
  });
});

describe.skipIf(!hasPython)('track emulate --exec in a terminal', () => {
  /** `track emulate --exec` of a command that ignores `ignore`, writes its pid to a file and says it is ready, in a pty. */
  const inTerminal = (ignore: string, key: string, presses: number) => {
    const file = join(tmp.dir, 'sleeper');
    const command = `trap '' ${ignore}; sleep 300 & echo $! > ${file}; echo ready; wait`;
    const ctrlCAfter = ['ready', 'passed on to the command'].slice(0, presses);
    started.push({ kill: () => killPid(pidIn(file)).kill() });
    return { file, run: runInTerminal([process.execPath, BIN, 'emulate', '--quiet', '--exec', command], { cwd: ROOT, key, ctrlCAfter, deadlineMs: 25_000 }) };
  };

  it.each([
    ['Ctrl-C', '\x03', 'SIGINT'],
    ['Ctrl-\\', '\x1c', 'SIGQUIT'],
  ] as const)('%s stops the command (128 + its signal), and nothing of it is left running', async (_name, key, signal) => {
    const { file, run } = inTerminal('HUP', key, 1);
    const done = await run;
    expect(done.killed, done.out).toBe(false);
    expect(done.status, done.out).toBe(128 + constants.signals[signal]);
    expect(done.out).toContain(`track: ${signal}: passed on to the command`);
    expect(await until(() => !isRunning(pidIn(file)!), 2000)).toBe(true);
  });

  it('a second Ctrl-C kills a command that ignores the first (exit 137)', async () => {
    const { file, run } = inTerminal('INT', '\x03', 2);
    const done = await run;
    expect(done.ctrlC, done.out).toBe(2);
    expect(done.killed, done.out).toBe(false);
    expect(done.status, done.out).toBe(137);
    expect(done.out).toContain('outlived a second signal');
    expect(await until(() => !isRunning(pidIn(file)!), 2000)).toBe(true);
  });
});
