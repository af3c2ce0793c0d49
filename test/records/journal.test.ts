import { appendFile, mkdtemp, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { gzipSync } from 'node:zlib';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.js';
import { openJournal, readJournal } from '../../src/records/journal.js';
import { buildPlan } from '../transport/plan.js';

const TARGET = 'http://127.0.0.1:1/users/track';
let dir: string;
let input: string;
let journalPath: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'track-journal-'));
  input = join(dir, 'users.csv');
  journalPath = join(dir, 'users.csv.journal');
  await writeFile(input, 'external_id,first_name\n' + Array.from({ length: 40 }, (_, i) => `u${i},n${i}\n`).join(''));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const lines = (journalText: string) => journalText.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);

describe('journal', () => {
  it('records settled rows as merged ranges per file and reads them back on resume', async () => {
    const plan = buildPlan({ requests: 6, itemsPer: 5, file: input });
    const journal = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    for (const i of [1, 0, 3, 5]) journal.record(plan[i]); // out of order; request 2 and 4 never settled
    await journal.close();

    const text = await readFile(journalPath, 'utf8');
    const entries = lines(text);
    expect(entries[0]).toEqual({ journal: 'track-upload', version: 4, target: TARGET, shard: null });
    const info = await stat(input);
    expect(entries[1]).toEqual({ file: 0, path: resolve(input), size: info.size, mtimeMs: info.mtimeMs });
    expect(entries.slice(2)).toEqual([
      {
        file: 0,
        lines: [
          [2, 11],
          [17, 21],
          [27, 31],
        ],
      },
    ]);

    const resumed = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: true });
    expect(resumed.settledBefore(input)).toBe(20);
    const skipped = Array.from({ length: 30 }, (_, i) => i + 2).filter((line) => resumed.skipRow(input, line));
    expect(skipped).toEqual([...range(2, 11), ...range(17, 21), ...range(27, 31)]);
    expect(resumed.skipRow('elsewhere.csv', 2)).toBe(false);
    await resumed.close();
  });

  it('appends on resume, keeping what earlier runs recorded', async () => {
    const plan = buildPlan({ requests: 4, itemsPer: 5, file: input });
    const first = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    first.record(plan[0]);
    await first.close();
    const second = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: true });
    second.record(plan[2]);
    await second.close();
    const parsed = await readJournal(journalPath);
    expect(parsed.files).toHaveLength(1);
    expect(parsed.files[0].settled.ranges()).toEqual([
      [2, 6],
      [12, 16],
    ]);
  });

  it('records items of a RequestLine on their own and gives them back on resume', async () => {
    const first = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    first.recordItem(input, 7, 0);
    first.recordItem(input, 7, 3);
    first.recordItem(input, 2, 0); // line 2 then settles whole before a write: no entry for its item
    first.recordRows(input, [2]);
    await first.close();
    expect(lines(await readFile(journalPath, 'utf8')).slice(2)).toEqual([
      { file: 0, items: [[7, 0], [7, 3]] },
      { file: 0, lines: [[2, 2]] },
    ]);
    const second = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: true });
    second.recordItem(input, 7, 1);
    await second.close();
    const third = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: true });
    expect([...(third.settledItems(input).get(7) ?? [])].sort()).toEqual([0, 1, 3]);
    expect(third.settledItems(input).get(2)).toBeUndefined();
    expect(third.settledItems('elsewhere.ndjson').size).toBe(0);
    await third.close();
  });

  it('resumes a journal of version 1, and refuses one of a version it does not know', async () => {
    const info = await stat(input);
    const file = JSON.stringify({ file: 0, path: resolve(input), size: info.size, mtimeMs: info.mtimeMs });
    await writeFile(journalPath, `{"journal":"track-upload","version":1}\n${file}\n{"file":0,"lines":[[2,5]]}\n`);
    const resumed = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: true });
    expect(resumed.settledRanges(input)).toEqual([[2, 5]]);
    await resumed.close();
    await writeFile(journalPath, `{"journal":"track-upload","version":5}\n${file}\n`);
    await expect(openJournal({ path: journalPath, files: [input], target: TARGET, resume: true })).rejects.toThrow(/newer version of track/);
  });

  it('starts a new journal when not resuming', async () => {
    const plan = buildPlan({ requests: 2, itemsPer: 5, file: input });
    const first = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    first.record(plan[0]);
    await first.close();
    const fresh = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    expect(fresh.skipRow(input, 2)).toBe(false);
    await fresh.close();
    expect((await readJournal(journalPath)).files[0].settled.size).toBe(0);
  });

  it('writes acknowledgements as they arrive, without waiting for close', async () => {
    const plan = buildPlan({ requests: 1, itemsPer: 3, file: input });
    const journal = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false, flushIntervalMs: 10 });
    journal.record(plan[0]);
    await new Promise((r) => setTimeout(r, 60));
    expect((await readJournal(journalPath)).files[0].settled.ranges()).toEqual([[2, 4]]);
    journal.recordRows(input, [9, 10]);
    await journal.flush();
    expect((await readJournal(journalPath)).files[0].settled.ranges()).toEqual([
      [2, 4],
      [9, 10],
    ]);
    await journal.close();
  });

  it('survives a torn last line: resume reads what was whole and appends cleanly after it', async () => {
    const plan = buildPlan({ requests: 3, itemsPer: 5, file: input });
    const first = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    first.record(plan[0]);
    await first.close();
    await appendFile(journalPath, '{"file":0,"lines":[[7,1'); // killed mid-write

    const parsed = await readJournal(journalPath);
    expect(parsed.tornTail).toBe(true);
    expect(parsed.files[0].settled.ranges()).toEqual([[2, 6]]);

    const resumed = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: true });
    expect(resumed.skipRow(input, 6)).toBe(true);
    expect(resumed.skipRow(input, 7)).toBe(false);
    resumed.record(plan[2]);
    await resumed.close();

    const after = await readJournal(journalPath);
    expect(after.tornTail).toBe(false);
    expect(after.files[0].settled.ranges()).toEqual([
      [2, 6],
      [12, 16],
    ]);
  });

  it('keeps a whole last entry that only lost its newline', async () => {
    const first = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    await first.close();
    await appendFile(journalPath, '{"file":0,"lines":[[2,3]]}');
    const resumed = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: true });
    expect(resumed.skipRow(input, 3)).toBe(true);
    resumed.recordRows(input, [8]);
    await resumed.close();
    expect((await readJournal(journalPath)).files[0].settled.ranges()).toEqual([
      [2, 3],
      [8, 8],
    ]);
  });

  it('refuses a journal emptied or cut short before it names its files: it cannot tell which rows were sent', async () => {
    const first = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    first.recordRows(input, [2, 3]);
    await first.close();
    const whole = await readFile(journalPath, 'utf8');
    const cuts = {
      empty: '',
      'cut short inside its first line': whole.slice(0, 20),
      'cut short before it names the input files': whole.slice(0, whole.indexOf('\n') + 1),
    };
    for (const [what, text] of Object.entries(cuts)) {
      await writeFile(journalPath, text);
      const message = `${journalPath}: the resume journal is ${what}, so it cannot tell which rows were sent; restore it from a copy, or give --restart`;
      await expect(openJournal({ path: journalPath, files: [input], target: TARGET, resume: true }), what).rejects.toThrow(message);
      await expect(readJournal(journalPath)).rejects.toThrow(InputError);
      // nothing was written to it
      expect(await readFile(journalPath, 'utf8')).toBe(text);
    }
  });

  it('refuses a journal naming lines its file cannot have', async () => {
    const first = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    first.recordRows(input, [2, 3]);
    await first.close();
    const whole = await readFile(journalPath, 'utf8');
    // the header and 40 rows, each ending in a line break: line 41 is the last
    for (const entry of ['{"file":0,"lines":[[2,9007199254740991]]}', '{"file":0,"sent":[[4,5000]]}', '{"file":0,"items":[[5000,0]]}', '{"file":0,"rows":5000}', '{"file":0,"lines":[[2,42]]}']) {
      await writeFile(journalPath, `${whole}${entry}\n`);
      await expect(openJournal({ path: journalPath, files: [input], target: TARGET, resume: true }), entry).rejects.toThrow(
        new RegExp(`the resume journal is damaged: it names line \\d+ of ${resolve(input)}, which has at most 41 lines; restore the journal from a copy, or give --restart`),
      );
    }
    await writeFile(journalPath, `${whole}{"file":0,"lines":[[2,41]]}\n`);
    const resumed = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: true });
    expect(resumed.settledBefore(input)).toBe(40);
    await resumed.close();
  });

  it('counts the lines of a gzipped file unpacked and of a file whose lines end in a carriage return, and the elements of a JSON array on one line', async () => {
    const gz = join(dir, 'users.csv.gz');
    await writeFile(gz, gzipSync(await readFile(input)));
    const cr = join(dir, 'cr.csv');
    await writeFile(cr, (await readFile(input, 'utf8')).replaceAll('\n', '\r'));
    const array = join(dir, 'users.json');
    await writeFile(array, JSON.stringify(Array.from({ length: 40 }, (_, i) => ({ external_id: `u${i}` }))));
    for (const [file, last] of [[gz, 41], [cr, 41], [array, 40]] as const) {
      await rm(journalPath, { force: true });
      const first = await openJournal({ path: journalPath, files: [file], target: TARGET, resume: false });
      await first.close();
      await appendFile(journalPath, `{"file":0,"lines":[[2,${last}]]}\n`);
      const resumed = await openJournal({ path: journalPath, files: [file], target: TARGET, resume: true });
      expect(resumed.settledBefore(file), file).toBe(last - 1);
      await resumed.close();
      await appendFile(journalPath, `{"file":0,"lines":[[2,${last + 1}]]}\n`);
      await expect(openJournal({ path: journalPath, files: [file], target: TARGET, resume: true }), file).rejects.toThrow(`which has at most ${last} lines`);
    }
  });

  it('will not write the journal over an input file', async () => {
    await expect(openJournal({ path: input, files: [input], target: TARGET, resume: false })).rejects.toThrow(/is an input file/);
    expect((await readFile(input, 'utf8')).startsWith('external_id,first_name')).toBe(true);
  });

  it('refuses a journal damaged before its last line', async () => {
    const first = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    first.recordRows(input, [2]);
    await first.close();
    const text = await readFile(journalPath, 'utf8');
    await writeFile(journalPath, text.replace('"lines"', '"lin') + '{"file":0,"lines":[[5,5]]}\n');
    await expect(openJournal({ path: journalPath, files: [input], target: TARGET, resume: true })).rejects.toThrow(/damaged at line 3/);
  });

  it('refuses to resume when an input file changed since', async () => {
    const first = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    first.recordRows(input, [2, 3]);
    await first.close();

    await appendFile(input, 'u99,late\n');
    const grown = openJournal({ path: journalPath, files: [input], target: TARGET, resume: true });
    await expect(grown).rejects.toBeInstanceOf(InputError);
    await expect(grown).rejects.toThrow(/users\.csv: changed since the journal .* \(size \d+ -> \d+ bytes/);
  });

  it('refuses to resume when only the modification time changed', async () => {
    const first = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    first.recordRows(input, [2]);
    await first.close();
    const later = new Date(Date.now() + 60_000);
    await utimes(input, later, later);
    await expect(openJournal({ path: journalPath, files: [input], target: TARGET, resume: true })).rejects.toThrow(/modified .* -> /);
  });

  it('refuses to resume with no journal', async () => {
    await expect(openJournal({ path: journalPath, files: [input], target: TARGET, resume: true })).rejects.toThrow(/no journal to resume/);
  });

  it('refuses a file that is not a journal', async () => {
    const other = join(dir, 'notes.txt');
    await writeFile(other, 'shopping list\nmilk\n');
    await expect(openJournal({ path: other, files: [input], target: TARGET, resume: true })).rejects.toThrow(/damaged at line 1/);
  });

  it('adds files a resumed run names for the first time, and files first seen in an acknowledgement', async () => {
    const other = join(dir, 'events.ndjson');
    await writeFile(other, '{}\n{}\n{}\n');
    const first = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    first.recordRows(input, [2]);
    first.recordRows(other, [1, 2]); // not named at open
    await first.close();
    const resumed = await openJournal({ path: journalPath, files: [input, other], target: TARGET, resume: true });
    expect(resumed.skipRow(other, 2)).toBe(true);
    expect(resumed.skipRow(other, 3)).toBe(false);
    await resumed.close();
    const parsed = await readJournal(journalPath);
    expect(parsed.files.map((f) => [f.index, f.identity.path, f.settled.size])).toEqual([
      [0, resolve(input), 1],
      [1, resolve(other), 2],
    ]);
  });

  it('records a request as sent before it is posted, durably; rows sent and never settled are in doubt on resume', async () => {
    const plan = buildPlan({ requests: 3, itemsPer: 5, file: input });
    const first = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    await first.sending(plan[0]);
    await first.sending(plan[1]);
    // on disk once sending() resolves, with nothing else flushed: what kill -9 would leave
    const onDisk = await readJournal(journalPath);
    expect(onDisk.files[0].sent.ranges()).toEqual([[2, 11]]);
    first.record(plan[0]);
    await first.flush();
    // killed here: request 1 was in flight, request 2 never sent
    const resumed = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: true });
    expect(resumed.inDoubt).toBe(5);
    expect(resumed.inDoubtRanges(input)).toEqual([[7, 11]]);
    expect(resumed.inDoubtRows(plan[1])).toBe(5);
    expect(resumed.inDoubtRows(plan[2])).toBe(0);
    expect(resumed.skipRow(input, 2)).toBe(true);
    expect(resumed.skipRow(input, 7)).toBe(false);
    await resumed.close();
  });

  it('settles nothing before what must be on disk first is: a failing beforeSettling keeps the rows unsettled', async () => {
    const plan = buildPlan({ requests: 2, itemsPer: 5, file: input });
    const order: string[] = [];
    let fail = false;
    const journal = await openJournal({
      path: journalPath,
      files: [input],
      target: TARGET,
      resume: false,
      beforeSettling: async () => {
        order.push('rejects synced');
        if (fail) throw new Error('cannot write the rejects file r.ndjson: ENOSPC');
      },
    });
    await journal.sending(plan[0]);
    expect(order).toEqual([]); // sending settles nothing: no need to wait on the rejects file
    journal.record(plan[0]);
    await journal.flush();
    expect(order).toEqual(['rejects synced']);
    fail = true;
    journal.recordRows(input, [12]);
    await expect(journal.flush()).rejects.toThrow(/ENOSPC/);
    await expect(journal.sending(plan[1])).rejects.toThrow(/ENOSPC/);
    await journal.close().catch(() => undefined);
    const parsed = await readJournal(journalPath);
    expect(parsed.files[0].settled.ranges()).toEqual([[2, 6]]);
    expect(parsed.files[0].sent.ranges()).toEqual([[2, 6]]);
  });

  it('carries what beforeSettling could not make durable, before the rows it settles, and gives it back on resume', async () => {
    const owed = [{ file: 'users.csv', line: 12, kind: 'attributes', row: { external_id: 'u10' }, errors: ['email: bad'] }];
    let full = false;
    const journal = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false, beforeSettling: async () => (full ? owed : undefined) });
    journal.recordRows(input, [2]);
    await journal.flush();
    full = true;
    journal.recordRows(input, [12, 13]);
    await journal.flush();
    await journal.close();
    const entries = lines(await readFile(journalPath, 'utf8'));
    const at = entries.findIndex((e) => 'owed' in e);
    expect(entries[at]).toEqual({ owed: owed[0] });
    expect(entries[at + 1]).toEqual({ file: 0, lines: [[12, 13]] });
    const resumed = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: true });
    expect(resumed.owed).toEqual(owed);
    expect(resumed.settledRanges(input)).toEqual([
      [2, 2],
      [12, 13],
    ]);
    await resumed.close();
  });

  it('names its target, and refuses to resume a run made to another one', async () => {
    const first = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    first.recordRows(input, [2]);
    await first.close({ complete: false });
    expect((await readJournal(journalPath)).target).toBe(TARGET);
    await expect(openJournal({ path: journalPath, files: [input], target: 'https://rest.example.com/users/track', resume: true })).rejects.toThrow(
      /records an upload to http:\/\/127.0.0.1:1\/users\/track, not to https:\/\/rest.example.com/,
    );
  });

  it('records how a run ended and the rows of each file read to its end; a resumed run clears the end until it writes its own', async () => {
    const first = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    first.recordRows(input, [2, 3]);
    await first.close({ complete: false, rowsRead: new Map([[input, 40]]) });
    const parsed = await readJournal(journalPath);
    expect(parsed.end).toMatchObject({ complete: false });
    expect(parsed.files[0].rows).toBe(40);
    const resumed = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: true });
    resumed.recordRows(input, [4]);
    await resumed.flush();
    expect((await readJournal(journalPath)).end).toBeUndefined(); // as if killed now
    await resumed.close({ complete: true });
    expect((await readJournal(journalPath)).end).toMatchObject({ complete: true });
  });

  it('reads a file of which no row was sent anew when it changed, instead of refusing the resume', async () => {
    const other = join(dir, 'events.ndjson');
    await writeFile(other, '{}\n');
    const first = await openJournal({ path: journalPath, files: [input, other], target: TARGET, resume: false });
    first.recordRows(input, [2]);
    await first.close({ complete: false });
    await writeFile(other, '{}\n{}\n'); // fixed after the first run stopped on it
    const resumed = await openJournal({ path: journalPath, files: [input, other], target: TARGET, resume: true });
    expect(resumed.skipRow(input, 2)).toBe(true);
    resumed.recordRows(other, [1]);
    await resumed.close();
    const parsed = await readJournal(journalPath);
    const size = (await stat(other)).size;
    expect(parsed.files.find((f) => f.identity.path === resolve(other))?.identity.size).toBe(size);
    expect(parsed.files.find((f) => f.identity.path === resolve(other))?.settled.ranges()).toEqual([[1, 1]]);
  });
});

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

