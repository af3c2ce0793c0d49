// Runs the real CLI binary: one-shot commands, and the emulator as a child process on port 0.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './free-port.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = join(ROOT, 'bin', 'track.js');

export function runCli(args: string[], options: { input?: string; env?: Record<string, string>; cwd?: string } = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: options.cwd ?? ROOT,
    input: options.input,
    env: { ...process.env, ...options.env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

export interface RunningEmulator {
  url: string;
  stdout: string;
  proc: ChildProcess;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
}

export async function spawnEmulator(args: string[], options: { env?: Record<string, string> } = {}): Promise<RunningEmulator> {
  const env = options.env === undefined ? undefined : { ...process.env, ...options.env };
  const proc = spawn(process.execPath, [BIN, 'emulate', '--port', '0', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  let stdout = '';
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`emulator did not start: ${stderr}`)), 20_000);
    proc.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      const m = /http:\/\/[^\s)]+/.exec(stdout);
      if (m && stdout.includes('\n')) {
        clearTimeout(timer);
        resolve(m[0]);
      }
    });
    void exited.then((code) => reject(new Error(`emulator exited with ${code}: ${stderr}`)));
  });
  await new Promise((r) => setTimeout(r, 50));
  return { url, get stdout() { return stdout; }, proc, exited };
}

export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'track-test-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export async function postJson(url: string, key: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, any> };
}

/** runCli without blocking this process, for commands that talk to a server running in it. */
export function runCliAsync(args: string[], options: { env?: Record<string, string>; cwd?: string } = {}) {
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd ?? ROOT, env: { ...process.env, ...options.env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** Runs the CLI with its standard output read up to the first bytes, then closed (as `| head` does): its status and standard error. */
export function runCliReaderGone(args: string[], options: { cwd?: string } = {}) {
  return new Promise<{ status: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd ?? ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.once('data', () => child.stdout.destroy());
    child.on('close', (status) => resolve({ status, stderr }));
  });
}

/** A loopback port nothing listens on. */
export const closedPort = freePort;
