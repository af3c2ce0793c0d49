// `track upload --delta` and operations on an array of objects combined in one object: the state
// never learns one as a value (sent again, it applies again), while the plain values beside it are
// learned and left out of the next run.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exportUser } from '../../src/emulator/export.js';
import { runCliAsync } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const { tmp, emulator } = useServers();

describe('--delta and a combined operation', () => {
  it('sends $add/$remove/$update again on every run, and only the plain values it has not acknowledged', async () => {
    const emu = await emulator();
    const file = join(tmp.dir, 'ops.ndjson');
    const pets = {
      $update: [{ $identifier_key: 'id', $identifier_value: 1, $new_object: { id: 1, age: 4 } }],
      $remove: [{ $identifier_key: 'id', $identifier_value: 0 }],
      $add: [{ id: 1, age: 3 }],
    };
    writeFileSync(file, `${JSON.stringify({ external_id: 'c1', plan: 'pro', pets })}\n`);
    const run = async () => {
      const r = await runCliAsync(['upload', file, '--url', emu.url, '--api-key', 'k', '--delta', '--restart', '--json'], { cwd: tmp.dir });
      expect(r.status, r.stderr).toBe(0);
      return JSON.parse(r.stdout);
    };
    // plan: 1; $update: 2 keys of $new_object; $remove: 1 object; $add: 2 keys
    expect(await run()).toMatchObject({ requests: 1, unchanged: 0, dataPoints: { sent: 1 + 2 + 1 + 2, avoided: 0 } });
    expect(exportUser(emu.store, emu.store.profileByExternalId('c1')!).custom_attributes).toEqual({ plan: 'pro', pets: [{ id: 1, age: 4 }] });
    // the operation goes again (and appends again); plan, acknowledged, is left out
    expect(await run()).toMatchObject({ requests: 1, unchanged: 0, dataPoints: { sent: 5, avoided: 1 } });
    expect(exportUser(emu.store, emu.store.profileByExternalId('c1')!).custom_attributes).toEqual({ plan: 'pro', pets: [{ id: 1, age: 4 }, { id: 1, age: 4 }] });
  }, 60_000);
});
