// End-to-end tests run the built CLI (bin/track.js -> dist/), so build once before the suite.
// Type errors are reported but do not stop the run (tsc still emits); `npm run build` and the
// install's `prepare` step are where they fail.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const r = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) process.stderr.write(`build reported problems (tests run against what it emitted):\n${r.stdout}${r.stderr}\n`);
}
