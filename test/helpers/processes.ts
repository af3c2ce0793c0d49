// Watching processes a test started: whether one runs, waiting for a condition, a pid a command wrote;
// and the threads of this one.
import { existsSync, readdirSync, readFileSync } from 'node:fs';

export const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Waits until `check` holds, polling every 20 ms, for at most `ms`. */
export const until = async (check: () => boolean, ms = 5000): Promise<boolean> => {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 20))) if (check()) return true;
  return check();
};

/** The pid a command wrote to `file`; undefined until it has. */
export const pidIn = (file: string): number | undefined => {
  const text = existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
  return text === '' ? undefined : Number(text);
};

/** The threads can be counted here (Linux). */
export const threadsCountable = existsSync('/proc/self/task');

/** The threads of this process, once those ending have ended. */
export const settledThreads = async (): Promise<number> => {
  await new Promise((resolve) => setTimeout(resolve, 300));
  return readdirSync('/proc/self/task').length;
};
