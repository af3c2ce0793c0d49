// The planner's delta stage (--delta, --dedupe-events, --full): an item -> what of it is sent, what
// is left out because the server already acknowledged it (docs/upload.md "Sending only what
// changed"), and what the state learns once the server accepts what is sent.
import { attributePoints, dataPoints, isBillableField } from '../model/data-points.js';
import { CONTROL_FIELDS } from '../model/fields.js';
import type { Identity } from '../model/identity.js';
import type { ArrayName } from '../model/types.js';
import {
  activityHash,
  addDigest,
  digestPart,
  hash64,
  isAddingOperation,
  mayBeSkipped,
  LEARN_NEW_USER,
  LEARN_NONE,
  learnRecordWriter,
  stateUserKey,
  valueHash,
  type LearnMark,
} from '../records/state-record.js';
import { openStateReader, type StateReader, type UserState } from '../records/state.js';

/** What a plan compares with the state, and what it asks the state to learn. */
export interface DeltaOptions {
  /** The state file (--state). */
  statePath: string;
  /** The target the state is kept for (the endpoint URL). */
  target: string;
  /** --delta: send only the attributes whose value differs from the state, and learn what is sent. */
  attributes: boolean;
  /** --full: compare nothing, send every attribute, and learn them all. */
  full: boolean;
  /** --dedupe-events: leave out events and purchases the target acknowledged, and learn those sent. */
  activities: boolean;
}

export interface DeltaVerdict {
  /** The item to send (the same object when nothing was left out), or undefined when all of it is known. */
  item: Record<string, unknown> | undefined;
  /** Data points of what was left out. */
  avoided: number;
  /** How its request's learn record takes it (see learnRecordWriter). */
  learn: LearnMark;
}

/**
 * Users whose attributes this run has planned to send, as a Bloom filter of fixed size (16 MiB)
 * whose probes for one user fall in one 64-byte block, so a row costs one cache miss, not seven: a
 * later row of one of them is sent whole, since the state does not hold yet what the earlier one
 * sent. A false match sends a row whole that could have been cut (none in 2,000,000 tries with a
 * million users planned in one run; 1 in 400 at ten million); it never leaves out a value.
 */
function createSeenUsers(blocks = 2 ** 18, probes = 7) {
  const words = new Uint32Array(blocks * 16);
  let empty = true;
  /** The bit the i-th probe sets in its block of 512: the hash's second half mixed with i (the first chose the block). */
  const bitOf = (h2: number, i: number): number => {
    let x = Math.imul(h2 ^ Math.imul(i + 1, 0x9e3779b9), 0x85ebca6b);
    x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
    return (x ^ (x >>> 16)) & 511;
  };
  return {
    /** The user's hash, which has and add take (computed once a row). */
    hash: (key: string): [number, number] => hash64(key),
    has([h1, h2]: [number, number]): boolean {
      if (empty) return false;
      const block = (h1 & (blocks - 1)) * 16;
      for (let i = 0; i < probes; i += 1) {
        const bit = bitOf(h2, i);
        if ((words[block + (bit >>> 5)] & (1 << (bit & 31))) === 0) return false;
      }
      return true;
    },
    add([h1, h2]: [number, number]): void {
      empty = false;
      const block = (h1 & (blocks - 1)) * 16;
      for (let i = 0; i < probes; i += 1) {
        const bit = bitOf(h2, i);
        words[block + (bit >>> 5)] |= 1 << (bit & 31);
      }
    },
  };
}

