// The state writer's thread (state-writer.ts, state-writer-thread.ts): accepted records handed over
// in a burst are learned together, and a request's forgetting, asked for between them, keeps its
// place: what was accepted before it is learned first, then forgotten. An accepted record's promise
// settles once it is written (the journal waits for it before it holds the rows settled).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { learnRecordWriter, userMark } from '../../src/records/learn-record-writer.js';
import { KEY_HASH, keyHashInto, valueHash } from '../../src/records/state-record.js';
import { openStateWriter, ringOf, startStateWriter } from '../../src/records/state-writer.js';
import { openStateReader } from '../../src/records/state.js';
import { ROOT, tempDir } from '../helpers/cli.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => (tmp = tempDir()));
afterEach(() => tmp.cleanup());

const T = 'http://127.0.0.1:4000/users/track';
const NONE: ReadonlySet<number> = new Set();

function record(items: Array<Record<string, unknown>>, known = false): Uint8Array {
  const writer = learnRecordWriter();
  for (const item of items) writer.add(userMark(known, -1), item);
  return writer.finish();
}

/** The state's reader of T, and a user of it by key. */
function readerOf(path: string) {
  const reader = openStateReader(path, T);
  const user = (key: string) => {
    keyHashInto(key);
    return reader.user(key, KEY_HASH[0]);
  };
  return { reader, user };
}

describe('the ring accepted records cross in', () => {
  it('places records one after another, goes round to its start, and refuses one it has no room for until the writer gives it back', () => {
    const ring = ringOf(100);
    const bytes = new Uint8Array(ring.shared);
    const of = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill);
    expect(ring.place(of(40, 1))).toEqual({ at: 0, length: 40, span: 40 });
    expect(ring.place(of(40, 2))).toEqual({ at: 40, length: 40, span: 40 });
    expect(bytes.subarray(0, 80)).toEqual(new Uint8Array([...of(40, 1), ...of(40, 2)]));
    // 30 bytes do not fit at the end: they go to the start, which is in use
    expect(ring.place(of(30, 3))).toBeUndefined();
    ring.free(40);
    // the 20 bytes at the end left unused are taken with them
    expect(ring.place(of(30, 3))).toEqual({ at: 0, length: 30, span: 50 });
    expect(bytes.subarray(0, 30)).toEqual(of(30, 3));
    expect(bytes.subarray(40, 80)).toEqual(of(40, 2));
    expect(ring.place(of(11, 4))).toBeUndefined();
    expect(ring.place(of(10, 4))).toEqual({ at: 30, length: 10, span: 10 });
    ring.free(40 + 50 + 10);
    expect(ring.place(of(100, 5))).toEqual({ at: 0, length: 100, span: 100 });
    expect(ring.place(of(101, 6))).toBeUndefined();
  });
});

