// Runs the built CLI (bin/track.js) in a directory, with optional standard input.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const FIXTURES = join(ROOT, 'fixtures');

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function track(args: string[], options: { cwd: string; input?: string | Buffer }): CliResult {
  const result = spawnSync(process.execPath, [join(ROOT, 'bin/track.js'), ...args], {
    cwd: options.cwd,
    input: options.input,
    encoding: 'utf8',
    // a developer's own TRACK_URL or TRACK_API_KEY must not reach the commands under test
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', TRACK_URL: '', TRACK_API_KEY: '' },
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A fresh directory holding a copy of the fixtures. */
export function workdir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'track-cli-'));
  cpSync(FIXTURES, dir, { recursive: true });
  return dir;
}

export function ndjson<T = unknown>(path: string): T[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as T);
}
