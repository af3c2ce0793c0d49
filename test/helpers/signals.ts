// Waits until a process reads its standard input, so that a test's signal comes when the program
// has taken over (its handlers are installed before it reads), not while node is still starting.
// Linux tells it in /proc/PID/fdinfo: the epoll set that watches a file descriptor names it (`tfd`).
import { readdirSync, readFileSync } from 'node:fs';

export async function whenReadingStdin(pid: number, timeoutMs = 20_000): Promise<boolean> {
  for (const end = Date.now() + timeoutMs; Date.now() < end; ) {
    let names: string[];
    try {
      names = readdirSync(`/proc/${pid}/fdinfo`);
    } catch {
      return false;
    }
    for (const name of names) {
      const info = (() => {
        try {
          return readFileSync(`/proc/${pid}/fdinfo/${name}`, 'utf8');
        } catch {
          return '';
        }
      })();
      if (/^tfd:\s+0\s/m.test(info)) return true;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}
