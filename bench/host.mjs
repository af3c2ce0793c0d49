// What the machine itself did to a benchmark's figures.
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * CPU time the host has taken from this virtual machine's CPUs so far (steal, from /proc/stat), in
 * ms; undefined where there is no such figure. A host that takes the CPUs away for milliseconds at
 * a time slows every thread running then, so the benches print it beside their figures.
 */
export function stolenMs() {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
    return Number(fields[8]) * 10; // clock ticks (USER_HZ = 100)
  } catch {
    return undefined;
  }
}

/**
 * A probe of the machine's own pauses: a child process that runs the same small piece of CPU work
 * (about 0.1 ms) every 5 ms and notes when it took over three times its usual time. It does no I/O
 * and shares nothing with what is measured, so its pauses are the machine's (the host taking a CPU
 * away, which a virtual machine may not count as steal). stop() returns its figures: the usual and
 * the 99th-percentile time of the work, and when each slow run of it started and ended (ms since
 * the epoch, the clock performance.timeOrigin + performance.now() gives).
 */
export function startPauseProbe() {
  const child = fork(fileURLToPath(import.meta.url), ['--pause-probe'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = once(child, 'message');
  return {
    ready,
    async stop() {
      await ready;
      const figures = once(child, 'message');
      child.send('stop');
      const [message] = await figures;
      return message;
    },
  };
}

function pauseProbe() {
  const work = () => {
    let x = 0;
    for (let i = 0; i < 60_000; i += 1) x = (x * 31 + i) | 0;
    return x;
  };
  for (let i = 0; i < 500; i += 1) work(); // compiled and warm before the first timed run
  const times = [];
  const slow = [];
  let running = true;
  let sink = 0;
  const tick = () => {
    if (!running) return;
    const start = performance.now();
    sink ^= work();
    const took = performance.now() - start;
    times.push(took);
    if (times.length >= 100) {
      const recent = times.slice(-200).sort((a, b) => a - b);
      const usual = recent[recent.length >> 1];
      if (took > 3 * usual) slow.push([performance.timeOrigin + start, performance.timeOrigin + start + took]);
    }
    setTimeout(tick, 5);
  };
  process.on('message', () => {
    running = false;
    const sorted = times.sort((a, b) => a - b);
    process.send({ usualMs: sorted[sorted.length >> 1], p99Ms: sorted[Math.floor(sorted.length * 0.99)], runs: sorted.length, slow, sink }, () => process.exit(0));
  });
  process.send('ready');
  tick();
}

if (process.argv[2] === '--pause-probe') pauseProbe();
