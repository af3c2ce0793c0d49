// A dry run of 20 gzipped NDJSON parts read from an S3-compatible server on loopback (s3rver, in a
// child process) beside the same parts read from local disk (the floor), each the real CLI in a
// process of its own, alternating. Target: the parts from the server within 1.3 times the time of
// the parts on disk.
// Build first: npm run build && node bench/run.mjs s3
// Knobs: BENCH_ROWS (default 3,000,000, the rows of the Parquet bench's case, 150,000 a part), BENCH_RUNS
// (default 3).
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { runTrack, startServerChild, writeUsageHook } from './track-run.mjs';

const HERE = fileURLToPath(import.meta.url);
const ROWS = Number(process.env.BENCH_ROWS ?? 3_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const PARTS = 20;
const CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1', AWS_EC2_METADATA_DISABLED: 'true' };

/** The server: s3rver on port 0, its objects in `directory`; the bench puts the parts through the SDK. */
async function server() {
  const [{ default: S3rver }, { S3Client, CreateBucketCommand, PutObjectCommand }] = await Promise.all([import('s3rver'), import('@aws-sdk/client-s3')]);
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const directory = mkdtempSync(join(tmpdir(), 'track-s3-bench-server-'));
  const s3rver = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory });
  const { port } = await s3rver.run();
  const client = new S3Client({ endpoint: `http://127.0.0.1:${port}`, forcePathStyle: true, region: 'us-east-1', credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
  await client.send(new CreateBucketCommand({ Bucket: 'bench' }));
  process.on('message', async (message) => {
    if (message?.put !== undefined) {
      for (const file of readdirSync(message.put).sort()) {
        await client.send(new PutObjectCommand({ Bucket: 'bench', Key: `parts/${file}`, Body: readFileSync(join(message.put, file)) }));
      }
      process.send({ taken: true });
    }
    if (message === 'exit') {
      await s3rver.close().catch(() => undefined);
      rmSync(directory, { recursive: true, force: true });
      process.exit(0);
    }
  });
  process.send({ port });
}

/** ROWS attribute lines of six fields, in PARTS gzipped files. */
function writeParts(dir) {
  const perPart = Math.ceil(ROWS / PARTS);
  for (let part = 0; part < PARTS; part += 1) {
    const lines = [];
    for (let i = part * perPart; i < Math.min(ROWS, (part + 1) * perPart); i += 1) {
      lines.push(JSON.stringify({ external_id: `user-${i}`, email: `user${i}@example.com`, first_name: `Name${i % 1000}`, zip: String(i % 100_000).padStart(5, '0'), score: (i % 1000) / 10, vip: i % 2 === 0 }));
    }
    writeFileSync(join(dir, `part-${String(part).padStart(5, '0')}.ndjson.gz`), gzipSync(`${lines.join('\n')}\n`));
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const ms = (n) => `${Math.round(n).toLocaleString('en-US')} ms`;

if (process.argv[2] === '--server') await server();
else {
  const dir = mkdtempSync(join(tmpdir(), 'track-s3-bench-'));
  const partsDir = join(dir, 'parts');
  mkdirSync(partsDir);
  const s3 = await startServerChild(HERE);
  try {
    writeParts(partsDir);
    const bytes = readdirSync(partsDir).reduce((sum, file) => sum + statSync(join(partsDir, file)).size, 0);
    s3.send({ put: partsDir });
    await s3.take();
    const hook = writeUsageHook(dir);
    const env = { ...CREDENTIALS, AWS_ENDPOINT_URL_S3: s3.url };
    console.log(`${ROWS.toLocaleString('en-US')} rows in ${PARTS} gzipped NDJSON parts, ${(bytes / 1e6).toFixed(1)} MB; ${RUNS} runs of each, alternating`);
    const local = readdirSync(partsDir).sort().map((file) => join(partsDir, file));
    const dryRun = (inputs) => runTrack(hook, ['validate', ...inputs, '--rejects', join(dir, 'rejects.ndjson')], env);
    const floor = [];
    const ours = [];
    for (let run = 0; run < RUNS; run += 1) {
      const a = await dryRun(local);
      const b = await dryRun(['s3://bench/parts/*.ndjson.gz']);
      if (a.summary.rows !== ROWS || b.summary.rows !== ROWS) throw new Error(`rows ${a.summary.rows} / ${b.summary.rows}, expected ${ROWS}`);
      floor.push(a);
      ours.push(b);
    }
    const wall = (runs) => median(runs.map((r) => r.wallMs));
    console.log(`parts on disk     wall ${ms(wall(floor))}  cpu ${ms(median(floor.map((r) => r.cpuMs)))} (median)`);
    console.log(`parts in S3       wall ${ms(wall(ours))}  cpu ${ms(median(ours.map((r) => r.cpuMs)))} (median), peak RSS ${Math.round(Math.max(...ours.map((r) => r.maxRssKb)) / 1024)} MB`);
    const ratio = median(ours.map((b, i) => b.wallMs / floor[i].wallMs));
    console.log(`ratio             ${ratio.toFixed(2)}x the time from disk (median of pairs)  (target: at most 1.30x)`);
    if (ratio > 1.3) {
      console.log('a target was missed');
      process.exitCode = 1;
    }
  } finally {
    s3.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
