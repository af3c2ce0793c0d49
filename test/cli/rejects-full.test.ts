// A full rejects file does not hold back the settling of rows whose outcome is known: the rows the
// server accepted are journaled though the rejects file cannot take the rejects that come with them
// (the journal carries those), so once room is made a resume sends none of them again, and writes
// the rejects the first run could not.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliAsync } from '../helpers/cli.js';
import { writeEventsCsv } from '../helpers/events.js';
import { useServers } from '../helpers/servers.js';
import { isRoot, withSmallDisk } from '../helpers/small-disk.js';

const { tmp, faultServer } = useServers();
const ROWS = 3000;

describe.skipIf(!isRoot)('a full rejects file', () => {
  it('settles the rows the server accepted; after room is made, a resume sends none of them again and writes every reject once', async () => {
    // the server refuses the first event of every request (a minor error), the plan every seventh row (no name)
    const server = await faultServer(() => ({ kind: 'minor', errors: [{ type: 'name: refused by the server', input_array: 'events', index: 0 }] }));
    const file = writeEventsCsv(tmp.dir, ROWS, 'events.csv', { bad: (i) => i % 7 === 0, users: 1000 });
    await withSmallDisk(tmp.dir, '16k', async (small, grow) => {
      const rejects = join(small, 'r.ndjson');
      const args = ['upload', file, '--url', server.url, '--api-key', 'k', '--rejects', rejects, '--journal', 'j.journal', '--json'];
      const first = await runCliAsync(args, { cwd: tmp.dir });
      expect(first.status, first.stderr).toBe(3);
      expect(first.stderr).toMatch(new RegExp(`cannot write the rejects file ${rejects}: ENOSPC`));
      const sentFirst = server.received.length;
      expect(sentFirst).toBeGreaterThan(0);
      const appliedFirst = new Set(server.appliedItems().map(({ item }) => (item.properties as { n: number }).n));

      grow('16m');
      const resumed = await runCliAsync([...args, '--resume'], { cwd: tmp.dir });
      expect(resumed.status, resumed.stderr).toBe(1);
      // no row the server accepted in the first run is in a request of the resume
      const resent = server.received.slice(sentFirst).flatMap((r) => (r.body?.events ?? []).map((e) => (e.properties as { n: number }).n));
      expect(resent.filter((n) => appliedFirst.has(n)).length, `of ${appliedFirst.size} rows applied before`).toBe(0);
      expect(JSON.parse(resumed.stdout).rowsPossiblyDuplicated).toBe(0);

      // every row is applied once or rejected, and each reject is in the file once
      const applied = server.appliedItems().map(({ item }) => (item.properties as { n: number }).n);
      expect(applied.length).toBe(new Set(applied).size);
      const lines = readFileSync(rejects, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as { line: number });
      const rejected = lines.map((l) => l.line - 2);
      const twice = rejected.filter((n, i) => rejected.indexOf(n) !== i);
      expect(twice, JSON.stringify(lines.filter((l) => twice.includes(l.line - 2)))).toEqual([]);
      const all = new Set([...applied, ...rejected]);
      for (let n = 0; n < ROWS; n += 1) expect(all.has(n), `row ${n}`).toBe(true);
      expect(applied.length + rejected.length).toBe(ROWS);
    });
  }, 120_000);
});
