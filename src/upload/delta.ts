// The planner's delta stage (--delta, --dedupe-events, --full): an item -> what of it is sent, what
// is left out because the server already acknowledged it (docs/upload.md "Sending only what
// changed"), and what the state learns once the server accepts what is sent.
import { setsNoField } from '../mapping/check.js';
import { attributePoints, dataPoints, isBillableField } from '../model/data-points.js';
import type { Identity } from '../model/identity.js';
import type { ArrayName } from '../model/types.js';
import {
  activityHash,
  addDigest,
  digestPart,
  forEachLearnedValue,
  HASH,
  hasEmptyProperties,
  IN_DOUBT,
  isAddingOperation,
  isControlField,
  isForgotten,
  identityKeyHashInto,
  KEY_HASH,
  mayBeSkipped,
  stateUserKey,
  userPart,
  valueHashInto,
} from '../records/state-record.js';
import { LEARN_NONE, type LearnMark } from '../records/learn-record.js';
import { learnRecordWriter, userMark, type HeldValues } from '../records/learn-record-writer.js';
import { openStateReader, type StateReader, type UserState } from '../records/state.js';
import { rowsIn } from './rows-guess.js';
import { createSeenUsers } from './seen-users.js';
import { createSentInRun, NOT_SENT, SENT } from './sent-in-run.js';

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

/** Per attribute, of the items a --delta plan compared: values sent as changed, left out as unchanged, sent as null (cleared). */
export type ColumnCounts = Record<string, [changed: number, unchanged: number, cleared: number]>;

export interface DeltaVerdict {
  /** The item to send (the same object when nothing was left out), or undefined when all of it is known. */
  item: Record<string, unknown> | undefined;
  /** Data points of what was left out. */
  avoided: number;
  /** How its request's learn record takes it (see learnRecordWriter). */
  learn: LearnMark;
}