describe('a run that stops on a usage error before anything was sent (revert)', () => {
  it('leaves the journal as it was: the run before put back, a resumed one cut back, none started where there was none', async () => {
    const plan = buildPlan({ requests: 4, itemsPer: 5, file: input });
    const first = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    first.record(plan[0]);
    await first.close({ complete: true });
    const finished = await readFile(journalPath, 'utf8');
    const aside = `${journalPath}.before.journal`;

    // a new journal over it: kept aside meanwhile (a kill leaves the new one in place), put back by revert
    const again = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false, restart: true });
    again.record(plan[1]);
    await again.flush();
    expect(await readFile(journalPath, 'utf8')).not.toBe(finished);
    expect(await readFile(aside, 'utf8')).toBe(finished);
    await again.revert();
    expect(await readFile(journalPath, 'utf8')).toBe(finished);
    await expect(stat(aside)).rejects.toThrow(/ENOENT/);

    // a resumed one: what it added is cut off
    const resumed = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: true });
    resumed.record(plan[2]);
    await resumed.flush();
    await resumed.revert();
    expect(await readFile(journalPath, 'utf8')).toBe(finished);

    // none before: none after
    const other = join(dir, 'other.journal');
    const fresh = await openJournal({ path: other, files: [input], target: TARGET, resume: false });
    await fresh.revert();
    await expect(stat(other)).rejects.toThrow(/ENOENT/);
  });

  it('keeps the journal once a row was recorded as sent, and lets the one before go', async () => {
    const plan = buildPlan({ requests: 2, itemsPer: 5, file: input });
    const first = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    await first.close({ complete: true });
    const again = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false, restart: true });
    await again.sending(plan[0]);
    await expect(stat(`${journalPath}.before.journal`)).rejects.toThrow(/ENOENT/);
    await again.revert();
    const entries = lines(await readFile(journalPath, 'utf8'));
    expect(entries.some((e) => 'sent' in e)).toBe(true);
    expect(entries.at(-1)).toMatchObject({ complete: false });
  });

  it('lets go the journal a killed run kept aside, once a run resuming the new one sends or closes; a resumed run that reverts leaves it', async () => {
    const plan = buildPlan({ requests: 2, itemsPer: 5, file: input });
    const aside = `${journalPath}.before.journal`;
    const first = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false });
    await first.close({ complete: true });
    // a run killed before its first send: its new journal in place, the one before still aside
    const killed = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: false, restart: true });
    await killed.flush();
    expect((await stat(aside)).isFile()).toBe(true);
    const reverted = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: true });
    await reverted.revert();
    expect((await stat(aside)).isFile()).toBe(true);
    const sending = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: true });
    await sending.sending(plan[0]);
    await expect(stat(aside)).rejects.toThrow(/ENOENT/);
    await sending.close({ complete: false });
    await writeFile(aside, 'a journal kept aside by a run killed later\n');
    const closing = await openJournal({ path: journalPath, files: [input], target: TARGET, resume: true });
    await closing.close({ complete: false });
    await expect(stat(aside)).rejects.toThrow(/ENOENT/);
  });
});
