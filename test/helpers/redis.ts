// A real Redis server (Debian's redis-server) on a free loopback port, for the shared rate budget.
// Redis cannot listen on port 0 (0 turns TCP off), so a free port is found first and the start is
// tried again on the rare clash.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { freePort } from './free-port.js';

export const REDIS_SERVER = process.env.TRACK_REDIS_SERVER ?? '/usr/bin/redis-server';
export const redisPresent = existsSync(REDIS_SERVER);
if (!redisPresent && process.env.CI) {
  // CI installs it (.ci/run): a missing server there is a broken setup, not a reason to skip
  throw new Error(`${REDIS_SERVER} is missing; CI installs Debian's redis-server package before the tests`);
}
if (!redisPresent) console.warn(`Redis tests skipped: no redis-server at ${REDIS_SERVER} (apt-get install redis-server, or set TRACK_REDIS_SERVER)`);

export interface RedisServer {
  url: string;
  port: number;
  stop(): Promise<void>;
  /** Stops the server without closing its connections (SIGSTOP): it takes commands and answers none. */
  pause(): void;
}

function startOn(port: number): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const onData = (chunk: Buffer): void => {
      out += chunk.toString();
      if (out.includes('Ready to accept connections')) {
        child.stdout?.off('data', onData);
        resolve(child);
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out.slice(-500)}`)));
    child.once('error', reject);
  });
}

export async function startRedis(): Promise<RedisServer> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const port = await freePort();
    try {
      const child = await startOn(port);
      return {
        url: `redis://127.0.0.1:${port}`,
        port,
        pause: () => void child.kill('SIGSTOP'),
        stop: () =>
          new Promise((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGKILL');
          }),
      };
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}
