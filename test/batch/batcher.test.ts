import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createBatcher, soloBodyBytes, type BatchEntry, type BatcherOptions } from '../../src/batch/batcher.js';
import { textHash } from '../../src/model/identity.js';
import { limitViolation, resolveLimits } from '../../src/model/limits.js';
import type { PlannedRequest } from '../../src/model/request.js';
import { ARRAY_NAMES, type ArrayName } from '../../src/model/types.js';

const RANK: Record<ArrayName, number> = { attributes: 0, events: 1, purchases: 2 };

function entry(n: number, kind: ArrayName, user = `u${n}`, extra: Record<string, unknown> = {}): BatchEntry {
  const item = { external_id: user, n, ...extra };
  return { kind, item, origin: { file: 'f', line: n, row: null }, userKey: textHash(`external_id:${user}`), bytes: Buffer.byteLength(JSON.stringify(item)) };
}

function run(entries: BatchEntry[], options: BatcherOptions): PlannedRequest[] {
  const batcher = createBatcher(options);
  const out: PlannedRequest[] = [];
  for (const e of entries) out.push(...batcher.add(e));
  out.push(...batcher.finish());
  return out;
}

/** Every item as the server would apply them: request by request, attributes then events then purchases. */
function applied(requests: PlannedRequest[]): Array<{ line: number; user: string; kind: ArrayName }> {
  const order: Array<{ line: number; user: string; kind: ArrayName }> = [];
  for (const request of requests) {
    for (const kind of ARRAY_NAMES) {
      for (const [i, origin] of request.origins[kind].entries()) {
        order.push({ line: origin.line, user: (request.body[kind]?.[i] as { external_id: string }).external_id, kind });
      }
    }
  }
  return order;
}

const counts = (request: PlannedRequest) => ({
  attributes: request.body.attributes?.length ?? 0,
  events: request.body.events?.length ?? 0,
  purchases: request.body.purchases?.length ?? 0,
});

