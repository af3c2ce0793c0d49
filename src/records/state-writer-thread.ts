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

port.on('message', (message: ToWriter) => {
  try {
    switch (message.type) {
      case 'sending':
        writer.sending(message.learn);
        post({ type: 'done', id: message.id });
        break;
      case 'accepted': {
        // each record is read from the one buffer in turn (see ToWriter)
        let i = 0;
        writer.accepted(() => {
          if (i === message.records.length) return undefined;
          const { learn, rejected } = message.records[i++];
          const refused = new Set(rejected);
          return { learn: inScratch(learn), rejected: (index) => refused.has(index) };
        });
        post({ type: 'learned', records: message.records.length });
        break;
      }
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
});
