// Events and purchases in the store: added many rows to a statement, each linked to its profile's row
// before it, and read back by profile along those links (schema.ts). The store hands it its
// connection; nothing else uses it.
import type Database from '../sqlite.js';
import { ActivityHeads, COUNTED_AS, SWEEP_SIZES, type SweepSizes } from './activity-heads.js';
import { ACTIVITY_TABLES, chainCte, chainQuery, columnNames, type ActivityTable } from './schema.js';

export interface StoredEvent {
  id: number;
  profileId: number;
  name: string;
  time: string;
  appId: string | null;
  properties: Record<string, unknown> | null;
}

export interface StoredPurchase {
  id: number;
  profileId: number;
  productId: string;
  currency: string;
  price: number;
  quantity: number;
  time: string;
  appId: string | null;
  properties: Record<string, unknown> | null;
}

export type NewEvent = Omit<StoredEvent, 'id'>;
export type NewPurchase = Omit<StoredPurchase, 'id'>;

export interface RecentActivity {
  events: StoredEvent[];
  purchases: StoredPurchase[];
  /** Events, and purchases as counted (a purchase of quantity X is X), with the rows that hold them. */
  counts: { events: number; purchases: number; purchaseRows: number };
}

export interface ActivitySummary {
  name: string;
  first: string;
  last: string;
  count: number;
}

function parseJson(text: string | null): Record<string, unknown> | null {
  return text === null ? null : (JSON.parse(text) as Record<string, unknown>);
}

function propertiesJson(properties: Record<string, unknown> | null): string | null {
  return properties === null ? null : JSON.stringify(properties);
}

/** Rows per INSERT statement (50 items is a request under the default limits). */
const ROWS_PER_INSERT = 50;

type EventRow = { id: number; profile_id: number; name: string; time: string; app_id: string | null; properties: string | null };
type PurchaseRow = {
  id: number; profile_id: number; product_id: string; currency: string; price: number; quantity: number;
  time: string; app_id: string | null; properties: string | null;
};

const toEvent = (r: EventRow): StoredEvent => ({
  id: r.id, profileId: r.profile_id, name: r.name, time: r.time, appId: r.app_id, properties: parseJson(r.properties),
});
const toPurchase = (r: PurchaseRow): StoredPurchase => ({
  id: r.id, profileId: r.profile_id, productId: r.product_id, currency: r.currency, price: r.price,
  quantity: r.quantity, time: r.time, appId: r.app_id, properties: parseJson(r.properties),
});

/**
 * The queries over one profile's rows of an activity table; each takes { head, profile } (and limit).
 * `countedAs`: what a row counts as (1, or a purchase's quantity), for count and remove.
 */
function chainStatements<Row>(db: Database.Database, table: ActivityTable, summary: string, group: string, countedAs = '1') {
  const all = columnNames(table);
  return {
    all: db.prepare<{ head: number; profile: number }, Row>(chainQuery(table, all, '*', 'ORDER BY id')),
    newest: db.prepare<{ head: number; profile: number; limit: number }, Row>(chainQuery(table, all, '*', '', true)),
    count: db.prepare<{ head: number; profile: number }, [number, number]>(chainQuery(table, countedAs === '1' ? [] : [countedAs], `COUNT(*), TOTAL(${countedAs})`)).raw(),
    summary: db.prepare<{ head: number; profile: number }, ActivitySummary>(chainQuery(table, [group, 'time', 'quantity'].filter((c) => all.includes(c)), summary, `GROUP BY ${group} ORDER BY ${group}`)),
    remove: db.prepare<{ head: number; profile: number }, [number, number]>(`${chainCte(table, [])}\nDELETE FROM ${table} WHERE id IN (SELECT id FROM chain) RETURNING id, ${countedAs}`).raw(),
  };
}

/** The events and purchases tables, as the store reads and writes them. */
export class ActivityRows {
  private readonly stmt;
  private readonly heads: Record<ActivityTable, ActivityHeads>;
  /** Multi-row INSERT statements, by table and row count, prepared when first needed. */
  private readonly inserts = new Map<string, Database.Statement>();