export function createDelta(options: DeltaOptions, state: StateReader) {
  /** Of the chunk's items, whether each sets what the state holds (found while the chunk was read ahead). */
  let unchangedInChunk = new Map<object, boolean>();
  const seen = createSeenUsers();
  const compare = options.attributes && !options.full && !state.empty;

  /**
   * Whether the item sets exactly the attributes the state holds of the user, to the same values:
   * its digest is the row's (one comparison for the usual unchanged row; see digestPart).
   */
  const sameAsState = (item: Record<string, unknown>, identity: Identity, known: UserState): boolean => {
    let digest = 0;
    for (const key in item) {
      if (key === identity.by || CONTROL_FIELDS.has(key)) continue;
      const value = item[key];
      const nameId = state.nameId(key);
      if (nameId === undefined || isAddingOperation(value)) return false;
      const [h1, h2] = valueHash(value);
      digest = addDigest(digest, digestPart(nameId, h1, h2));
    }
    return digest === known.digest;
  };

  /** The attributes item as sent: without the values the state holds (the identifier and the control fields stay). */
  const attributes = (item: Record<string, unknown>, identity: Identity): DeltaVerdict => {
    const userKey = stateUserKey(identity);
    if (userKey === undefined) return { item, avoided: 0, learn: LEARN_NONE };
    const userHash = seen.hash(userKey);
    const repeat = seen.has(userHash);
    const known = compare && !repeat ? state.user(userKey) : undefined;
    // a user the state may know gets the values a request changes forgotten before it is posted (see state.ts)
    const learn: LearnMark = repeat || known !== undefined || (!compare && !state.empty) ? { item } : LEARN_NEW_USER;
    if (known === undefined) {
      seen.add(userHash);
      return { item, avoided: 0, learn };
    }
    // an item the service may skip may change nothing: its values are always sent (and forgotten)
    const sendAll = mayBeSkipped(item, identity.by);
    if (!sendAll && (unchangedInChunk.get(item) ?? sameAsState(item, identity, known))) {
      return { item: undefined, avoided: dataPoints('attributes', item, identity.by), learn: LEARN_NONE };
    }
    let sent: Record<string, unknown> | undefined;
    let avoided = 0;
    let changed = 0;
    for (const key in item) {
      const value = item[key];
      if (key !== identity.by && !CONTROL_FIELDS.has(key)) {
        if (!sendAll && !isAddingOperation(value) && known.holds(key, valueHash(value))) {
          if (isBillableField(key, identity.by)) avoided += attributePoints(value);
          // the first value left out: the item is copied from here on without what is known
          sent ??= copyUpTo(item, key);
          continue;
        }
        changed += 1;
      }
      if (sent !== undefined) sent[key] = value;
    }
    if (changed === 0) return { item: undefined, avoided, learn: LEARN_NONE };
    seen.add(userHash);
    return { item: sent ?? item, avoided, learn };
  };

  const activity = (kind: 'events' | 'purchases', item: Record<string, unknown>, identity: Identity): DeltaVerdict => {
    const userKey = stateUserKey(identity);
    if (userKey === undefined) return { item, avoided: 0, learn: LEARN_NONE };
    const hash = activityHash(kind, item, userKey);
    if (state.hasActivity(hash)) return { item: undefined, avoided: dataPoints(kind, item), learn: LEARN_NONE };
    // an event the service may skip (a user that does not exist yet) is not remembered as stored
    return { item, avoided: 0, learn: mayBeSkipped(item, identity.by) ? LEARN_NONE : hash };
  };

  return {
    /** Whether attributes items are compared with the state (the plan then looks their users up a chunk at a time). */
    compares: compare,
    /**
     * Reads what the state holds of the users of a chunk's attributes items, together: their
     * digests, then the rows of those whose digest differs from their item's (those are compared
     * value by value).
     */
    prefetch(items: ReadonlyArray<{ kind: ArrayName; record: Record<string, unknown>; identity: Identity }>): void {
      unchangedInChunk = new Map();
      if (!compare) return;
      const users: Array<{ key: string; record: Record<string, unknown>; identity: Identity }> = [];
      for (const { kind, record, identity } of items) {
        const key = kind === 'attributes' ? stateUserKey(identity) : undefined;
        if (key !== undefined) users.push({ key, record, identity });
      }
      state.prefetch(users.map((user) => user.key));
      const differing: string[] = [];
      for (const { key, record, identity } of users) {
        const known = state.user(key);
        if (known === undefined) continue;
        const same = sameAsState(record, identity, known);
        unchangedInChunk.set(record, same);
        if (!same) differing.push(key);
      }
      state.prefetchRows(differing);
    },
    /** A learn record for one request's items. */
    recordWriter: learnRecordWriter,
    /** The verdict on a valid item. */
    item(kind: ArrayName, item: Record<string, unknown>, identity: Identity): DeltaVerdict {
      if (kind === 'attributes') return options.attributes ? attributes(item, identity) : { item, avoided: 0, learn: LEARN_NONE };
      return options.activities ? activity(kind, item, identity) : { item, avoided: 0, learn: LEARN_NONE };
    },
    close: () => state.close(),
  };
}

/** A copy of the item's fields before `key` (in their order), to which the rest of what is sent is added. */
function copyUpTo(item: Record<string, unknown>, key: string): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const k in item) {
    if (k === key) break;
    copy[k] = item[k];
  }
  return copy;
}

/** The delta stage of a plan, over the state of its target (read only). */
export function openDelta(options: DeltaOptions) {
  return createDelta(options, openStateReader(options.statePath, options.target));
}
