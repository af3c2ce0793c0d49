// The planner's delta stage (--delta, --dedupe-events, --full): an item -> what of it is sent, what
// is left out because the server already acknowledged it (docs/upload.md "Sending only what
// changed"), and what the state learns once the server accepts what is sent.
import { dataPoints, attributePoints } from '../model/data-points.js';
import { CONTROL_FIELDS } from '../model/fields.js';
import type { Identity } from '../model/identity.js';
import type { ArrayName } from '../model/types.js';
import { activityHash, hash64, isAddingOperation, learnRecordWriter, stateUserKey, valueHash, type LearnedValue } from '../transport/resume/state-record.js';
import { openStateReader, type StateReader } from '../transport/resume/state.js';

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

/** How an item is learned once accepted (see learnRecordWriter). */
export type Learn =
  | { tag: 'none' }
  | { tag: 'attributes'; userKey: string; forgetFirst: boolean; values: LearnedValue[] }
  | { tag: 'activity'; hash: Uint8Array };

export interface DeltaVerdict {
  /** The item to send (the same object when nothing was left out), or undefined when all of it is known. */
  item: Record<string, unknown> | undefined;
  /** Data points of what was left out. */
  avoided: number;
  learn: Learn;
}

const NOTHING: Learn = { tag: 'none' };

/**
 * Users whose attributes this run has planned to send, as a Bloom filter of fixed size: a later row
 * of one of them is sent whole, since the state does not hold yet what the earlier one sent. A false
 * match sends a row whole that could have been cut (odds below 1 in 10^9 for a million users sent
 * in one run; about 1 in 500 at ten million); it never leaves out a value.
 */
function createSeenUsers(bits = 2 ** 27, probes = 7) {
  const words = new Uint32Array(bits / 32);
  const mask = bits - 1;
  const each = (key: string, fn: (bit: number) => boolean): boolean => {
    const [h1, h2] = hash64(key);
    for (let i = 0; i < probes; i += 1) if (!fn((h1 + Math.imul(i, h2 | 1)) & mask)) return false;
    return true;
  };
  let added = 0;
  return {
    add(key: string): void {
      added += 1;
      each(key, (bit) => {
        words[bit >>> 5] |= 1 << (bit & 31);
        return true;
      });
    },
    has: (key: string): boolean => added > 0 && each(key, (bit) => (words[bit >>> 5] & (1 << (bit & 31))) !== 0),
  };
}

export function createDelta(options: DeltaOptions, state: StateReader) {
  const seen = createSeenUsers();
  const compare = options.attributes && !options.full && !state.empty;

  /** The attributes item as sent: without the values the state holds (the identifier and the control fields stay). */
  const attributes = (item: Record<string, unknown>, identity: Identity): DeltaVerdict => {
    const userKey = stateUserKey(identity);
    if (userKey === undefined) return { item, avoided: 0, learn: NOTHING };
    const repeat = seen.has(userKey);
    const known = compare && !repeat ? state.user(userKey) : undefined;
    // an update for existing users only may change nothing: what it sends is forgotten, never learned
    const learnNothing = item._update_existing_only === true;
    const values: LearnedValue[] = [];
    let sent: Record<string, unknown> | undefined;
    let avoided = 0;
    let changed = 0;
    for (const key in item) {
      const value = item[key];
      let keep = true;
      if (key === identity.by || CONTROL_FIELDS.has(key)) {
        // the identifier and the control fields go with whatever is sent
      } else if (learnNothing || isAddingOperation(value)) {
        values.push({ name: key, forget: true });
        changed += 1;
      } else {
        const hash = valueHash(value);
        if (known?.holds(key, hash) === true) {
          keep = false;
          avoided += attributePoints(value);
          // the first value left out: the item is copied from here on without what is known
          sent ??= copyUpTo(item, key);
        } else {
          values.push({ name: key, hash });
          changed += 1;
        }
      }
      if (keep && sent !== undefined) sent[key] = value;
    }
    if (changed === 0) return { item: undefined, avoided, learn: NOTHING };
    seen.add(userKey);
    // a user the state may know gets its values forgotten before they are posted (see state.ts)
    const forgetFirst = repeat || known !== undefined || (!compare && !state.empty);
    return { item: sent ?? item, avoided, learn: { tag: 'attributes', userKey, forgetFirst, values } };
  };

  const activity = (kind: 'events' | 'purchases', item: Record<string, unknown>, identity: Identity): DeltaVerdict => {
    const userKey = stateUserKey(identity);
    if (userKey === undefined) return { item, avoided: 0, learn: NOTHING };
    const hash = activityHash(kind, item, userKey);
    if (state.hasActivity(hash)) return { item: undefined, avoided: dataPoints(kind, item), learn: NOTHING };
    return { item, avoided: 0, learn: { tag: 'activity', hash } };
  };

  return {
    /** A learn record for one request: each of its items' Learn, in body order. */
    recordWriter() {
      const writer = learnRecordWriter();
      return {
        add(learn: Learn | undefined): void {
          if (learn === undefined || learn.tag === 'none') writer.none();
          else if (learn.tag === 'attributes') writer.attributes(learn.userKey, learn.forgetFirst, learn.values);
          else writer.activity(learn.hash);
        },
        finish: () => writer.finish(),
      };
    },
    /** The verdict on a valid item. */
    item(kind: ArrayName, item: Record<string, unknown>, identity: Identity): DeltaVerdict {
      if (kind === 'attributes') return options.attributes ? attributes(item, identity) : { item, avoided: 0, learn: NOTHING };
      return options.activities ? activity(kind, item, identity) : { item, avoided: 0, learn: NOTHING };
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