describe('the state writer thread', () => {
  it('learns every record of a burst of hand-overs, and forgets what a request sends only after learning what was accepted before it', async () => {
    const path = join(tmp.dir, 'state.sqlite');
    const writer = await openStateWriter(path, T);
    // hand-overs of 128 records each go to the thread at once, many of them before it is done with the first
    for (let r = 0; r < 800; r += 1) {
      writer.accepted(record(Array.from({ length: 10 }, (_, i) => ({ external_id: `n${r * 10 + i}`, plan: i % 2 === 0 ? 'pro' : 'free', visits: r * 10 + i }))), new Set([0]));
      if (r !== 100) continue;
      // u0 is accepted with plan "a"; the next request, about to send plan "b", is never answered
      writer.accepted(record([{ external_id: 'u0', plan: 'a', score: 1 }]), NONE);
      await writer.sending(record([{ external_id: 'u0', plan: 'b' }], true));
    }
    await writer.close();

    const { reader, user } = readerOf(path);
    try {
      expect(user('e:u0')?.holds('plan', ...valueHash('a'))).toBe(false);
      expect(user('e:u0')?.holds('plan', ...valueHash('b'))).toBe(false);
      // held in doubt: a value the server may hold, which matches none
      expect(user('e:u0')?.holdsValue('plan')).toBe(true);
      expect(user('e:u0')?.holds('score', ...valueHash(1))).toBe(true);
      for (let n = 0; n < 8000; n += 1) {
        const held = user(`e:n${n}`);
        // each request's first item was refused by the server
        if (n % 10 === 0) expect(held, `n${n}`).toBeUndefined();
        else expect(held?.holds('visits', ...valueHash(n)), `n${n}`).toBe(true);
      }
    } finally {
      reader.close();
    }
  });
  it('leaves out exactly the items the server refused, whatever number each record of a hand-over had refused', async () => {
    const path = join(tmp.dir, 'state.sqlite');
    const writer = await openStateWriter(path, T);
    const refusedIn = (r: number): Set<number> => new Set([...Array.from({ length: r % 4 }, (_, i) => i * 3), ...(r % 5 === 0 ? [9] : [])]);
    for (let r = 0; r < 48; r += 1) {
      writer.accepted(record(Array.from({ length: 10 }, (_, i) => ({ external_id: `v${r}-${i}`, visits: r * 10 + i }))), refusedIn(r));
    }
    await writer.close();

    const { reader, user } = readerOf(path);
    try {
      for (let r = 0; r < 48; r += 1) {
        for (let i = 0; i < 10; i += 1) {
          const held = user(`e:v${r}-${i}`);
          if (refusedIn(r).has(i)) expect(held, `v${r}-${i}`).toBeUndefined();
          else expect(held?.holds('visits', ...valueHash(r * 10 + i)), `v${r}-${i}`).toBe(true);
        }
      }
    } finally {
      reader.close();
    }
  });
  it('learns hand-overs that reach the thread together in one piece, each read from its own start, in the ring or as text', async () => {
    const path = join(tmp.dir, 'state.sqlite');
    const writer = await openStateWriter(path, T);
    // records of about 70 kB (users of 4 kB keys), accepted one after another with no pause: the
    // 4 MB ring is full within the first hand-over, the later ones go as text, and they reach the
    // thread while it learns the first, so that it learns them together
    const rounds = 200;
    const key = (r: number, i: number): string => `${'k'.repeat(4000)}${r}-${i}`;
    const records = Array.from({ length: rounds }, (_, r) => record([{ external_id: 'x', round: r }, ...Array.from({ length: 16 }, (_, i) => ({ external_id: key(r, i), round: r }))], r > 0));
    const refused = (r: number): Set<number> => new Set(r % 3 === 0 ? [1 + (r % 16)] : []);
    const settled: number[] = [];
    const all = records.map((learn, r) => writer.accepted(learn, refused(r)).then(() => settled.push(r)));
    await Promise.all(all);
    expect(settled).toEqual(Array.from({ length: rounds }, (_, r) => r));
    await writer.close();

    const { reader, user } = readerOf(path);
    try {
      expect(user('e:x')?.holds('round', ...valueHash(rounds - 1))).toBe(true);
      for (let r = 0; r < rounds; r += 1) {
        for (let i = 0; i < 16; i += 1) {
          const held = user(`e:${key(r, i)}`);
          if (refused(r).has(1 + i)) expect(held, `${r}-${i}`).toBeUndefined();
          else expect(held?.holds('round', ...valueHash(r)), `${r}-${i}`).toBe(true);
        }
      }
    } finally {
      reader.close();
    }
  });
  it("settles an accepted record's promise once it is written to the file, in the order accepted", async () => {
    const path = join(tmp.dir, 'state.sqlite');
    const writer = await openStateWriter(path, T);
    const settled: number[] = [];
    const all = Array.from({ length: 40 }, (_, r) => writer.accepted(record([{ external_id: `w${r}`, visits: r }]), NONE).then(() => settled.push(r)));
    await all[39];
    expect(settled).toEqual(Array.from({ length: 40 }, (_, r) => r));
    // read by another connection while the writer still holds the file: each is there
    const { reader, user } = readerOf(path);
    try {
      for (let r = 0; r < 40; r += 1) expect(user(`e:w${r}`)?.holds('visits', ...valueHash(r)), `w${r}`).toBe(true);
    } finally {
      reader.close();
    }
    await writer.close();
  });

  it('learns records in the order they were accepted, whether they crossed in the ring, as text when it was full, or as text being larger than it', async () => {
    const path = join(tmp.dir, 'state.sqlite');
    const writer = await openStateWriter(path, T);
    // records of about 400 kB (users of 4 kB keys), handed over at once: the 4 MB ring is full after ten of them
    const big = (r: number, users: number) =>
      record([{ external_id: 'x', round: r }, ...Array.from({ length: users }, (_, i) => ({ external_id: `${'k'.repeat(4000)}${r}-${i}`, round: r }))], r > 0);
    const rounds = 30;
    for (let r = 0; r < rounds; r += 1) {
      // one record larger than the whole ring, among them
      writer.accepted(big(r, r === 12 ? 1200 : 100), NONE);
      // a request about to send x's next value: what was accepted before is learned first
      if (r === 25) await writer.sending(record([{ external_id: 'x', round: 'next' }], true));
    }
    await writer.close();

    const { reader, user } = readerOf(path);
    try {
      expect(user('e:x')?.holds('round', ...valueHash(rounds - 1))).toBe(true);
      for (const [r, i] of [[0, 0], [9, 99], [12, 1199], [13, 0], [29, 99]]) expect(user(`e:${'k'.repeat(4000)}${r}-${i}`)?.holds('round', ...valueHash(r)), `${r}-${i}`).toBe(true);
    } finally {
      reader.close();
    }
  });
});

