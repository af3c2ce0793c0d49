// Keeps one user's requests in file order: a request waits until every earlier request that
// touches one of its users has settled, so no two requests for one user are ever in flight.

export interface Turn {
  /** Resolves when every earlier request sharing a key has settled. */
  ready: Promise<void>;
  /** Settles this request: later requests for its keys may go. */
  done(): void;
}

export interface UserOrder {
  /** Takes a place in line for these keys; call in the order the requests were planned. */
  enter(keys: readonly string[]): Turn;
  /** Keys some request still holds (for tests and diagnostics). */
  readonly busyKeys: number;
}

const READY = Promise.resolve();

/**
 * Keys are held as 30-bit hashes: a Map of small integers is cheaper than one of fresh strings
 * (which it would also keep alive into the old generation). Two users sharing a hash only makes
 * the later request wait for an earlier one it need not: order is kept, never broken.
 */
export function keyHash(key: string): number {
  let h = 0x811c9dc5; // FNV-1a
  for (let i = 0; i < key.length; i += 1) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return h & 0x3fffffff;
}

export function createUserOrder(): UserOrder {
  /** The last request to enter for each key: its settling frees the key. */
  const tails = new Map<number, Promise<void>>();

  return {
    enter(keys) {
      let done!: () => void;
      const settled = new Promise<void>((resolve) => {
        done = resolve;
      });
      const before: Promise<void>[] = [];
      const hashes = keys.map(keyHash);
      for (const hash of hashes) {
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
          for (const hash of hashes) if (tails.get(hash) === settled) tails.delete(hash);
          done();
        },
      };
    },
    get busyKeys() {
      return tails.size;
    },
  };
}
