// The example JSON array and Parquet file of the docs, read through the CLI and as emulator seeds;
// a .json file that holds its rows under a key is refused, saying how to read them.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliAsync } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const servers = useServers();

const ADA = {
  external_id: 'user-001',
  email: 'ada@example.com',
  first_name: 'Ada',
  zip: '02134',
  lifetime_value: 1204.5,
  vip: true,
  address: { city: 'Boston', country_code: 'US' },
  favorite_colors: ['red', 'blue'],
};

async function bodies(file: string): Promise<Array<Record<string, unknown>>> {
  const out = join(servers.tmp.dir, 'out.ndjson');
  const run = await runCliAsync(['validate', file, '--out', out, '--rejects', join(servers.tmp.dir, 'r.ndjson')]);
  expect(run.status).toBe(0);
  return JSON.parse(readFileSync(out, 'utf8').trim()).attributes;
}

describe('the example files of the docs', () => {
  it('reads fixtures/users.json, a JSON array, as its items', async () => {
    const items = await bodies('fixtures/users.json');
    expect(items[0]).toEqual({ ...ADA, last_seen: { $time: '2024-03-07T10:00:00Z' } });
    expect(items).toHaveLength(3);
  });

  it('reads fixtures/users.parquet: a DECIMAL as a number, a TIMESTAMP in UTC, text kept as text, nulls left out', async () => {
    const items = await bodies('fixtures/users.parquet');
    expect(items[0]).toEqual({ ...ADA, last_seen: '2024-03-07T10:00:00.000Z' });
    expect(items[2]).toEqual({ external_id: 'user-003', first_name: 'Linus', zip: '00501', lifetime_value: -2.5, favorite_colors: [] });
  });

  it('seeds the emulator with a Parquet file and a JSON array', async () => {
    const emulator = await servers.emulator({ seed: ['fixtures/users.parquet', 'fixtures/users.json'] });
    expect(emulator.store.counts().profiles).toBe(3);
    expect(emulator.store.findProfiles('user-003', 1).profiles[0].custom).toMatchObject({ zip: '00501', lifetime_value: -2.5 });
  });
});

describe('a .json file that is one object holding its rows under a key', () => {
  it('stops the upload before anything is sent (exit 2), naming the file and the key, with the jq command that writes the rows one a line', async () => {
    const server = await servers.faultServer();
    const rows = [{ external_id: 'w1', plan: 'gold' }, { external_id: 'w2', plan: 'free' }];
    const file = join(servers.tmp.dir, 'users.json');
    // written as many exports write it: the rows each on a line of their own, under the opening line
    writeFileSync(file, `{"users": [\n${rows.map((r) => `  ${JSON.stringify(r)}`).join(',\n')}\n]}\n`);
    const run = await runCliAsync(['upload', file, '--url', server.url, '--api-key', 'k', '--quiet'], { cwd: servers.tmp.dir });
    expect(run.status, run.stdout).toBe(2);
    expect(run.stderr).toContain(`track: ${file}: is one object holding its rows in an array under the key "users", not rows`);
    expect(run.stderr).toContain(`jq -c '.users[]' ${file} > users.ndjson, and upload users.ndjson`);
    expect(server.received).toHaveLength(0);
    expect(existsSync(`${file}.rejects.ndjson`)).toBe(false);
    // the way on it names reads every row
    writeFileSync(join(servers.tmp.dir, 'users.ndjson'), rows.map((r) => JSON.stringify(r)).join('\n'));
    const again = await runCliAsync(['upload', 'users.ndjson', '--url', server.url, '--api-key', 'k', '--quiet'], { cwd: servers.tmp.dir });
    expect(again.status, again.stderr).toBe(0);
    expect(server.appliedItems().map(({ item }) => item)).toEqual(rows);
  });
});