describe('the state writer thread started ahead of the run', () => {
  it('is taken by the run, which it writes for as a thread started then would', async () => {
    const path = join(tmp.dir, 'state.sqlite');
    const ahead = startStateWriter();
    // its modules load meanwhile: the run takes it after its checks
    await new Promise((done) => setTimeout(done, 200));
    const writer = await openStateWriter(path, T, undefined, ahead);
    // taken once: the run's, which a release no longer ends
    expect(() => ahead.take()).toThrow(/taken once/);
    ahead.release();
    await writer.accepted(record([{ external_id: 'a1', plan: 'pro' }]), NONE);
    await writer.close();
    const { reader, user } = readerOf(path);
    try {
      expect(user('e:a1')?.holds('plan', ...valueHash('pro'))).toBe(true);
    } finally {
      reader.close();
    }
    // a second run on the file, with a thread of its own, finds what the first wrote
    const again = await openStateWriter(path, T);
    await again.accepted(record([{ external_id: 'a2', plan: 'free' }]), NONE);
    await again.close();
    const second = readerOf(path);
    try {
      expect(second.user('e:a1')?.holds('plan', ...valueHash('pro'))).toBe(true);
      expect(second.user('e:a2')?.holds('plan', ...valueHash('free'))).toBe(true);
    } finally {
      second.reader.close();
    }
  });

  it('keeps no process from ending and touches no file, whether the run never takes it, releases it, or takes it and closes', () => {
    const script = join(tmp.dir, 'ahead.mjs');
    writeFileSync(
      script,
      `import { startStateWriter, openStateWriter } from '${ROOT}/dist/records/state-writer.js';
       const [mode, state] = process.argv.slice(2);
       const ahead = startStateWriter();
       // long enough for its modules to load
       await new Promise((done) => setTimeout(done, 300));
       if (mode === 'released') ahead.release();
       if (mode === 'taken') {
         const writer = await openStateWriter(state, 'http://127.0.0.1:4000/users/track', undefined, ahead);
         await writer.close();
       }
       console.log('done ' + mode);`,
    );
    for (const mode of ['never', 'released', 'taken']) {
      const state = join(tmp.dir, `${mode}.sqlite`);
      const run = spawnSync(process.execPath, [script, mode, state], { encoding: 'utf8', timeout: 20_000 });
      expect(run.error, mode).toBeUndefined();
      expect(run.stdout.trim(), run.stderr).toBe(`done ${mode}`);
      expect(run.status, mode).toBe(0);
      expect(readdirSync(tmp.dir).filter((name) => name.startsWith(`${mode}.sqlite`)), mode).toEqual(mode === 'taken' ? [`${mode}.sqlite`] : []);
    }
  });

  it.skipIf(!existsSync('/proc/self/task'))('is ended with a run that fails before it takes it: failed runs in one process leave no thread behind', () => {
    const script = join(tmp.dir, 'failing.mjs');
    const input = join(tmp.dir, 'users.csv');
    writeFileSync(input, 'external_id,plan\nu1,pro\n');
    writeFileSync(
      script,
      `import { readdirSync } from 'node:fs';
       import { upload } from '${ROOT}/dist/index.js';
       const threads = () => readdirSync('/proc/self/task').length;
       const settle = () => new Promise((done) => setTimeout(done, 500));
       // refused for its key, after the threads were started ahead
       const fail = () => upload({ inputs: [${JSON.stringify(input)}], url: 'http://127.0.0.1:9/users/track', apiKey: 'key\\u0001', delta: true, state: ${JSON.stringify(join(tmp.dir, 'state.sqlite'))}, journal: false }).then(() => 'went', (error) => error.message);
       const first = await fail();
       await settle();
       const before = threads();
       for (let i = 0; i < 6; i += 1) await fail();
       await settle();
       console.log(JSON.stringify({ first, before, after: threads() }));`,
    );
    const run = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 30_000 });
    expect(run.status, run.stderr).toBe(0);
    const { first, before, after } = JSON.parse(run.stdout) as { first: string; before: number; after: number };
    expect(first).toMatch(/API key/);
    // each failed run started two threads (the plan's, the state writer's): none of them is left
    expect(after).toBeLessThanOrEqual(before);
    expect(existsSync(join(tmp.dir, 'state.sqlite'))).toBe(false);
  });

  it("loads none of the plan's modules: the phone numbers' library took half of its start", () => {
    // every module the thread loads, as the loader resolves them (static imports, re-exports, dynamic ones)
    const log = join(tmp.dir, 'loaded.txt');
    const hook = join(tmp.dir, 'hook.mjs');
    writeFileSync(
      hook,
      `import { register } from 'node:module';
       register('data:text/javascript,' + encodeURIComponent(\`
         import { appendFileSync } from 'node:fs';
         export async function resolve(specifier, context, next) {
           const resolved = await next(specifier, context);
           appendFileSync(${JSON.stringify(log)}, resolved.url + '\\\\n');
           return resolved;
         }\`));`,
    );
    const script = join(tmp.dir, 'thread.mjs');
    writeFileSync(
      script,
      `import { Worker } from 'node:worker_threads';
       const worker = new Worker(new URL('file://${ROOT}/dist/records/state-writer-thread.js'));
       worker.postMessage({ path: ${JSON.stringify(join(tmp.dir, 'state.sqlite'))}, target: 'http://127.0.0.1:4000/users/track', ring: new SharedArrayBuffer(1024) });
       worker.on('message', (message) => {
         console.log(message.type);
         if (message.type === 'checked') void worker.terminate();
       });`,
    );
    const run = spawnSync(process.execPath, ['--import', hook, script], { encoding: 'utf8', timeout: 20_000 });
    expect(run.stdout, run.stderr).toContain('checked');
    const loaded = readFileSync(log, 'utf8').split('\n');
    // the thread's own modules were seen (the hook ran in it) ...
    expect(loaded.some((url) => url.endsWith('/dist/records/state-file-writer.js'))).toBe(true);
    expect(loaded.some((url) => url.endsWith('/dist/records/learn-record.js'))).toBe(true);
    // ... and none a plan needs to make learn records
    expect(loaded.filter((url) => /libphonenumber|\/model\/identity\.js|learn-record-writer\.js/.test(url))).toEqual([]);
  });
});
