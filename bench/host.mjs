// What the machine itself did to a benchmark's figures.
import { readFileSync } from 'node:fs';

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
