// The state writer's thread (state-writer.ts): it holds the state file open for the run and writes
// what the sending thread hands it, so that no write to the disk ever holds up the sending. It may be
// started before the run is checked (its modules load meanwhile): it opens the file once told which.
import { parentPort } from 'node:worker_threads';
import { openStateFileWriter } from './state-file-writer.js';
import type { ToWriter, FromWriter, HandedRecords, OpenWriter } from './state-writer.js';

const port = parentPort!;
let ringBytes: Uint8Array = new Uint8Array(0);
/** Where a record handed over is read (the writer reads one at a time): copied out of the ring, which the sending thread fills again once told. */
let scratch = Buffer.allocUnsafeSlow(64 * 1024);
const inScratch = (text: string | undefined, at: number, size: number): Uint8Array => {
  if (scratch.length < size) scratch = Buffer.allocUnsafeSlow(Math.max(size, scratch.length * 2));
  if (text !== undefined) scratch.write(text, 0, 'latin1');
  else scratch.set(ringBytes.subarray(at, at + size));
  return scratch.subarray(0, size);
};
const post = (message: FromWriter): void => port.postMessage(message);
const failed = (error: unknown): FromWriter => {
  const e = error as Error & { path?: string };
  return { type: 'failed', error: { name: e.name, message: e.message, path: e.path } };
};

let writer: ReturnType<typeof openStateFileWriter>;
/** Messages come in while a transaction runs: those waiting are taken together, the records accepted in a row learned in one transaction. */
let queue: ToWriter[] = [];
// the first message names the file: what follows is the run's
port.once('message', ({ path, target, key, ring }: OpenWriter) => {
  ringBytes = new Uint8Array(ring);
  try {
    writer = openStateFileWriter(path, target, { key });
    post({ type: 'ready', adopted: writer.adopted });
    // the whole file is checked while the plan starts: the first request waits for it (state-writer.ts)
    writer.check();
    post({ type: 'checked' });
  } catch (error) {
    post(failed(error));
    port.close();
    return;
  }
  port.on('message', (message: ToWriter) => {
    if (queue.push(message) === 1) setImmediate(drain);
  });
});

function drain(): void {
  const messages = queue;
  queue = [];
  for (let at = 0; at < messages.length; ) {
    const message = messages[at];
    if (message.type !== 'accepted') {
      handle(message);
      at += 1;
      continue;
    }
    let end = at;
    while (end < messages.length && messages[end].type === 'accepted') end += 1;
    learn(messages.slice(at, end) as HandedRecords[]);
    at = end;
  }
}

/** Learns the records of messages handed over one after another, in one transaction. */
function learn(messages: HandedRecords[]): void {
  let m = 0;
  /** Where the next record's numbers start in the message's places, and the next text. */
  let p = 0;
  let t = 0;
  let ringSpan = 0;
  try {
    // each record is read from the one buffer in turn (see HandedRecords)
    writer.accepted(() => {
      while (m < messages.length && p === messages[m].places.length) {
        m += 1;
        p = 0;
        t = 0;
      }
      if (m === messages.length) return undefined;
      const { places, texts } = messages[m];
      const at = places[p];
      const length = places[p + 1];
      const span = places[p + 2];
      const refusedCount = places[p + 3];
      const refused = refusedCount === 0 ? undefined : new Set(places.subarray(p + 4, p + 4 + refusedCount));
      p += 4 + refusedCount;
      ringSpan += span;
      const record = inScratch(at === -1 ? texts[t++] : undefined, at, length);
      return { learn: record, rejected: (index) => refused !== undefined && refused.has(index) };
    });
    post({ type: 'learned', records: messages.reduce((sum, message) => sum + message.count, 0), ringBytes: ringSpan });
  } catch (error) {
    post(failed(error));
  }
}

function handle(message: Exclude<ToWriter, { type: 'accepted' }>): void {
  try {
    switch (message.type) {
      case 'sending':
        writer.sending(message.learn);
        post({ type: 'done', id: message.id });
        break;
      case 'close':
        writer.close();
        post({ type: 'closed' });
        port.close();
        break;
    }
  } catch (error) {
    post(failed(error));
    if (message.type === 'close') port.close();
  }
}
