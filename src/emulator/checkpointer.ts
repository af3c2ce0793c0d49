// Worker thread that checkpoints an emulator database's write-ahead log from a connection of its own.
// A checkpoint copies the log into the database file and syncs both; done on the thread that commits,
// it stalls every request waiting there for tens of milliseconds. Here it runs beside the commits: a
// PASSIVE checkpoint neither blocks nor waits for the writer, and commits stay as durable as before
// (each is in the log, written before its request is answered; the checkpoint only moves it on).
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';

export interface CheckpointerData {
  path: string;
  intervalMs: number;
}

const { path, intervalMs } = workerData as CheckpointerData;
const db = new Database(path, { fileMustExist: true });
db.pragma('busy_timeout = 0');
// the writer keeps its own automatic checkpoints as a bound on the log; this one needs none
db.pragma('wal_autocheckpoint = 0');

const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // busy or failing: the writer's own checkpoints still bound the log
  }
}, intervalMs);

parentPort?.on('message', (message: unknown) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort?.close();
});
