// Runs the benchmark scripts in this folder (all, or those whose names contain an argument).
// Each prints its own figures and the ratio to a floor measured in the same run.
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const wanted = process.argv.slice(2);
const scripts = readdirSync(here)
  .filter((name) => name.endsWith('.bench.mjs'))
  .filter((name) => wanted.length === 0 || wanted.some((w) => name.includes(w)))
  .sort();
let failed = 0;
for (const name of scripts) {
  console.log(`\n== ${name}`);
  const result = spawnSync(process.execPath, ['--expose-gc', `${here}${name}`], { stdio: 'inherit' });
  if (result.status !== 0) failed += 1;
}
if (scripts.length === 0) console.log('no benchmark matched');
process.exitCode = failed === 0 ? 0 : 1;