  constructor(
    private readonly db: Database.Database,
    sweep: SweepSizes = SWEEP_SIZES,
  ) {
    this.heads = { events: new ActivityHeads(db, 'events', sweep), purchases: new ActivityHeads(db, 'purchases', sweep) };
    this.stmt = {
      events: chainStatements<EventRow>(db, 'events', 'name, MIN(time) AS first, MAX(time) AS last, COUNT(*) AS count', 'name'),
      // decisions.md: a purchase of quantity X counts as X purchases
      purchases: chainStatements<PurchaseRow>(db, 'purchases', 'product_id AS name, MIN(time) AS first, MAX(time) AS last, SUM(quantity) AS count', 'product_id', COUNTED_AS.purchases),
    };
  }

  /** Adds events in the order given; returns the id of the last. */
  insertEvents(events: readonly NewEvent[]): number {
    return this.insertRows('events', events, (values, e, prev) => {
      values.push(e.profileId, e.name, e.time, e.appId, propertiesJson(e.properties), prev);
    });
  }

  /** Adds purchases in the order given; returns the id of the last. */
  insertPurchases(purchases: readonly NewPurchase[]): number {
    let counted = 0;
    for (const p of purchases) counted += p.quantity;
    return this.insertRows('purchases', purchases, (values, p, prev) => {
      values.push(p.profileId, p.productId, p.currency, p.price, p.quantity, p.time, p.appId, propertiesJson(p.properties), prev);
    }, counted);
  }

  /**
   * Inserts rows, each linked to its profile's row before it, up to ROWS_PER_INSERT rows per
   * statement: a statement per row costs more in calls into SQLite than the row itself. SQLite gives
   * each the next id, as the heads foresaw (an id given with each row would cost a search of the table).
   * `counted`: what the rows count as together, when not one each (COUNTED_AS).
   */
  private insertRows<T extends { profileId: number }>(
    table: ActivityTable,
    rows: readonly T[],
    push: (values: unknown[], row: T, prev: number | null) => void,
    counted = rows.length,
  ): number {
    if (rows.length === 0) return 0;
    const heads = this.heads[table];
    const { firstId, prevs } = heads.assign(rows.map((r) => r.profileId), counted);
    try {
      for (let start = 0; start < rows.length; start += ROWS_PER_INSERT) {
        const end = Math.min(rows.length, start + ROWS_PER_INSERT);
        const values: unknown[] = [];
        for (let i = start; i < end; i += 1) push(values, rows[i], prevs[i]);
        const last = Number(this.insertStatement(table, end - start).run(values).lastInsertRowid);
        if (last !== firstId + end - 1) throw new Error(`${table}: rows were given ids up to ${last}, not ${firstId + end - 1} as their links say`);
      }
    } catch (error) {
      heads.forget();
      throw error;
    }
    return firstId + rows.length - 1;
  }