describe('createBatcher', () => {
  it('fills requests of 50 under mau, items of every kind together, numbered in order', () => {
    const entries = Array.from({ length: 130 }, (_, n) => entry(n, ARRAY_NAMES[n % 3]));
    const requests = run(entries, { limits: resolveLimits('mau') });
    expect(requests.map((r) => counts(r).attributes + counts(r).events + counts(r).purchases)).toEqual([50, 50, 30]);
    expect(requests.map((r) => r.seq)).toEqual([0, 1, 2]);
    expect(requests[0].body.events?.length).toBeGreaterThan(0);
    expect(requests[0].origins.attributes.length).toBe(requests[0].body.attributes?.length);
  });

  it('under legacy, lets a file of attributes and a file of events share requests of 75 + 75', () => {
    const entries = [...Array.from({ length: 300 }, (_, n) => entry(n, 'attributes')), ...Array.from({ length: 300 }, (_, n) => entry(1000 + n, 'events'))];
    const requests = run(entries, { limits: resolveLimits('legacy') });
    expect(requests).toHaveLength(4);
    for (const r of requests) expect(counts(r)).toEqual({ attributes: 75, events: 75, purchases: 0 });
  });

  it('takes explicit numbers', () => {
    const entries = Array.from({ length: 10 }, (_, n) => entry(n, 'attributes'));
    expect(run(entries, { limits: { maxTotal: 4 } }).map((r) => r.body.attributes?.length)).toEqual([4, 4, 2]);
  });

  it('lists each user of a request once in userKeys', () => {
    const entries = [entry(1, 'attributes', 'a'), entry(2, 'events', 'a'), entry(3, 'attributes', 'b')];
    expect(run(entries, { limits: resolveLimits('mau') })[0].userKeys).toEqual([textHash('external_id:a'), textHash('external_id:b')]);
  });

  it('never lets an earlier item of a user apply after a later one: an attribute after an event of the same user goes to a later request', () => {
    const entries = [entry(1, 'events', 'a'), entry(2, 'attributes', 'b'), entry(3, 'attributes', 'a'), entry(4, 'attributes', 'c')];
    const requests = run(entries, { limits: resolveLimits('mau') });
    expect(requests).toHaveLength(2);
    expect(requests[0].origins.attributes.map((o) => o.line)).toEqual([2, 4]);
    expect(requests[0].origins.events.map((o) => o.line)).toEqual([1]);
    expect(requests[1].origins.attributes.map((o) => o.line)).toEqual([3]);
  });

  it('keeps a request body within the byte limit', () => {
    const big = 'x'.repeat(250);
    const entries = Array.from({ length: 40 }, (_, n) => entry(n, 'attributes', `u${n}`, { a: big, b: big, c: big, d: big }));
    const max = 10_000;
    const requests = run(entries, { limits: resolveLimits('mau'), maxBodyBytes: max });
    expect(requests.length).toBeGreaterThan(1);
    for (const r of requests) expect(Buffer.byteLength(JSON.stringify(r.body))).toBeLessThanOrEqual(max);
    expect(requests.flatMap((r) => r.origins.attributes.map((o) => o.line))).toEqual(entries.map((e) => e.origin.line));
  });

  it('gives out requests that fill by bytes once the open ones hold more than a body: large items are not held 32 requests deep', () => {
    const big = 'x'.repeat(1000);
    const entries = Array.from({ length: 200 }, (_, n) => entry(n, 'attributes', `u${n}`, { a: big, b: big, c: big }));
    const max = 10_000; // three items a request
    const batcher = createBatcher({ limits: resolveLimits('mau'), maxBodyBytes: max });
    let held = 0;
    let mostHeld = 0;
    for (const e of entries) {
      held += 1;
      for (const request of batcher.add(e)) held -= request.origins.attributes.length;
      mostHeld = Math.max(mostHeld, held);
    }
    // one request's worth open, and the item that did not fit it
    expect(mostHeld).toBeLessThanOrEqual(4);
    const all = batcher.finish();
    expect(held - all.reduce((sum, r) => sum + r.origins.attributes.length, 0)).toBe(0);
  });

  it('soloBodyBytes is the size of a body holding just that item', () => {
    const e = entry(1, 'purchases');
    expect(soloBodyBytes(e)).toBe(Buffer.byteLength(JSON.stringify({ purchases: [e.item] })));
  });

  it('property: every item once, within limits and bytes, each user in file order, near the fewest requests', () => {
    const kind = fc.constantFrom<ArrayName>('attributes', 'events', 'purchases');
    const arbitrary = fc.record({
      items: fc.array(fc.record({ kind, user: fc.integer({ min: 0, max: 12 }), size: fc.integer({ min: 0, max: 300 }) }), { maxLength: 400 }),
      profile: fc.constantFrom<'mau' | 'legacy'>('mau', 'legacy'),
      maxBodyBytes: fc.constantFrom(2_000, 20_000, 4_000_000),
      window: fc.integer({ min: 1, max: 40 }),
    });
    fc.assert(
      fc.property(arbitrary, ({ items, profile, maxBodyBytes, window }) => {
        const entries = items.map((it, n) => entry(n, it.kind, `user${it.user}`, { pad: 'p'.repeat(it.size) }));
        const limits = resolveLimits(profile);
        const requests = run(entries, { limits, maxBodyBytes, window });
        expect(requests.map((r) => r.seq)).toEqual(requests.map((_, i) => i));
        const order = applied(requests);
        expect(order.map((o) => o.line).sort((a, b) => a - b)).toEqual(entries.map((e) => e.origin.line));
        for (const r of requests) {
          expect(limitViolation(counts(r), limits)).toBeUndefined();
          expect(Buffer.byteLength(JSON.stringify(r.body))).toBeLessThanOrEqual(maxBodyBytes);
          const users = new Set(ARRAY_NAMES.flatMap((k) => (r.body[k] ?? []).map((i) => textHash(`external_id:${(i as { external_id: string }).external_id}`))));
          expect([...r.userKeys].sort()).toEqual([...users].sort());
        }
        for (let u = 0; u <= 12; u += 1) {
          const lines = order.filter((o) => o.user === `user${u}`).map((o) => o.line);
          expect(lines).toEqual([...lines].sort((a, b) => a - b));
        }
        if (profile === 'mau' && maxBodyBytes === 4_000_000 && items.every((it) => RANK[it.kind] === 0)) {
          expect(requests.length).toBe(Math.ceil(items.length / 50));
        }
      }),
      { numRuns: 300 },
    );
  });
});