export function createDelta(options: DeltaOptions, state: StateReader, users?: number) {
  // made only for --delta: --dedupe-events alone compares no user's attributes
  const seen = options.attributes ? createSeenUsers(users) : undefined!;
  const sentInRun = options.attributes ? createSentInRun() : undefined!;
  const compare = options.attributes && !options.full && !state.empty;
  /** The chunk's counts per attribute (takeColumns). */
  let columns = new Map<string, [number, number, number]>();
  /** Later rows that set an attribute to another value than an earlier row of the user in the run sent, since takeRestated(). */
  let restated = 0;
  /** The last item's keys in order, and their counts (undefined: not an attribute): the rows of a file name their attributes in one order. */
  const lastKeys: string[] = [];
  const lastCounts: Array<[number, number, number] | undefined> = [];
  const countsOf = (key: string, place: number): [number, number, number] | undefined => {
    if (lastKeys[place] === key) return lastCounts[place];
    let counts: [number, number, number] | undefined;
    if (!isControlField(key)) {
      counts = columns.get(key);
      if (counts === undefined) columns.set(key, (counts = [0, 0, 0]));
    }
    lastKeys[place] = key;
    lastCounts[place] = counts;
    return counts;
  };
  /** Counts what of an item's attributes is sent (`sent`: the item as sent, or undefined), as changed or cleared, and what is left out. */
  const countColumns = (item: Record<string, unknown>, sent: Record<string, unknown> | undefined, by: string): void => {
    let place = 0;
    for (const key in item) {
      const at = place++;
      if (key === by) continue;
      const counts = countsOf(key, at);
      if (counts === undefined) continue;
      // (the item's own value is read as the loop reads it, from its keys' cache)
      if (sent === item) counts[item[key] === null ? 2 : 0] += 1;
      else if (sent === undefined || !(key in sent)) counts[1] += 1;
      else counts[sent[key] === null ? 2 : 0] += 1;
    }
  };

  /**
   * The digest the user's row in the state has when it holds exactly this item's attributes, to the
   * same values (see rowDigest); undefined when it cannot (a name the state never held, an
   * operation that adds).
   */
  const itemDigest = (item: Record<string, unknown>, identity: Identity, ofUser: number, emptied: readonly string[] | undefined): number | undefined => {
    let digest = ofUser;
    for (const key in item) {
      if (key === identity.by || isControlField(key)) continue;
      // an emptied cell changes nothing of a row that holds no value of it (one that holds any has another digest)
      if (emptied?.includes(key) === true) continue;
      const value = item[key];
      const nameId = state.nameId(key);
      if (nameId === undefined || isAddingOperation(value)) return undefined;
      valueHashInto(value);
      digest = addDigest(digest, digestPart(nameId, HASH[0], HASH[1]));
    }
    return digest;
  };

  /**
   * Notes what an item sends of the user whose key's hash KEY_HASH holds (their first row of the
   * run, or a later one; `row`: their row in the state file, when the plan found it), for their later
   * rows; returns the item's learn mark, which finds its values hashed there. `first`: the user's
   * first row of the run (the filter of users seen said so: it never misses one), which the filter
   * is given (a later row's user, it finds already).
   */
  const remember = (sent: Record<string, unknown>, identity: Identity, whole: boolean, known: boolean, row = 0, first = false): LearnMark => {
    // an item that sets nothing teaches that its user exists, unless the service may skip it
    if (mayBeSkipped(sent, identity.by) && setsNoField(sent, identity.by)) return LEARN_NONE;
    if (first) seen.add(KEY_HASH[0], KEY_HASH[1], KEY_HASH[2]);
    const at = sentInRun.begin(whole, row, first);
    forEachLearnedValue(sent, identity.by, sentInRun.add);
    return userMark(known, sentInRun.end() ? at : -1);
  };

  /**
   * The item without the values `same` finds unchanged (the identifier and the control fields
   * stay); undefined when nothing is left to send. An item the service may skip changes nothing it
   * can be sure of: all of it is sent, but the nulls of emptied cells (`emptied`), which `same` is
   * asked of all the same.
   */
  const cut = (
    item: Record<string, unknown>,
    identity: Identity,
    same: (key: string, h1: number, h2: number) => boolean,
    emptied?: readonly string[],
  ): { sent: Record<string, unknown> | undefined; avoided: number } => {
    const sendAll = mayBeSkipped(item, identity.by);
    let sent: Record<string, unknown> | undefined;
    let avoided = 0;
    let changed = 0;
    for (const key in item) {
      const value = item[key];
      if (key !== identity.by && !isControlField(key)) {
        const compared = !sendAll || emptied?.includes(key) === true;
        if (compared && !isAddingOperation(value) && (valueHashInto(value), same(key, HASH[0], HASH[1]))) {
          if (isBillableField(key, identity.by)) avoided += attributePoints(value);
          // the first value left out: the item is copied from here on without what is known
          sent ??= copyUpTo(item, key);
          continue;
        }
        changed += 1;
      }
      if (sent !== undefined) sent[key] = value;
    }
    return { sent: changed === 0 ? undefined : (sent ?? item), avoided };
  };

  /** A later row of a user this run sends (KEY_HASH: their key's hash): compared with what the run sends of them, and what the state held of the rest. */
  const laterRow = (item: Record<string, unknown>, identity: Identity, emptied: readonly string[] | undefined): DeltaVerdict => {
    const way = options.full ? -1 : sentInRun.find(KEY_HASH[0], KEY_HASH[1]);
    // one the run no longer holds (or --full): sent whole, as is
    if (way === -1) return { item, avoided: 0, learn: remember(item, identity, false, true) };
    const keyHash = KEY_HASH[0];
    // whole: what the run has not sent of the user is as the state holds it (read when first needed)
    const whole = sentInRun.whole(way);
    let known: UserState | undefined | null = whole && state.mayKnow(keyHash) ? null : undefined;
    let restates = false;
    const same = (key: string, h1: number, h2: number): boolean => {
      const { mode, same } = sentInRun.sent(way, key, h1, h2);
      if (mode === SENT) restates ||= !same;
      if (mode !== NOT_SENT) return same;
      if (known === null) known = state.user(stateUserKey(identity)!, keyHash);
      // an emptied cell clears only a value held (not knowing, it is sent)
      if (emptied?.includes(key) === true) return whole && known?.holdsValue(key) !== true;
      return known?.holds(key, h1, h2) === true;
    };
    const { sent, avoided } = cut(item, identity, same, emptied);
    if (restates) restated += 1;
    if (sent === undefined) return { item: undefined, avoided, learn: LEARN_NONE };
    return { item: sent, avoided, learn: remember(sent, identity, sentInRun.whole(way), true, sentInRun.row(way)) };
  };

  /**
   * The attributes item as sent: without the values the state holds, or the run sends already. The
   * null of an emptied cell (--empty-as-null: `emptied`) is sent only where a value is held, to clear it.
   */
  const attributes = (item: Record<string, unknown>, identity: Identity, emptied: readonly string[] | undefined): DeltaVerdict => {
    // KEY_HASH holds the user's key's hash from here on (nothing else hashes a key meanwhile)
    if (!identityKeyHashInto(identity)) return { item, avoided: 0, learn: LEARN_NONE };
    sentInRun.touch(KEY_HASH[0]);
    if (seen.has(KEY_HASH[0], KEY_HASH[1], KEY_HASH[2])) return laterRow(item, identity, emptied);
    // a user the state may know gets what a request sends of them forgotten before it is posted (see state.ts)
    const mayKnow = !state.empty && state.mayKnow(KEY_HASH[0]);
    if (!compare || !mayKnow) {
      // the state holds no value of the user for an emptied cell to clear (--full sends every attribute)
      const { sent, avoided } = emptied === undefined || options.full ? { sent: item, avoided: 0 } : withoutNames(item, emptied, identity.by);
      return { item: sent, avoided, learn: remember(sent, identity, true, mayKnow, 0, true) };
    }
    // one look for the usual unchanged row: its digest is the row's
    const skippable = mayBeSkipped(item, identity.by);
    const digest = skippable ? undefined : itemDigest(item, identity, userPart(), emptied);
    if (digest !== undefined && state.hasRow(KEY_HASH[0], digest)) return { item: undefined, avoided: dataPoints('attributes', item, identity.by), learn: LEARN_NONE };
    const known = state.user(stateUserKey(identity)!, KEY_HASH[0]);
    const same =
      emptied === undefined
        ? (name: string, h1: number, h2: number) => known?.holds(name, h1, h2) === true
        : (name: string, h1: number, h2: number) => (emptied.includes(name) ? known?.holdsValue(name) !== true : known?.holds(name, h1, h2) === true);
    const { sent, avoided } = cut(item, identity, same, emptied);
    if (sent === undefined) return { item: undefined, avoided, learn: LEARN_NONE };
    const learn = remember(sent, identity, true, known !== undefined, known?.row, true);
    // what the state learns no value of is held in doubt: where the row holds all the item sends so
    // already (a re-run of an alias file, of increments), there is nothing to forget before it is posted nor to learn
    if (known !== undefined && learnsNothing(sent, identity.by, skippable, known)) return { item: sent, avoided, learn: LEARN_NONE };
    return { item: sent, avoided, learn };
  };

  const activity = (kind: 'events' | 'purchases', item: Record<string, unknown>, identity: Identity): DeltaVerdict => {
    const userKey = stateUserKey(identity);
    if (userKey === undefined) return { item, avoided: 0, learn: LEARN_NONE };
    const hash = activityHash(kind, item, userKey);
    // a state an earlier version wrote events to learned `"properties": {}` as written
    if (state.hasActivity(hash) || (state.activitiesAsBefore && hasEmptyProperties(item) && state.hasActivity(activityHash(kind, item, userKey, true)))) return { item: undefined, avoided: dataPoints(kind, item), learn: LEARN_NONE };
    // an event the service may skip (a user that does not exist yet) is not remembered as stored
    return { item, avoided: 0, learn: mayBeSkipped(item, identity.by) ? LEARN_NONE : hash };
  };

  const records = learnRecordWriter(sentInRun as HeldValues | undefined);
  return {
    /** The writer of a request's learn record (their values as hashed here): one, whose finish() starts the next record. */
    recordWriter: () => records,
    /** The verdict on a valid item; `emptied`: the attributes it sets to null because their cells were empty. */
    item(kind: ArrayName, item: Record<string, unknown>, identity: Identity, emptied?: readonly string[]): DeltaVerdict {
      if (kind !== 'attributes') return options.activities ? activity(kind, item, identity) : { item, avoided: 0, learn: LEARN_NONE };
      if (!options.attributes) return { item, avoided: 0, learn: LEARN_NONE };
      const verdict = attributes(item, identity, emptied);
      countColumns(item, verdict.item, identity.by);
      return verdict;
    },
    /**
     * The rows since the last call that set an attribute of their user to another value than an
     * earlier row of the run sent (a user named again, changed in the file itself): each run sends
     * both, since the state holds the last value, which the earlier row's differs from.
     */
    takeRestated(): number {
      const taken = restated;
      restated = 0;
      return taken;
    },
    /** The counts per attribute since the last call (undefined when none). */
    takeColumns(): ColumnCounts | undefined {
      if (columns.size === 0) return undefined;
      const taken = Object.fromEntries(columns);
      columns = new Map();
      lastKeys.length = 0;
      lastCounts.length = 0;
      return taken;
    },
    close: () => state.close(),
  };
}

