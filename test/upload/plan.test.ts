// Every planner case runs against the plan made in this thread and the one made in the worker
// thread (what `track upload` sends from); then the two are compared on whole files.
import { describe, expect, it } from 'vitest';
import { planChunks, planEvents } from '../../src/upload/plan.js';
import { createEncoder } from '../../src/upload/worker/wire.js';
import { planInWorker, startPlanner } from '../../src/upload/worker/plan-in-worker.js';
import { batchSize } from '../../src/upload/reject-batch.js';
import { settledThreads, threadsCountable } from '../helpers/processes.js';
import { file, fixture, planCases, run, type Planner } from './plan.case.js';

const inThread: Planner = (options) => planEvents(options);
const inWorker: Planner = (options) => planInWorker(options);

planCases('in this thread', inThread);
planCases('in the worker thread', inWorker);

describe('the plan in the worker thread', () => {
  it('is the plan made in this thread, for every fixture together', async () => {
    const inputs = [
      'attributes.csv',
      'events.csv',
      'purchases.csv',
      'bad-rows.csv',
      'bad-lines.ndjson',
      'mixed.ndjson',
      'multiline-crlf.csv',
      'inference.csv',
      'annotations.csv',
      'empty-and-null.csv',
      'identifiers.csv',
      'warnings.csv',
    ].map(fixture);
    const here = await run(inThread, { inputs });
    const there = await run(inWorker, { inputs });
    expect(here.requests.length).toBeGreaterThan(1);
    expect(here.rejects.length).toBeGreaterThan(5);
    expect(here.summary.warnings).toBeGreaterThan(0);
    expect(there).toEqual(here);
  });

  it('is the same plan for a file of 1,500 columns (rows mapped by the loop, cells kept as one text), rows given back whole', async () => {
    const header = ['external_id', ...Array.from({ length: 1499 }, (_, i) => `attr_${i}`)];
    const row = (r: number) => header.map((_, i) => (i === 0 ? `u${r}` : i === 7 && r === 3 ? 'x:inc' : i % 5 === 0 ? '' : `${(r * i) % 97}${i % 2 ? 'é' : ''}`));
    const text = [header.join(','), ...Array.from({ length: 30 }, (_, r) => row(r).join(','))].join('\n');
    const csv = file('wide.csv', text.replace(',x:inc,', ',"a,b",'));
    const here = await run(inThread, { inputs: [csv], maxBodyBytes: 60_000 });
    const there = await run(inWorker, { inputs: [csv], maxBodyBytes: 60_000 });
    expect(here.requests.length).toBeGreaterThan(3);
    expect(there).toEqual(here);
    const origins = there.requests.flatMap((r) => (r.origins as { attributes: Array<{ line: number; row: Record<string, string> }> }).attributes);
    expect(origins).toHaveLength(30);
    expect(origins[5].row).toEqual(Object.fromEntries(header.map((key, i) => [key, row(5)[i]])));
  });

  it('hands on every rejected row of a file of mostly bad rows, in order', async () => {
    const rows = Array.from({ length: 30_000 }, (_, i) => (i % 100 === 0 ? `u${i},u${i}@example.com` : `u${i},not-an-email`));
    const csv = file('mostly-bad.csv', `external_id,email\n${rows.join('\n')}\n`);
    const here = await run(inThread, { inputs: [csv] });
    const there = await run(inWorker, { inputs: [csv] });
    expect(there.rejects).toHaveLength(29_700);
    expect(there).toEqual(here);
  });

  it('stops at once when told to: nothing it posted after is handed on', async () => {
    const rows = Array.from({ length: 50_000 }, (_, i) => `u${i},not-an-email`);
    const csv = file('all-bad.csv', `external_id,email\n${rows.join('\n')}\n`);
    const stop = new AbortController();
    let rejects = 0;
    let atStop = -1;
    for await (const event of planInWorker({ inputs: [csv], stopSignal: stop.signal })) {
      expect(event.type).not.toBe('request');
      // the rejects come a chunk's batch at a time
      expect(event.type).not.toBe('reject');
      if (event.type === 'rejects') rejects += batchSize(event.batch);
      if (rejects >= 500 && atStop === -1) {
        atStop = rejects;
        stop.abort();
      }
    }
    expect(atStop).toBeGreaterThanOrEqual(500);
    expect(atStop).toBeLessThan(50_000);
    expect(rejects).toBe(atStop);
  });

  it.skipIf(!threadsCountable)('ends a thread started ahead that its plan cannot be handed to', async () => {
    const before = await settledThreads();
    const started = startPlanner(false);
    // a function cannot cross to another thread: the plan fails at its first step
    const options = { inputs: [fixture('attributes.csv')], reading: { timezone: () => 'UTC' } as never, started };
    await expect(run(planInWorker, options)).rejects.toThrow(/could not be cloned/);
    started.release();
    expect(await settledThreads()).toBe(before);
  });

  it('describes a header many files share once, reading it once for them all', async () => {
    const header = 'external_id,zip\n';
    const inputs = [1, 2, 3].map((n) => file(`shared-${n}.csv`, `${header}u${n},${n}2345\n`));
    const encode = createEncoder(inputs);
    const described: unknown[] = [];
    let requests = 0;
    for await (const events of planChunks({ inputs, limits: { maxTotal: 1 } })) {
      for (const message of encode(events)?.value ?? []) {
        if (message.type === 'csv-header') described.push(message.keys);
        if (message.type === 'request') requests += 1;
      }
    }
    expect(requests).toBe(3);
    expect(described).toEqual([['external_id', 'zip']]);
  });
});
