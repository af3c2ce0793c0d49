// The state writer's thread (state-writer.ts, state-writer-thread.ts): accepted records handed over
// in a burst are learned together, and a request's forgetting, asked for between them, keeps its
// place: what was accepted before it is learned first, then forgotten.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { learnRecordWriter, userMark } from '../../src/records/learn-record.js';
import { KEY_HASH, keyHashInto, valueHash } from '../../src/records/state-record.js';
import { openStateWriter } from '../../src/records/state-writer.js';
import { openStateReader } from '../../src/records/state.js';
import { tempDir } from '../helpers/cli.js';

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

describe('the state writer thread', () => {
  it('learns every record of a burst of hand-overs, and forgets what a request sends only after learning what was accepted before it', async () => {
    const path = join(tmp.dir, 'state.sqlite');
    const writer = await openStateWriter(path, T);
    // hand-overs of 16 records each go to the thread at once, many of them before it is done with the first
    for (let r = 0; r < 40; r += 1) {
      writer.accepted(record(Array.from({ length: 50 }, (_, i) => ({ external_id: `n${r * 50 + i}`, plan: i % 2 === 0 ? 'pro' : 'free', visits: r * 50 + i }))), new Set([0]));
      if (r !== 20) continue;
      // u0 is accepted with plan "a"; the next request, about to send plan "b", is never answered
      writer.accepted(record([{ external_id: 'u0', plan: 'a', score: 1 }]), NONE);
      await writer.sending(record([{ external_id: 'u0', plan: 'b' }], true));
    }
    await writer.close();

    const reader = openStateReader(path, T);
    const user = (key: string) => {
      keyHashInto(key);
      return reader.user(key, KEY_HASH[0]);
    };
    try {
      expect(user('e:u0')?.holds('plan', ...valueHash('a'))).toBe(false);
      expect(user('e:u0')?.holds('plan', ...valueHash('b'))).toBe(false);
      // held in doubt: a value the server may hold, which matches none
      expect(user('e:u0')?.holdsValue('plan')).toBe(true);
      expect(user('e:u0')?.holds('score', ...valueHash(1))).toBe(true);
      for (let n = 0; n < 2000; n += 1) {
        const held = user(`e:n${n}`);
        // each request's first item was refused by the server
        if (n % 50 === 0) expect(held, `n${n}`).toBeUndefined();
        else expect(held?.holds('visits', ...valueHash(n)), `n${n}`).toBe(true);
      }
    } finally {
      reader.close();
    }
  });
});
