// The newest row of each profile in an activity table: where the profile's chain of rows starts
// (schema.ts). A request's 50 events may name 50 profiles, and writing each one's head with its rows
// would dirty a page of the heads table per profile, each page written to the log at commit: more
// than the rows themselves cost. So the heads of the rows past the table's mark are held here, and
// written in sweeps: once more than 262,144 rows are past the mark, the heads held then are
// written a slice at a time (one slice a transaction) in profile order, so each page of the heads
// table is written about once a sweep; when the sweep ends the mark moves to the last row it began
// with. A store that opens the file reads the heads past the mark from the rows themselves (a few
// hundred thousand at most), and reads them again after a rollback, or after another connection wrote.
import type Database from '../sqlite.js';
import type { ActivityTable } from './schema.js';

/** When heads are written: how many rows past the mark begin a sweep, and how many heads a slice writes. */
export interface SweepSizes {
  tailRows: number;
  slice: number;
}

/** A sweep begins 262,144 rows past the mark; a slice (a few milliseconds of a transaction) writes 4,096 heads. */
export const SWEEP_SIZES: SweepSizes = { tailRows: 262_144, slice: 4_096 };
/** Most written heads kept in memory; past this it starts over (a miss only costs a query). */
const WRITTEN_LIMIT = 200_000;

/**
 * The column a row counts as, where a row is not one: a purchase of quantity X counts as X purchases
 * (decisions.md "Events and purchases"). The count is kept beside the rows', under `<table>:counted`.
 */
export const COUNTED_AS: Record<ActivityTable, string | undefined> = { events: undefined, purchases: 'quantity' };

interface Sweep {
  /** The profiles whose heads were held when it began, in order. */
  profiles: Float64Array;
  /** How many of them are written. */
  done: number;
  /** The table's last row when it began: the mark once it ends. */
  through: number;
  /** The rows past the mark when it began (all up to `through`), and what they count as. */
  rows: number;
  counted: number;
}

interface Loaded {
  /** Profile -> its newest row, for the profiles with rows past the mark. */
  pending: Map<number, number>;
  /** Heads this store wrote to the heads table, or read from it. */
  written: Map<number, number>;
  /** Every row up to this id has its profile's head in the heads table (or a later one pending). */
  mark: number;
  /** How many rows there are up to the mark, and past it. */
  rows: { marked: number; past: number };
  /** What they count as (COUNTED_AS); up to the mark, read from the file when first asked if it holds no count at the mark. */
  counted: { marked: number | undefined; past: number };
  /** The id the next row gets: SQLite's, one past the table's last. */
  nextId: number;
  /** The mark was above the table's last row (its rows were deleted), and is to be written lower. */
  markLowered: boolean;
  sweep: Sweep | undefined;
  /** This store added rows: it is the file's writer (one emulator a file), and writes what it holds at close. */
  added: boolean;
}

function remember(written: Map<number, number>, profileId: number, head: number): void {
  if (written.size >= WRITTEN_LIMIT) written.clear();
  written.set(profileId, head);
}

/** The heads of one activity table. */
export class ActivityHeads {
  private loaded: Loaded | undefined;
  private readonly stmt;
  private readonly countedAs: string | undefined;
  private readonly countedName: string;

  constructor(
    db: Database.Database,
    private readonly table: ActivityTable,
    private readonly sizes: SweepSizes = SWEEP_SIZES,
  ) {
    this.countedAs = COUNTED_AS[table];
    this.countedName = `${table}:counted`;
    this.stmt = {
      mark: db.prepare<[string], { through: number; rows: number }>('SELECT through, rows FROM activity_marks WHERE name = ?'),
      setMark: db.prepare<[string, number, number]>(
        'INSERT INTO activity_marks (name, through, rows) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET through = excluded.through, rows = excluded.rows',
      ),
      tail: db.prepare<[number], [number, number, number, number]>(
        `SELECT profile_id, MAX(id), COUNT(*), ${this.countedAs === undefined ? 'COUNT(*)' : `SUM(${this.countedAs})`} FROM ${table} WHERE id > ? GROUP BY profile_id`,
      ).raw(),
      countedTo: db.prepare<[number], number>(`SELECT TOTAL(${this.countedAs ?? 1}) FROM ${table} WHERE id <= ?`).pluck(),
      maxId: db.prepare<[], number | null>(`SELECT MAX(id) FROM ${table}`).pluck(),
      head: db.prepare<[number], number>(`SELECT last_id FROM ${table}_heads WHERE profile_id = ?`).pluck(),
      write: db.prepare<[string]>(
        `INSERT INTO ${table}_heads (profile_id, last_id) SELECT value ->> 0, value ->> 1 FROM json_each(?) WHERE true
         ON CONFLICT (profile_id) DO UPDATE SET last_id = excluded.last_id`,
      ),
      remove: db.prepare<[string]>(`DELETE FROM ${table}_heads WHERE profile_id IN (SELECT value FROM json_each(?))`),
    };
  }

  private state(): Loaded {
    if (this.loaded === undefined) {
      const { through: written, rows: marked } = this.stmt.mark.get(this.table) ?? { through: 0, rows: 0 };
      const lastId = this.stmt.maxId.get() ?? 0;
      // when the newest rows were deleted, the next ones take their ids: the mark goes below them
      const mark = Math.min(written, lastId);
      const pending = new Map<number, number>();
      let past = 0;
      let countedPast = 0;
      for (const [profileId, last, rows, counted] of this.stmt.tail.all(mark)) {
        pending.set(profileId, last);
        past += rows;
        countedPast += counted;
      }
      const rows = { marked, past };
      const countedMark = this.countedAs === undefined ? undefined : this.stmt.mark.get(this.countedName);
      const counted = { marked: this.countedAs === undefined ? marked : countedMark?.through === mark ? countedMark.rows : undefined, past: countedPast };
      this.loaded = { pending, written: new Map(), mark, rows, counted, nextId: lastId + 1, markLowered: mark < written, sweep: undefined, added: false };
    }
    return this.loaded;
  }