  private insertStatement(table: ActivityTable, rows: number): Database.Statement {
    const key = `${table} ${rows}`;
    let statement = this.inserts.get(key);
    if (statement === undefined) {
      const columns = columnNames(table).slice(1); // all but the id
      const row = `(${columns.map(() => '?').join(', ')})`;
      statement = this.db.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${Array<string>(rows).fill(row).join(', ')}`);
      this.inserts.set(key, statement);
    }
    return statement;
  }

  /** The parameters of a chain query over the profile's rows; undefined when it has none. */
  private chain(table: ActivityTable, profileId: number): { head: number; profile: number } | undefined {
    const head = this.heads[table].headOf(profileId);
    return head === undefined ? undefined : { head, profile: profileId };
  }

  eventsOf(profileId: number): StoredEvent[] {
    const chain = this.chain('events', profileId);
    return chain === undefined ? [] : this.stmt.events.all.all(chain).map(toEvent);
  }

  purchasesOf(profileId: number): StoredPurchase[] {
    const chain = this.chain('purchases', profileId);
    return chain === undefined ? [] : this.stmt.purchases.all.all(chain).map(toPurchase);
  }

  /** The profile's newest events and purchases (newest first, at most `limit` of each), and how many it has of each. */
  recentOf(profileId: number, limit: number): RecentActivity {
    const events = this.chain('events', profileId);
    const purchases = this.chain('purchases', profileId);
    const [purchaseRows, purchaseCount] = purchases === undefined ? [0, 0] : (this.stmt.purchases.count.get(purchases) as [number, number]);
    return {
      events: events === undefined ? [] : this.stmt.events.newest.all({ ...events, limit }).map(toEvent),
      purchases: purchases === undefined ? [] : this.stmt.purchases.newest.all({ ...purchases, limit }).map(toPurchase),
      counts: {
        events: events === undefined ? 0 : (this.stmt.events.count.get(events) as [number, number])[0],
        purchases: purchaseCount,
        purchaseRows,
      },
    };
  }

  eventSummary(profileId: number): ActivitySummary[] {
    const chain = this.chain('events', profileId);
    return chain === undefined ? [] : this.stmt.events.summary.all(chain);
  }

  purchaseSummary(profileId: number): ActivitySummary[] {
    const chain = this.chain('purchases', profileId);
    return chain === undefined ? [] : this.stmt.purchases.summary.all(chain);
  }

  /** Deletes every event and purchase of these profiles, along their chains; run inside a transaction. */
  deleteOf(profileIds: readonly number[]): void {
    for (const table of ACTIVITY_TABLES) {
      const deleted: [number, number][] = [];
      for (const profileId of profileIds) {
        const chain = this.chain(table, profileId);
        if (chain !== undefined) deleted.push(...(this.stmt[table].remove.all(chain) as [number, number][]));
      }
      this.heads[table].removed(profileIds, deleted);
    }
  }

  /**
   * How many events and purchases the tables hold, a purchase of quantity X counting as X
   * (decisions.md "Events and purchases"): counted as rows are added and deleted, not by reading them.
   */
  counts(): Record<ActivityTable, number> {
    return { events: this.heads.events.countedTotal(), purchases: this.heads.purchases.countedTotal() };
  }

  /**
   * Rows not where their profile's chain says, by table: links to a row of another profile or a
   * later one, rows two rows link to, chains beyond one a profile, heads that are not the
   * profile's newest row, and a count of rows that is not the table's. Reads every row.
   */
  chainProblems(): number {
    let problems = 0;
    for (const table of ACTIVITY_TABLES) {
      problems += this.db.prepare<[], number>(`SELECT
  (SELECT COUNT(*) FROM ${table} a JOIN ${table} b ON b.id = a.prev WHERE b.profile_id <> a.profile_id OR b.id >= a.id)
  + (SELECT COUNT(*) - COUNT(DISTINCT prev) FROM ${table} WHERE prev IS NOT NULL)
  + (SELECT COUNT(*) FROM ${table} WHERE id NOT IN (SELECT prev FROM ${table} WHERE prev IS NOT NULL))
  - (SELECT COUNT(DISTINCT profile_id) FROM ${table})`).pluck().get() as number;
      const newest = this.db.prepare<[], [number, number]>(`SELECT profile_id, MAX(id) FROM ${table} GROUP BY profile_id`).raw();
      for (const [profileId, last] of newest.iterate()) if (this.heads[table].headOf(profileId) !== last) problems += 1;
      problems += Math.abs(this.heads[table].rowCount() - (this.db.prepare(`SELECT COUNT(*) FROM ${table}`).pluck().get() as number));
      problems += Math.abs(this.heads[table].countedTotal() - (this.db.prepare(`SELECT TOTAL(${COUNTED_AS[table] ?? 1}) FROM ${table}`).pluck().get() as number));
    }
    return problems;
  }

  /** Runs fn, then writes what is due of the heads (activity-heads.ts); run as a transaction's work. */
  settledAfter<T>(fn: () => T): T {
    const result = fn();
    for (const table of ACTIVITY_TABLES) this.heads[table].settle();
    return result;
  }

  /** Writes the heads held in memory (what they say is then all in the file); run inside a transaction. */
  writeHeads(): void {
    for (const table of ACTIVITY_TABLES) this.heads[table].writeAll();
  }

  /** Forgets the heads held in memory, to be read again from the file. */
  forget(): void {
    for (const table of ACTIVITY_TABLES) this.heads[table].forget();
  }
}
