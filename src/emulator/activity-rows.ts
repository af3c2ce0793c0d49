// Events and purchases in the store: added many rows to a statement, and read back by profile through
// the block index (schema.ts). The store hands it its connection; nothing else uses it.
import type Database from 'better-sqlite3';
import { INSERT_COLUMNS, activityQuery, type ActivityTable } from './schema.js';

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

/** The events and purchases tables, as the store reads and writes them. */
export class ActivityRows {
  private readonly stmt;
  /** Multi-row INSERT statements, by table and row count, prepared when first needed. */
  private readonly inserts = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {
    this.stmt = {
      eventsOf: db.prepare<[number], { id: number; profile_id: number; name: string; time: string; app_id: string | null; properties: string | null }>(
        activityQuery('events', 'a.*', 'ORDER BY a.id'),
      ),
      purchasesOf: db.prepare<[number], {
        id: number; profile_id: number; product_id: string; currency: string; price: number; quantity: number;
        time: string; app_id: string | null; properties: string | null;
      }>(activityQuery('purchases', 'a.*', 'ORDER BY a.id')),
      eventSummary: db.prepare<[number], ActivitySummary>(
        activityQuery('events', 'a.name AS name, MIN(a.time) AS first, MAX(a.time) AS last, COUNT(*) AS count', 'GROUP BY a.name ORDER BY a.name'),
      ),
      purchaseSummary: db.prepare<[number], ActivitySummary>(
        activityQuery(
          'purchases',
          // decisions.md: a purchase of quantity X counts as X purchases
          'a.product_id AS name, MIN(a.time) AS first, MAX(a.time) AS last, SUM(a.quantity) AS count',
          'GROUP BY a.product_id ORDER BY a.product_id',
        ),
      ),
    };
  }

  /** Adds events in the order given; returns the id of the last. */
  insertEvents(events: readonly NewEvent[]): number {
    const values: unknown[] = [];
    for (const e of events) values.push(e.profileId, e.name, e.time, e.appId, propertiesJson(e.properties));
    return this.insertRows('events', values);
  }

  /** Adds purchases in the order given; returns the id of the last. */
  insertPurchases(purchases: readonly NewPurchase[]): number {
    const values: unknown[] = [];
    for (const p of purchases) values.push(p.profileId, p.productId, p.currency, p.price, p.quantity, p.time, p.appId, propertiesJson(p.properties));
    return this.insertRows('purchases', values);
  }

  /**
   * Inserts rows given as one list of column values, up to ROWS_PER_INSERT rows per statement: a
   * statement per row costs more in calls into SQLite than the row itself. Rows get ids in order.
   */
  private insertRows(table: ActivityTable, values: readonly unknown[]): number {
    const width = INSERT_COLUMNS[table].length;
    let last = 0;
    for (let start = 0; start < values.length; start += width * ROWS_PER_INSERT) {
      const chunk = values.length <= width * ROWS_PER_INSERT ? values : values.slice(start, start + width * ROWS_PER_INSERT);
      last = Number(this.insertStatement(table, chunk.length / width).run(chunk).lastInsertRowid);
    }
    return last;
  }

  private insertStatement(table: ActivityTable, rows: number): Database.Statement {
    const key = `${table} ${rows}`;
    let statement = this.inserts.get(key);
    if (statement === undefined) {
      const columns = INSERT_COLUMNS[table];
      const row = `(${columns.map(() => '?').join(', ')})`;
      statement = this.db.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${Array<string>(rows).fill(row).join(', ')}`);
      this.inserts.set(key, statement);
    }
    return statement;
  }

  eventsOf(profileId: number): StoredEvent[] {
    return this.stmt.eventsOf.all(profileId).map((r) => ({
      id: r.id, profileId: r.profile_id, name: r.name, time: r.time, appId: r.app_id, properties: parseJson(r.properties),
    }));
  }

  purchasesOf(profileId: number): StoredPurchase[] {
    return this.stmt.purchasesOf.all(profileId).map((r) => ({
      id: r.id, profileId: r.profile_id, productId: r.product_id, currency: r.currency, price: r.price,
      quantity: r.quantity, time: r.time, appId: r.app_id, properties: parseJson(r.properties),
    }));
  }

  eventSummary(profileId: number): ActivitySummary[] {
    return this.stmt.eventSummary.all(profileId);
  }

  purchaseSummary(profileId: number): ActivitySummary[] {
    return this.stmt.purchaseSummary.all(profileId);
  }
}
