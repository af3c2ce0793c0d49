// Keeps one user's requests in file order: a request waits until every earlier request that
// touches one of its users has settled, so no two requests for one user are ever in flight.
import { KeyTable } from './key-table.js';

export interface Turn {
  /** Resolves when every earlier request sharing a key has settled. */
  ready: Promise<void>;
  /** Settles this request: later requests for its keys may go. */
  done(): void;
}

export interface UserOrder {
  /** Takes a place in line for these keys; call in the order the requests were planned. */
  enter(keys: ArrayLike<number>): Turn;
  /** Keys some request still holds (for tests and diagnostics). */
  readonly busyKeys: number;
}

const READY = Promise.resolve();

export function createUserOrder(): UserOrder {
  /** The last request to enter for each key: its settling frees the key. */
  const tails = new KeyTable<Promise<void>>();

  return {
    enter(keys) {
      let done!: () => void;
      const settled = new Promise<void>((resolve) => {
        done = resolve;
      });
      const before: Promise<void>[] = [];
      for (let i = 0; i < keys.length; i += 1) {
        const hash = keys[i];
        const tail = tails.get(hash);
        // a key listed twice finds this request's own promise: never wait on oneself
        if (tail === settled) continue;
        if (tail !== undefined) before.push(tail);
        tails.set(hash, settled);
      }
      let finished = false;
      return {
        ready: before.length === 0 ? READY : before.length === 1 ? before[0] : Promise.all(before).then(() => undefined),
        done() {
          if (finished) return;
          finished = true;
          for (let i = 0; i < keys.length; i += 1) if (tails.get(keys[i]) === settled) tails.delete(keys[i]);
          done();
        },
      };
    },
    get busyKeys() {
      return tails.size;
    },
  };
}
