// Runs the real CLI for a bench: a module preloaded with --import writes the process's peak RSS and
// CPU time to fd 3 as it exits (from the main thread: the CLI plans in a worker, which runs it too).
import { fork, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../bin/track.js', import.meta.url));

/** Writes the preloaded module into `dir`; returns its path. */
export function writeUsageHook(dir) {
  const path = join(dir, 'usage-at-exit.mjs');
  writeFileSync(
    path,
    "import { readFileSync, writeSync } from 'node:fs';\n" +
      "import { isMainThread } from 'node:worker_threads';\n" +
      // the main thread's time on a CPU and waiting for one (Linux): on a busy machine, what a run waited for
      "const sched = () => { try { const [on, waiting] = readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ').map(Number); return { mainCpuMs: on / 1e6, mainWaitMs: waiting / 1e6 }; } catch { return {}; } };\n" +
      "if (isMainThread) process.on('exit', () => {\n" +
      '  const u = process.resourceUsage();\n' +
      '  writeSync(3, JSON.stringify({ maxRssKb: u.maxRSS, cpuMs: (u.userCPUTime + u.systemCPUTime) / 1000, ...sched() }));\n' +
      '});\n',
  );
  return path;
}

/**
 * One run of `track ARGS --json` (with `env` over this process's): its wall time, its summary, peak
 * RSS and CPU time (and, on Linux, its main thread's time on a CPU and waiting for one); a failed run
 * throws with its stderr.
 */
export async function runTrack(hook, args, env = {}) {
  const start = performance.now();
  const child = spawn(process.execPath, ['--import', hook, CLI, ...args, '--json'], { stdio: ['ignore', 'pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const collect = (stream) => {
    const chunks = [];
    stream.on('data', (chunk) => chunks.push(chunk));
    return () => Buffer.concat(chunks).toString('utf8');
  };
  const [stdout, stderr, usage] = [collect(child.stdio[1]), collect(child.stdio[2]), collect(child.stdio[3])];
  const [code] = await once(child, 'close');
  const wallMs = performance.now() - start;
  if (code !== 0) throw new Error(`track ${args[0]} exited with ${code}: ${stderr()}`);
  const { maxRssKb, cpuMs, mainCpuMs, mainWaitMs } = JSON.parse(usage());
  return { wallMs, summary: JSON.parse(stdout()), maxRssKb, cpuMs, mainCpuMs, mainWaitMs };
}

/**
 * The loopback server of a bench, in a child process running `script --server`: it sends its port
 * when it listens, answers 'take' with { taken: ... }, and closes on 'exit'.
 */
export async function startServerChild(script) {
  const child = fork(script, ['--server'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise((resolve, reject) => {
    child.once('message', (message) => resolve(message.port));
    child.once('exit', (code) => reject(new Error(`the server exited with ${code}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    /** What the server counted since the last take. */
    take: () =>
      new Promise((resolve) => {
        const on = (message) => {
          if (message.taken === undefined) return;
          child.off('message', on);
          resolve(message.taken);
        };
        child.on('message', on);
        child.send('take');
      }),
    send: (message) => child.send(message),
    stop: () => child.send('exit'),
  };
}

/** A node process serving HTTP, from the base URL in the first line it prints. */
export async function startServer(args) {
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      // the whole line: a chunk may end inside the port
      const m = /(http:\/\/\S+).*\n/.exec(out);
      if (m) resolve(m[1]);
    });
    proc.on('exit', (code) => reject(new Error(`${args.at(-1)} exited ${code}`)));
  });
  return { url, pid: proc.pid, stop: () => new Promise((r) => { proc.on('exit', r); proc.kill('SIGTERM'); }) };
}

/** CPU seconds (user + system) a process has used so far, from /proc; undefined where there is none. */
export function cpuSecondsOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return undefined;
  }
}