  /** How many rows the table holds. */
  rowCount(): number {
    const { rows } = this.state();
    return rows.marked + rows.past;
  }

  /** What the table's rows count as: their number, or for purchases the sum of their quantities. */
  countedTotal(): number {
    const state = this.state();
    return this.countedMarked(state) + state.counted.past;
  }

  /** What the rows up to the mark count as; read once from them when the file holds no count at the mark (an earlier build wrote it). */
  private countedMarked(state: Loaded): number {
    state.counted.marked ??= this.stmt.countedTo.get(state.mark) as number;
    return state.counted.marked;
  }

  /** Writes the mark, with the rows up to it and (when known) what they count as. */
  private writeMark(state: Loaded): void {
    this.stmt.setMark.run(this.table, state.mark, state.rows.marked);
    if (this.countedAs !== undefined && state.counted.marked !== undefined) this.stmt.setMark.run(this.countedName, state.mark, state.counted.marked);
  }

  /** The id of the profile's newest row; undefined when it has none. */
  headOf(profileId: number): number | undefined {
    const state = this.state();
    return state.pending.get(profileId) ?? this.writtenHead(state, profileId);
  }

  /** The profile's head in the heads table. */
  private writtenHead(state: Loaded, profileId: number): number | undefined {
    const known = state.written.get(profileId);
    if (known !== undefined) return known;
    const head = this.stmt.head.get(profileId);
    if (head !== undefined) remember(state.written, profileId, head);
    return head;
  }

  /**
   * The ids new rows of these profiles get (in order, from firstId), and each row's prev (the
   * profile's row before it); they become the profiles' heads. `counted`: what the rows count as
   * together (COUNTED_AS), when not one each. The caller inserts the rows, or calls forget().
   */
  assign(profileIds: readonly number[], counted = profileIds.length): { firstId: number; prevs: (number | null)[] } {
    const state = this.state();
    if (state.markLowered) {
      // before any row takes an id at or below the mark written
      this.writeMark(state);
      state.markLowered = false;
    }
    state.added = true;
    const firstId = state.nextId;
    const prevs = profileIds.map((profileId, i) => {
      const prev = state.pending.get(profileId) ?? this.writtenHead(state, profileId) ?? null;
      state.pending.set(profileId, firstId + i);
      return prev;
    });
    state.nextId += profileIds.length;
    state.rows.past += profileIds.length;
    state.counted.past += counted;
    return { firstId, prevs };
  }

  /**
   * Run at the end of a transaction: begins a sweep when more than tailRows rows are past the mark,
   * and writes one slice of it (all it takes to come back under twice that, after a large load).
   */
  settle(): void {
    const state = this.loaded;
    if (state === undefined) return;
    const tail = (): number => state.nextId - 1 - state.mark;
    if (state.sweep === undefined && tail() > this.sizes.tailRows) state.sweep = this.beginSweep(state);
    if (state.sweep === undefined) return;
    do this.writeSlice(state, state.sweep);
    while (state.sweep !== undefined && tail() > 2 * this.sizes.tailRows);
  }

  private beginSweep(state: Loaded): Sweep {
    return { profiles: Float64Array.from(state.pending.keys()).sort(), done: 0, through: state.nextId - 1, rows: state.rows.past, counted: state.counted.past };
  }

  private writeSlice(state: Loaded, sweep: Sweep): void {
    const slice: [number, number][] = [];
    const end = Math.min(sweep.profiles.length, sweep.done + this.sizes.slice);
    for (let i = sweep.done; i < end; i += 1) {
      const profileId = sweep.profiles[i];
      const head = state.pending.get(profileId);
      if (head === undefined) continue;
      slice.push([profileId, head]);
      state.pending.delete(profileId);
      remember(state.written, profileId, head);
    }
    if (slice.length > 0) this.stmt.write.run(JSON.stringify(slice));
    sweep.done = end;
    if (end < sweep.profiles.length) return;
    state.sweep = undefined;
    // read at the old mark, before it moves
    state.counted.marked = this.countedMarked(state) + sweep.counted;
    state.counted.past -= sweep.counted;
    state.mark = sweep.through;
    state.rows.marked += sweep.rows;
    state.rows.past -= sweep.rows;
    this.writeMark(state);
  }

  /**
   * Writes every head held and moves the mark to the last row, so the next store to open the file
   * reads no rows past it; run inside a transaction, by the store that added rows, as it closes.
   */
  writeAll(): void {
    const state = this.loaded;
    if (state === undefined || !state.added) return;
    state.sweep = this.beginSweep(state);
    while (state.sweep !== undefined) this.writeSlice(state, state.sweep);
  }

  /**
   * Forgets the heads of these profiles, whose rows ([id, what it counted as]) were deleted, and
   * counts the rows up to the mark that went; the rest is read again.
   */
  removed(profileIds: readonly number[], rows: readonly (readonly [number, number])[]): void {
    const state = this.state();
    let marked = 0;
    let counted = 0;
    for (const [id, countedAs] of rows) {
      if (id > state.mark) continue;
      marked += 1;
      counted += countedAs;
    }
    if (marked > 0) {
      state.rows.marked -= marked;
      if (state.counted.marked !== undefined) state.counted.marked -= counted;
      this.writeMark(state);
    }
    this.stmt.remove.run(JSON.stringify(profileIds));
    this.forget();
  }

  /** Forgets what is held here, to be read again from the file: after a rollback, or another connection's write. */
  forget(): void {
    this.loaded = undefined;
  }
}
