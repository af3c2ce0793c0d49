// Loaded with `node --import` into a program under test: holds the loading of one of its modules
// (HOLD_MODULE, the end of its URL) until the test lets it go, so a test can act at a known point of
// the program's start however slow the machine. The first load of it writes HOLD_DIR/held; the load
// goes on once HOLD_DIR/go exists. Module hooks run in a thread of their own, so the program's main
// thread (its signal handlers) runs on while the load waits.
import { existsSync, writeFileSync } from 'node:fs';
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

if (isMainThread) register(import.meta.url);

export async function load(url, context, nextLoad) {
  const { HOLD_MODULE, HOLD_DIR } = process.env;
  if (HOLD_MODULE && HOLD_DIR && url.endsWith(HOLD_MODULE) && !existsSync(`${HOLD_DIR}/held`)) {
    writeFileSync(`${HOLD_DIR}/held`, url);
    while (!existsSync(`${HOLD_DIR}/go`)) await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return nextLoad(url, context);
}
