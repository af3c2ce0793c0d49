// A --delta run stopped by a signal while a request's outcome is unknown, through the real CLI
// against the fault server: what the request set of users the state did not know is held in doubt
// (README "Sending only what changed"), so a later --empty-as-null run clears their emptied cells.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, runCliAsync } from '../helpers/cli.js';
import type { FaultServer } from '../helpers/fault-server.js';
import { useServers } from '../helpers/servers.js';

const { tmp, faultServer } = useServers();

const write = (name: string, text: string): string => {
  const path = join(tmp.dir, name);
  writeFileSync(path, text);
  return path;
};
const until = async (condition: () => boolean, what: string): Promise<void> => {
  for (let i = 0; i < 2000 && !condition(); i += 1) await new Promise((r) => setTimeout(r, 10));
  if (!condition()) throw new Error(`waited too long for ${what}`);
};

/** Runs `track upload --delta` on a file of two users the state does not know, stops it with `signals` once `ready` holds, and gives its exit status. */
async function stopped(faults: FaultServer, ready: () => boolean, signals: NodeJS.Signals[], extra: string[] = []): Promise<number | null> {
  const file = write('first.csv', 'external_id,company\nn1,Acme\nn2,Beta\n');
  const child = spawn(process.execPath, [BIN, 'upload', file, '--url', faults.url, '--api-key', 'k', '--delta', '--quiet', ...extra], { cwd: tmp.dir, stdio: 'ignore' });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  await until(ready, 'the request to reach the server');
  for (const signal of signals) {
    child.kill(signal);
    await new Promise((r) => setTimeout(r, 200));
  }
  return exited;
}

/** The users whose company the next run's --empty-as-null sends as null, their cells emptied. */
async function clearedNext(faults: FaultServer): Promise<string[]> {
  faults.script(() => undefined);
  const emptied = write('emptied.csv', 'external_id,company\nn1,\nn2,\n');
  const from = faults.received.length;
  const r = await runCliAsync(['upload', emptied, '--url', faults.url, '--api-key', 'k', '--delta', '--empty-as-null', '--json'], { cwd: tmp.dir });
  expect(r.status, r.stderr).toBe(0);
  return faults.received
    .slice(from)
    .flatMap((request) => request.body?.attributes ?? [])
    .filter((item) => item.company === null)
    .map((item) => String(item.external_id));
}

describe('a --delta run stopped while an outcome is unknown', () => {
  it('cut off by a second Ctrl-C after its request was sent: the users it named are held in doubt, exit 130', async () => {
    const faults = await faultServer(() => ({ kind: 'hang' }));
    expect(await stopped(faults, () => faults.received.length >= 1, ['SIGINT', 'SIGINT'])).toBe(130);
    expect(await clearedNext(faults)).toEqual(['n1', 'n2']);
  }, 60_000);

  it('stopped by SIGTERM while waiting to send again a request whose connection broke: the same', async () => {
    const faults = await faultServer(() => ({ kind: 'destroy', applied: true }));
    expect(await stopped(faults, () => faults.received.length >= 1, ['SIGTERM'], ['--retries', '5'])).toBe(130);
    expect(await clearedNext(faults)).toEqual(['n1', 'n2']);
  }, 60_000);
});
