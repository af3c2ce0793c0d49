// A map from whole-number keys to values, for the keys of the users in flight: open addressing
// with linear probing over a typed array, deleting by shifting entries back rather than leaving
// markers. Unlike a Map, whose table is rebuilt as keys come and go (millions of users pass
// through, a few thousand at a time), it allocates only when it grows.

const EMPTY = Infinity;

export class KeyTable<V> {
  private keys: Float64Array;
  private values: Array<V | undefined>;
  private mask: number;
  /** 32 less the bits of a slot number: a slot is the top bits of a multiplicative hash. */
  private shift: number;
  #size = 0;

  constructor(capacity = 1024) {
    let size = 16;
    while (size < capacity) size *= 2;
    this.keys = new Float64Array(size).fill(EMPTY);
    this.values = new Array<V | undefined>(size).fill(undefined);
    this.mask = size - 1;
    this.shift = 32 - Math.log2(size);
  }

  get size(): number {
    return this.#size;
  }

  /** Keys are whole numbers in the safe range. */
  get(key: number): V | undefined {
    for (let i = this.slot(key); ; i = (i + 1) & this.mask) {
      const at = this.keys[i];
      if (at === key) return this.values[i];
      if (at === EMPTY) return undefined;
    }
  }

  set(key: number, value: V): void {
    for (let i = this.slot(key); ; i = (i + 1) & this.mask) {
      const at = this.keys[i];
      if (at === key) {
        this.values[i] = value;
        return;
      }
      if (at === EMPTY) {
        this.keys[i] = key;
        this.values[i] = value;
        this.#size += 1;
        if (this.#size * 2 > this.keys.length) this.grow();
        return;
      }
    }
  }

  delete(key: number): boolean {
    let i = this.slot(key);
    for (; ; i = (i + 1) & this.mask) {
      if (this.keys[i] === key) break;
      if (this.keys[i] === EMPTY) return false;
    }
    this.#size -= 1;
    // close the gap: move back each later entry of the run that may not sit past it
    for (let j = (i + 1) & this.mask; this.keys[j] !== EMPTY; j = (j + 1) & this.mask) {
      const home = this.slot(this.keys[j]);
      // the entry at j may move to i when its home is not within (i, j] going round
      if (i <= j ? home <= i || home > j : home <= i && home > j) {
        this.keys[i] = this.keys[j];
        this.values[i] = this.values[j];
        i = j;
      }
    }
    this.keys[i] = EMPTY;
    this.values[i] = undefined;
    return true;
  }

  private slot(key: number): number {
    // keys may be hashes or small counters: mix the bits so neighbours spread out
    const low = key | 0;
    const high = (key / 0x100000000) | 0;
    return Math.imul(low ^ Math.imul(high, 0x85ebca6b), 0x9e3779b1) >>> this.shift;
  }

  private grow(): void {
    const { keys, values } = this;
    this.keys = new Float64Array(keys.length * 2).fill(EMPTY);
    this.values = new Array<V | undefined>(keys.length * 2).fill(undefined);
    this.mask = this.keys.length - 1;
    this.shift -= 1;
    this.#size = 0;
    keys.forEach((key, i) => {
      if (key !== EMPTY) this.set(key, values[i] as V);
    });
  }
}
