// The state writer's thread (state-writer.ts): it holds the state file open for the run and writes
// what the sending thread hands it, so that no write to the disk ever holds up the sending.
import { parentPort, workerData } from 'node:worker_threads';
import { openStateFileWriter } from './state-file-writer.js';
import type { ToWriter, FromWriter } from './state-writer.js';

const port = parentPort!;
/** Where a record handed over as text is read (the writer reads one at a time). */
let scratch = Buffer.allocUnsafeSlow(64 * 1024);
const inScratch = (text: string): Uint8Array => {
  if (scratch.length < text.length) scratch = Buffer.allocUnsafeSlow(Math.max(text.length, scratch.length * 2));
  const length = scratch.write(text, 0, 'latin1');
  return scratch.subarray(0, length);
};
const { path, target } = workerData as { path: string; target: string };
const post = (message: FromWriter): void => port.postMessage(message);
const failed = (error: unknown): FromWriter => {
  const e = error as Error & { path?: string };
  return { type: 'failed', error: { name: e.name, message: e.message, path: e.path } };
};

let writer: ReturnType<typeof openStateFileWriter>;
try {
  writer = openStateFileWriter(path, target);
  post({ type: 'ready' });
  // the whole file is checked while the plan starts: the first request waits for it (state-writer.ts)
  writer.check();
  post({ type: 'checked' });
} catch (error) {
  post(failed(error));
  port.close();
}

/** Messages come in while a transaction runs: those waiting are taken together, the records accepted in a row learned in one transaction. */
let queue: ToWriter[] = [];
port.on('message', (message: ToWriter) => {
  if (queue.push(message) === 1) setImmediate(drain);
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
    learn(messages.slice(at, end) as Array<ToWriter & { type: 'accepted' }>);
    at = end;
  }
}

/** Learns the records of messages handed over one after another, in one transaction. */
function learn(messages: Array<ToWriter & { type: 'accepted' }>): void {
  let m = 0;
  let i = 0;
  try {
    // each record is read from the one buffer in turn (see ToWriter)
    writer.accepted(() => {
      while (m < messages.length && i === messages[m].records.length) {
        m += 1;
        i = 0;
      }
      if (m === messages.length) return undefined;
      const { learn, rejected } = messages[m].records[i++];
      const refused = new Set(rejected);
      return { learn: inScratch(learn), rejected: (index) => refused.has(index) };
    });
    post({ type: 'learned', records: messages.reduce((sum, message) => sum + message.records.length, 0) });
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
