// A CRM-like attributes file with rows that are rejected and fields that are dropped (every third
// email is invalid, every fifth phone, every seventh date of birth), and a run of the real CLI
// timed from its summary to its exit: a run that outlives its deadline is killed and said to hang.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN } from './cli.js';

/** Writes `name` in `dir` with `rows` CRM rows and returns its path. Row i is line i + 2. */
export function writeCrmCsv(dir: string, rows: number, name = 'crm.csv'): string {
  const lines = ['external_id,email,phone,first_name,dob,plan,company,visits'];
  for (let i = 1; i <= rows; i += 1) {
    const email = i % 3 === 0 ? `not-an-email-${i}` : `user${i}@example.com`;
    const phone = i % 5 === 0 ? '123' : `+1415555${String(1000 + (i % 9000)).padStart(4, '0')}`;
    const dob = i % 7 === 0 ? '1990-13-45' : '1990-05-02';
    // a row with no identifier at all is rejected whole
    const id = i % 97 === 0 ? '' : `C-${i}`;
    lines.push(`${id},${email},${phone},Name ${i},${dob},pro,"Acme, ${i}",${i}`);
  }
  const path = join(dir, name);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

export interface TimedRun {
  status: number | null;
  stdout: string;
  stderr: string;
  /** The run outlived its deadline and was killed. */
  hung: boolean;
  /** Milliseconds from the last output on stdout (the summary) to the exit; undefined without output. */
  afterSummaryMs?: number;
}

/**
 * Runs `track ARGS` in `cwd`; `signalWhen` is asked every 10 ms, and once it says so SIGTERM (or the
 * signal given) is sent. A run still going `deadlineMs` after it started is killed (SIGKILL) and
 * reported as hung.
 */
export function runTimed(
  args: string[],
  options: { cwd: string; deadlineMs: number; env?: Record<string, string>; signalWhen?: () => boolean; signal?: NodeJS.Signals },
): Promise<TimedRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd, env: { ...process.env, NO_COLOR: '1', ...options.env } });
    let stdout = '';
    let stderr = '';
    let lastOut: number | undefined;
    let exitedAt = 0;
    let hung = false;
    const { signalWhen } = options;
    const poll =
      signalWhen === undefined
        ? undefined
        : setInterval(() => {
            if (!signalWhen()) return;
            clearInterval(poll);
            child.kill(options.signal ?? 'SIGTERM');
          }, 10);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      lastOut = performance.now();
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      hung = true;
      child.kill('SIGKILL');
    }, options.deadlineMs);
    child.on('exit', () => (exitedAt = performance.now()));
    child.on('close', (status) => {
      clearTimeout(timer);
      clearInterval(poll);
      resolve({ status, stdout, stderr, hung, afterSummaryMs: lastOut === undefined ? undefined : exitedAt - lastOut });
    });
  });
}
