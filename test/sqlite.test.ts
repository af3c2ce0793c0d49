// better-sqlite3's objects left to the garbage collector, in the main thread and in a worker (where
// the delta state is written). On Node 24.19 and later the addon, built against that Node, aborts
// the process when the collector reclaims one of its statements or databases (SIGABRT, "Assertion
// failed: (env) != nullptr"): upload --delta ended so about one run in five, and the delta tests
// with it. src/sqlite.ts keeps every one there; on earlier Nodes it keeps none. This run alone does
// not always abort without it (when the collector runs decides), so it checks what is kept too.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { ROOT } from './helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'track-sqlite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SCRIPT = `
import { runInNewContext } from 'node:vm';
import { Worker, isMainThread, parentPort } from 'node:worker_threads';
const { default: Database, keptSqliteObjects } = await import(${JSON.stringify(join(ROOT, 'dist', 'sqlite.js'))});
function churn() {
  for (let i = 0; i < 40; i++) {
    const db = new Database(':memory:');
    db.pragma('journal_mode = OFF');
    db.exec('CREATE TABLE t (a)');
    const add = db.transaction((n) => { for (let k = 0; k < n; k++) db.prepare('INSERT INTO t VALUES (?)').run(k); });
    add(50);
    for (const row of db.prepare('SELECT a FROM t').iterate()) if (row.a > 2) break;
    if (i % 2 === 0) db.close();
  }
  // a collection run from another context, as records/state-rows.ts runs one after a patch of the index
  const gcElsewhere = runInNewContext('gc');
  for (let i = 0; i < 3; i++) { gcElsewhere(); globalThis.gc(); Array.from({ length: 100000 }, (_, k) => ({ k })); }
  return keptSqliteObjects();
}
if (isMainThread) {
  const main = churn();
  const worker = new Worker(new URL(import.meta.url));
  const inWorker = await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await new Promise((resolve) => worker.once('exit', resolve));
  console.log(JSON.stringify({ main, inWorker }));
} else {
  parentPort.postMessage(churn());
}
`;

it('ends cleanly when the collector could reclaim every database, statement and iterator it made, in a worker too', () => {
  const script = join(dir, 'churn.mjs');
  writeFileSync(script, SCRIPT);
  const r = spawnSync(process.execPath, ['--expose-gc', script], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  expect(r.stderr).toBe('');
  expect(r.signal).toBeNull();
  expect(r.status).toBe(0);
  const kept = JSON.parse(r.stdout) as { main: number; inWorker: number };
  // 40 databases, each with its statements (the pragma's, the transaction's, 50 inserts) and an iterator
  if (Number(process.versions.node.split('.')[0]) >= 24) {
    expect(kept.main).toBeGreaterThan(40 * 50);
    expect(kept.inWorker).toBeGreaterThan(40 * 50);
  } else {
    expect(kept).toEqual({ main: 0, inWorker: 0 });
  }
}, 60_000);
