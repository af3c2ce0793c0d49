// The recipes of docs/pipelines/ as written: each file parses, names --shard, and its exact command
// lines run as N local processes (a `track` on PATH) against one emulator, reading the export from
// a real S3-compatible server under the recipe's own s3:// name, with a Redis budget where the
// recipe shares one; each shard ends 0 (1 with the rows it rejected), every user arrives once, every
// rejected row is in its shard's rejects file once, the report adds up, and a retry of a shard with
// --resume-or-start sends nothing again. A shard is retried only on the exit statuses where that can
// change the outcome: not 1 (rows rejected) nor 2 (a usage error), but 3 (a fatal stop).
import { execFile, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT } from '../helpers/cli.js';
import { startS3, S3_ENV, type S3Server } from '../helpers/s3.js';
import { redisPresent, startRedis, type RedisServer } from '../helpers/redis.js';
import { startEmulator, type Emulator } from '../../src/index.js';
import { shardOf } from '../../src/upload/shard.js';

const exec = promisify(execFile);
const RECIPES = join(ROOT, 'docs', 'pipelines');
const USERS = 240;
/** Rows of the export with an email that is not one: rejected, each by the shard of its user. */
const BAD = 6;
const python = spawnSync('python3', ['--version']).status === 0;

let s3: S3Server;
let redis: RedisServer | undefined;
let emulator: Emulator;
let bin: string;
beforeAll(async () => {
  s3 = await startS3();
  redis = redisPresent ? await startRedis() : undefined;
  emulator = await startEmulator();
  // `track` as an installed package gives it
  bin = mkdtempSync(join(tmpdir(), 'track-bin-'));
  writeFileSync(join(bin, 'track'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
  chmodSync(join(bin, 'track'), 0o755);
}, 60_000);
afterAll(async () => {
  await emulator?.close();
  await redis?.stop();
  await s3?.close();
  rmSync(bin, { recursive: true, force: true });
});

/** The export a recipe names (`s3://bucket/prefix/`), as three CSV parts in the S3 server. */
async function putExport(url: string): Promise<void> {
  const [, bucket, prefix] = /^s3:\/\/([^/]+)\/(.*)$/.exec(url)!;
  await s3.bucket(bucket).catch(() => undefined);
  for (let part = 0; part < 3; part += 1) {
    const rows = ['external_id,plan,email'];
    for (let u = part; u < USERS; u += 3) rows.push(`user-${u},p${u % 4},user${u}@example.com`);
    for (let b = part; b < BAD; b += 3) rows.push(`bad-${b},p0,not-an-email`);
    await s3.put(bucket, `${prefix}part-${part}.csv`, `${rows.join('\n')}\n`);
  }
}

/** Runs a recipe's command line through the shell, in `cwd`, with `env` over a machine's environment. */
async function sh(command: string, cwd: string, env: Record<string, string>) {
  try {
    const { stdout, stderr } = await exec('sh', ['-c', command], {
      cwd,
      env: { PATH: `${bin}:${process.env.PATH}`, HOME: cwd, ...S3_ENV, AWS_ENDPOINT_URL: s3.endpoint, TRACK_URL: emulator.url, TRACK_API_KEY: emulator.apiKey, ...env },
      timeout: 120_000,
    });
    return { status: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { status: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const trackRequests = () => emulator.requests({ path: '/users/track' }).length;

/** The shared budget of a recipe that keeps one: the test's Redis, when this machine has one. */
const budget = (): Record<string, string> => (redis === undefined ? {} : { TRACK_RATE_STORE: redis.url });

/** A pod or task run again (a retry, a restart) sends nothing, and leaves the rejects: --resume-or-start finds its finished run. */
async function runsAgainSendingNothing(command: string, cwd: string, env: Record<string, string>): Promise<void> {
  const before = trackRequests();
  const again = await sh(command, cwd, env);
  shardEnded(again);
  expect(trackRequests()).toBe(before);
  everyBadRow(rejectedIn(cwd));
}

/** A shard ends 0, or 1 when it rejected rows (some of the export's bad ones are in its users). */
const shardEnded = (r: { status: number; stderr: string }): void => expect([0, 1], r.stderr).toContain(r.status);

/** The rejected rows in the rejects files of `folder` whose names match `glob` (`*` only), each by its user; each file a shard's. */
function rejectedIn(folder: string, glob = '*.rejects.ndjson'): string[] {
  const pattern = new RegExp(`^${glob.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
  const files = readdirSync(folder).filter((name) => pattern.test(name));
  for (const name of files) expect(name).toMatch(/\.shard-\d-of-4\.rejects\.ndjson$/);
  return files.flatMap((name) => readFileSync(join(folder, name), 'utf8').trimEnd().split('\n').map((l) => (JSON.parse(l) as { row: { external_id: string } }).row.external_id));
}

/** Every bad row of the export, once, in the shards' rejects files. */
const everyBadRow = (rejected: string[]): void => expect(rejected.sort()).toEqual(Array.from({ length: BAD }, (_, b) => `bad-${b}`));

/** What every recipe must bring about: each shard 0 or 1, each user once, each bad row in its shard's rejects file once, the report's rows the export's. */
async function runShards(shards: Array<Record<string, string>>, upload: string, report: string, cwd: string) {
  emulator.reset();
  const runs = await Promise.all(shards.map((env) => sh(upload, cwd, env)));
  for (const r of runs) shardEnded(r);
  everyBadRow(rejectedIn(cwd));
  const items = emulator.requests({ path: '/users/track', limit: 10_000 }).flatMap((r) => (r.body as { attributes?: Array<{ external_id: string }> }).attributes ?? []);
  expect(items.length).toBe(USERS);
  expect(new Set(items.map((i) => i.external_id)).size).toBe(USERS);
  const merged = await sh(`${report} --json`, cwd, {});
  expect(merged.status, merged.stderr).toBe(1);
  const total = JSON.parse(merged.stdout).total;
  expect(total.rows).toBe(USERS + BAD);
  expect(total.rejected).toBe(BAD);
  expect(total.delivery.items.attributes.accepted).toBe(USERS);
  return runs;
}

/**
 * What Kubernetes does with a failed pod of the Job whose container `container` exited `status`:
 * the first rule of its pod failure policy that the exit code matches (rules on pod conditions aside),
 * or Count (restarted while backoffLimitPerIndex allows).
 */
function podFailureAction(spec: { podFailurePolicy?: { rules: Array<{ action: string; onExitCodes?: { containerName?: string; operator: 'In' | 'NotIn'; values: number[] } }> } }, container: string, status: number): string {
  for (const rule of spec.podFailurePolicy?.rules ?? []) {
    const codes = rule.onExitCodes;
    if (codes === undefined || (codes.containerName !== undefined && codes.containerName !== container)) continue;
    if (codes.values.includes(status) === (codes.operator === 'In')) return rule.action;
  }
  return 'Count';
}

/** A pod or task that exits 2 (a --url that is none) and one that exits 3 (a key the server refuses), each in a folder of its own. */
const failures = (): Array<{ status: number; env: Record<string, string> }> => [
  { status: 2, env: { TRACK_URL: 'not-a-url' } },
  { status: 3, env: { TRACK_API_KEY: 'not-the-key' } },
];

/**
 * Runs the DAG's upload task for shard `index` in `records` as an Airflow worker would, and says what
 * Airflow makes of it: success, failed (AirflowFailException: no retry) or up for retry (any other
 * exception, while retries remain). Airflow is not installed here: its decorators and exceptions are
 * stood in for by the few lines below, which run the task's own function, the real track included.
 */
async function dagTask(dag: string, index: number, records: string, env: Record<string, string>): Promise<{ outcome: string; message: string }> {
  const harness = `import importlib.util, json, sys, types
class AirflowException(Exception): pass
class AirflowFailException(AirflowException): pass
class Task:
    def __init__(self, fn, retries): self.function, self.retries = fn, retries
    def expand(self, **kwargs): return self
    def __rshift__(self, other): return other
def task(retries=0, **kwargs): return lambda fn: Task(fn, retries)
class BashOperator:
    def __init__(self, **kwargs): pass
modules = {name: types.ModuleType(name) for name in ("airflow", "airflow.decorators", "airflow.exceptions", "airflow.operators", "airflow.operators.bash", "pendulum")}
modules["airflow.decorators"].dag = lambda **kwargs: (lambda fn: fn)
modules["airflow.decorators"].task = task
modules["airflow.exceptions"].AirflowException = AirflowException
modules["airflow.exceptions"].AirflowFailException = AirflowFailException
modules["airflow.operators.bash"].BashOperator = BashOperator
modules["pendulum"].datetime = lambda *args, **kwargs: None
sys.modules.update(modules)
spec = importlib.util.spec_from_file_location("dag", sys.argv[1])
dag = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dag)
dag.RECORDS = sys.argv[2]
try:
    dag.upload.function(int(sys.argv[3]))
    outcome, message = "success", ""
except AirflowFailException as error:
    outcome, message = "failed", str(error)
except Exception as error:
    outcome, message = ("up for retry" if dag.upload.retries > 0 else "failed"), str(error)
print(json.dumps({"outcome": outcome, "message": message}))
`;
  const { stdout } = await exec('python3', ['-c', harness, dag, records, String(index)], {
    env: { PATH: `${bin}:${process.env.PATH}`, HOME: records, PYTHONDONTWRITEBYTECODE: '1', ...S3_ENV, AWS_ENDPOINT_URL: s3.endpoint, TRACK_URL: emulator.url, TRACK_API_KEY: emulator.apiKey, ...env },
    timeout: 120_000,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

describe('docs/pipelines', () => {
  it.skipIf(!python)("the Python placement in docs/pipelines.md places every user as track does", () => {
    const doc = readFileSync(join(ROOT, 'docs', 'pipelines.md'), 'utf8');
    const start = doc.indexOf('```python\n') + '```python\n'.length;
    const snippet = doc.slice(start, doc.indexOf('```', start));
    const keys: Array<[string, Parameters<typeof shardOf>[0]]> = [];
    for (let i = 0; i < 200; i += 1) keys.push([`external_id:user-${i}`, { by: 'external_id', value: `user-${i}` }]);
    keys.push(['email:ana@example.com', { by: 'email', value: 'ana@example.com' }], ['phone:+14155550123', { by: 'phone', value: '+14155550123' }]);
    keys.push(['user_alias:crm:Ünïcode 名前', { by: 'user_alias', value: { alias_label: 'crm', alias_name: 'Ünïcode 名前' } }]);
    const run = spawnSync('python3', ['-c', `${snippet}\nimport json, sys\nprint(json.dumps([shard(k, n) for k in json.load(sys.stdin) for n in (3, 4, 7)]))`], {
      input: JSON.stringify(keys.map(([key]) => key)),
      encoding: 'utf8',
    });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(keys.flatMap(([, identity]) => [3, 4, 7].map((n) => shardOf(identity, n))));
  });

  it('the Kubernetes Indexed Job: four pods by JOB_COMPLETION_INDEX, one budget, a restarted pod resumes', async () => {
    const job = parse(readFileSync(join(RECIPES, 'k8s-indexed-job.yaml'), 'utf8'));
    expect(job.kind).toBe('Job');
    expect(job.spec.completionMode).toBe('Indexed');
    const container = job.spec.template.spec.containers[0];
    const command: string = container.args[0];
    expect(command).toMatch(/--shard auto\/4/);
    const env = Object.fromEntries(container.env.filter((e: { value?: string }) => e.value !== undefined).map((e: { name: string; value: string }) => [e.name, e.value]));
    await putExport(env.EXPORT);
    const records = mkdtempSync(join(tmpdir(), 'track-records-'));
    const shared = { EXPORT: env.EXPORT, ...budget() };
    const indexes = Array.from({ length: job.spec.completions }, (_, i) => ({ ...shared, JOB_COMPLETION_INDEX: String(i) }));
    const runs = await runShards(indexes, command, 'track report summary-*.json', records);
    await runsAgainSendingNothing(command, records, indexes[2]);
    // a pod is restarted only where that can change the outcome: not for rejected rows (1) or a usage error (2)
    expect(job.spec.backoffLimitPerIndex).toBeGreaterThan(0);
    expect(runs.map((r) => r.status)).toContain(1);
    for (const r of runs) if (r.status === 1) expect(podFailureAction(job.spec, container.name, r.status)).toBe('FailIndex');
    for (const { status, env: failing } of failures()) {
      const alone = mkdtempSync(join(tmpdir(), 'track-records-'));
      const pod = await sh(command, alone, { ...indexes[0], ...failing });
      expect(pod.status, pod.stderr).toBe(status);
      expect(podFailureAction(job.spec, container.name, pod.status)).toBe(status === 2 ? 'FailIndex' : 'Count');
      rmSync(alone, { recursive: true, force: true });
    }
    rmSync(records, { recursive: true, force: true });
  }, 180_000);

  it('the GitHub Actions matrix: a job per shard, the state kept under its own name, a report job', async () => {
    const workflow = parse(readFileSync(join(RECIPES, 'github-actions.yml'), 'utf8'));
    const job = workflow.jobs.upload;
    const step = job.steps.find((s: { name?: string }) => s.name === 'upload');
    expect(step.run).toMatch(/--shard \$\{\{ matrix\.shard \}\}\/4/);
    const cache = job.steps.find((s: { uses?: string }) => s.uses?.startsWith('actions/cache/save')).with.path as string;
    await putExport(step.env.EXPORT);
    const records = mkdtempSync(join(tmpdir(), 'track-records-'));
    const shards: number[] = job.strategy.matrix.shard;
    // each job on its own machine: its own folder, the summaries gathered for the report job
    const machines = shards.map((k) => join(records, `job-${k}`));
    for (const m of machines) mkdirSync(m);
    emulator.reset();
    const runs = await Promise.all(shards.map((k, i) => sh(step.run.replaceAll('${{ matrix.shard }}', String(k)), machines[i], { EXPORT: step.env.EXPORT })));
    for (const r of runs) shardEnded(r);
    // the rejects files the artifact steps keep hold every rejected row
    const kept = job.steps.find((s: { uses?: string; with?: { name?: string } }) => s.uses?.startsWith('actions/upload-artifact') && s.with?.name?.startsWith('rejects-')).with.path as string;
    everyBadRow(shards.flatMap((k, i) => rejectedIn(machines[i], kept.replaceAll('${{ matrix.shard }}', String(k)))));
    expect(new Set(emulator.requests({ path: '/users/track', limit: 10_000 }).flatMap((r) => ((r.body as { attributes?: Array<{ external_id: string }> }).attributes ?? []).map((a) => a.external_id))).size).toBe(USERS);
    shards.forEach((k, i) => {
      // the file the cache step keeps is the state this shard wrote
      expect(readFileSync(join(machines[i], cache.replaceAll('${{ matrix.shard }}', String(k)))).length).toBeGreaterThan(0);
      writeFileSync(join(records, `summary-${k}.json`), readFileSync(join(machines[i], `summary-${k}.json`)));
    });
    const report = workflow.jobs.report.steps.at(-1).run as string;
    const merged = await sh(`${report} --json`, records, {});
    expect(merged.status, merged.stderr).toBe(1);
    expect(JSON.parse(merged.stdout).total.rows).toBe(USERS + BAD);
    rmSync(records, { recursive: true, force: true });
  }, 180_000);

  it.skipIf(!python)('the Airflow DAG: mapped tasks by TRACK_SHARD_INDEX, a retried task resumes', async () => {
    const dag = join(RECIPES, 'airflow_dag.py');
    // the file parses as Python, and its constants are read as Python reads them
    const read = spawnSync('python3', ['-c', `import ast,json,sys
tree = ast.parse(open(sys.argv[1]).read())
values = {t.id: ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
print(json.dumps(values))`, dag], { encoding: 'utf8' });
    expect(read.status, read.stderr).toBe(0);
    const { SHARDS, EXPORT, UPLOAD, REPORT } = JSON.parse(read.stdout) as { SHARDS: number; EXPORT: string; UPLOAD: string; REPORT: string };
    expect(UPLOAD).toMatch(/--shard auto\/4/);
    await putExport(EXPORT);
    const records = mkdtempSync(join(tmpdir(), 'track-records-'));
    const shared = budget();
    const tasks = Array.from({ length: SHARDS }, (_, i) => ({ ...shared, EXPORT, TRACK_SHARD_INDEX: String(i) }));
    const runs = await runShards(tasks, UPLOAD, REPORT, records);
    await runsAgainSendingNothing(UPLOAD, records, tasks[0]);
    // the DAG's task itself, run as a worker runs it: it fails for good on 1 and 2, and is retried on 3
    const outcomes = await Promise.all(tasks.map(async (env, index) => (await dagTask(dag, index, records, env)).outcome));
    expect(outcomes).toEqual(runs.map((r) => (r.status === 0 ? 'success' : 'failed')));
    for (const { status, env: failing } of failures()) {
      const alone = mkdtempSync(join(tmpdir(), 'track-records-'));
      const run = await dagTask(dag, 0, alone, { ...tasks[0], ...failing });
      expect(run, run.message).toMatchObject({ outcome: status === 2 ? 'failed' : 'up for retry' });
      expect(run.message).toContain(`track upload exited ${status}`);
      rmSync(alone, { recursive: true, force: true });
    }
    rmSync(records, { recursive: true, force: true });
  }, 180_000);
});
