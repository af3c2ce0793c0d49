// Worker thread that checkpoints an emulator database's write-ahead log from a connection of its own.
// A checkpoint copies the log into the database file and syncs both; done on the thread that commits,
// it stalls every request waiting there for tens of milliseconds. Here it runs beside the commits: a
// PASSIVE checkpoint neither blocks nor waits for the writer, and commits stay as durable as before
// (each is in the log, written before its request is answered; the checkpoint only moves it on).
import { parentPort, workerData } from 'node:worker_threads';
import type { CheckpointerData } from './checkpoint-thread.js';
import { openCheckpointConnection } from './store.js';

const { path, intervalMs } = workerData as CheckpointerData;
const connection = openCheckpointConnection(path);

const timer = setInterval(() => {
  try {
    connection.checkpoint();
  } catch {
    // busy or failing: the writer's own checkpoints still bound the log
  }
}, intervalMs);

parentPort?.on('message', (message: unknown) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  connection.close();
  parentPort?.close();
});
