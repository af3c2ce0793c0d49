// better-sqlite3, as every module here takes it: on Node 24 and later, each of its objects (a
// database, a statement, an iterator, a backup) is kept until the process or thread ends.
//
// From Node 24.19 on, node_object_wrap.h (compiled into the addon when npm builds it) removes an
// environment cleanup hook when a wrapped object is destroyed, and Node aborts the process
// ("Assertion failed: (env) != nullptr" in RemoveEnvironmentCleanupHook) when that happens in a
// garbage collection, where no context is current. better-sqlite3 12 wraps each of its objects so,
// and so any statement or database the collector reclaims ended the run with SIGABRT (`upload
// --delta` after its requests were sent, an emulator, a library call). better-sqlite3 13 no longer
// wraps them so, but needs Node 22. Kept alive, none is ever reclaimed: each is deleted by that
// cleanup hook when its thread ends, where a context is current. What is kept is small (a closed
// database holds no SQLite memory; a statement is finalized when its database closes), and the
// program prepares its statements once per database or per operation, never per row.
import { createRequire } from 'node:module';

export { default } from 'better-sqlite3';

/** The addon's classes: a Database is made by `new`, a statement and a backup by a database, an iterator by a statement. */
interface Addon {
  Database: new (...args: unknown[]) => object;
  Statement: { prototype: { iterate: (...args: unknown[]) => object } };
}

const kept = new Set<object>();
const keep = <T extends object>(made: T): T => {
  kept.add(made);
  return made;
};

/** Wraps the addon's constructors and makers so that every object they make is kept; once per thread. */
function keepEveryObject(addon: Addon): void {
  if ((addon as { keptByTrack?: boolean }).keptByTrack === true) return;
  const NativeDatabase = addon.Database;
  addon.Database = new Proxy(NativeDatabase, {
    construct: (target, args, newTarget) => keep(Reflect.construct(target, args, newTarget) as object),
  });
  const db = NativeDatabase.prototype as Record<'prepare' | 'backup', (...args: unknown[]) => object>;
  for (const maker of ['prepare', 'backup'] as const) {
    const make = db[maker];
    db[maker] = function (this: unknown, ...args: unknown[]) {
      return keep(make.apply(this, args));
    };
  }
  const iterate = addon.Statement.prototype.iterate;
  addon.Statement.prototype.iterate = function (this: unknown, ...args: unknown[]) {
    return keep(iterate.apply(this, args));
  };
  (addon as { keptByTrack?: boolean }).keptByTrack = true;
}

/** Node 24 and later; earlier ones reclaim these objects safely, and keep nothing. */
export const keepsSqliteObjects = Number(process.versions.node.split('.')[0]) >= 24;

if (keepsSqliteObjects) {
  // the very module object better-sqlite3 loads through `bindings` (one per thread, by its path),
  // whose Database it reads each time it opens one
  keepEveryObject(createRequire(import.meta.url)('better-sqlite3/build/Release/better_sqlite3.node') as Addon);
}

/** How many objects of better-sqlite3 this thread keeps (for the tests). */
export const keptSqliteObjects = (): number => kept.size;