/** Whether each attribute the item sends is one the state learns no value of (isForgotten) and the user's row holds in doubt already (IN_DOUBT). */
function learnsNothing(item: Record<string, unknown>, by: string, skippable: boolean, known: UserState): boolean {
  const merging = item._merge_objects === true;
  for (const key in item) {
    if (key === by || isControlField(key)) continue;
    if (!isForgotten(item[key], skippable, merging) || !known.holds(key, IN_DOUBT[0], IN_DOUBT[1])) return false;
  }
  return true;
}

/** The item without the attributes `names`, and the data points they would have spent. */
function withoutNames(item: Record<string, unknown>, names: readonly string[], by: string): { sent: Record<string, unknown>; avoided: number } {
  const sent: Record<string, unknown> = {};
  let avoided = 0;
  for (const key in item) {
    if (!names.includes(key)) sent[key] = item[key];
    else if (isBillableField(key, by)) avoided += attributePoints(item[key]);
  }
  return { sent, avoided };
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

/** The delta stage of a plan of `inputs` (`shards`: the rows are parted among so many, --shard), over the state of its target (read only). */
export function openDelta(options: DeltaOptions, inputs: readonly string[] = [], shards = 1) {
  return createDelta(options, openStateReader(options.statePath, options.target), options.attributes ? rowsIn(inputs, shards) : undefined);
}
