// While a client made with baselineWasm is open, V8 optimises no WebAssembly: undici's HTTP parser
// stays as its baseline compiler made it (optimising it took 30 MB for a moment, the peak of an
// upload). Seen through V8's own trace of what it compiled, in child processes, whose flags these
// are; each check runs beside its counterpart, which shows the optimisation the trace would report.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BIN, ROOT } from '../helpers/cli.js';
import { writeParquet } from '../helpers/parquet.js';
import { useServers } from '../helpers/servers.js';

const CLIENT = pathToFileURL(join(ROOT, 'dist', 'transport', 'http-client.js')).href;
const LIBRARY = pathToFileURL(join(ROOT, 'dist', 'index.js')).href;

/** A child node's output, traced with what V8 compiled of WebAssembly and how. */
function traced(args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--trace-wasm-compilation-times', ...args], { cwd: ROOT, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/**
 * Whether V8 takes --liftoff-only while the process runs: V8 13 (Node 24) reads it only when the
 * process starts (set later, the parser is optimised as without it), so the checks of its effect
 * run on earlier ones only; the checks that V8 is left free run everywhere.
 */
const TAKES_IT_AT_RUNTIME = Number(process.versions.v8.split('.')[0]) < 13;
const onEffect = it.skipIf(!TAKES_IT_AT_RUNTIME);

/** The lines of V8's trace that tell of a function it optimised. */
const optimisedLines = (trace: string): string[] => trace.split('\n').filter((line) => line.includes('using TurboFan'));
const optimised = (trace: string): number => optimisedLines(trace).length;

/** What each child starts with: a server of its own, a way to post through a client, and a loop of WebAssembly. */
const SETUP = `
import { createServer } from 'node:http';
const { createTrackClient } = await import(process.env.CLIENT);
const server = createServer((req, res) => { req.resume(); req.on('end', () => { res.writeHead(201); res.end('{"message":"success"}'); }); });
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = 'http://127.0.0.1:' + server.address().port;
const post = async (client, n) => { for (let i = 0; i < n; i += 1) if ((await client.post('{}')).kind !== 'response') throw new Error('no answer'); };
// (n) => the sum of 1..n, by a loop, exported as the name given (each name makes other bytes, another
// module), called \`calls\` times with \`n\`
const loop = (name, calls, n) => {
  const bytes = [0,97,115,109,1,0,0,0, 1,6,1,96,1,127,1,127, 3,2,1,0, 7,5,1,1,name.charCodeAt(0),0,0, 10,35,1,33, 1,1,127, 2,64, 3,64, 32,0,69,13,1, 32,1,32,0,106,33,1, 32,0,65,1,107,33,0, 12,0, 11,11, 32,1, 11];
  const f = new WebAssembly.Instance(new WebAssembly.Module(new Uint8Array(bytes))).exports[name];
  for (let i = 0; i < calls; i += 1) f(n);
};
`;

/**
 * Posts `posts` requests through a client (baselineWasm as given), then, once it is closed and
 * `after` is set, runs a hot loop of WebAssembly compiled after it, and the same loop in a module of
 * its own once (cold: a fresh process leaves it to the baseline code).
 */
const CHILD = `${SETUP}
const [baselineWasm, posts, after] = [process.env.BASELINE === '1', Number(process.env.POSTS), process.env.AFTER === '1'];
const client = createTrackClient({ url, apiKey: 'k-000000', connections: 2, baselineWasm });
await post(client, posts);
await client.close();
server.close();
if (after) {
  loop('f', 20, 100000);
  loop('g', 1, 1);
}
`;

const client = (baseline: boolean, posts: number, after = false, flags: string[] = []) =>
  traced([...flags, '--input-type=module', '-e', CHILD], { CLIENT, BASELINE: baseline ? '1' : '0', POSTS: String(posts), AFTER: after ? '1' : '0' });

describe('a client with baselineWasm', () => {
  it('leaves a process started with WebAssembly flags of its own as it is, however they are spelled', async () => {
    // --no-liftoff: V8 compiles WebAssembly with TurboFan alone (the baseline flag would bring Liftoff back)
    const spelled = await Promise.all(['--no-liftoff', '--no_liftoff'].map((flag) => client(true, 50, false, [flag])));
    for (const { status, stdout, stderr } of spelled) {
      expect(status, stderr).toBe(0);
      expect(optimised(stdout)).toBeGreaterThan(0);
      expect(stdout).not.toContain('using Liftoff');
    }
  }, 30_000);

  onEffect('leaves the HTTP parser unoptimised however many answers it reads; without it, V8 optimises the parser', async () => {
    const [held, free] = await Promise.all([client(true, 300), client(false, 300)]);
    expect(held.status, held.stderr).toBe(0);
    expect(free.status, free.stderr).toBe(0);
    expect(held.stdout).toContain('using Liftoff');
    expect(optimised(held.stdout)).toBe(0);
    expect(optimised(free.stdout)).toBeGreaterThan(0);
  }, 30_000);

  onEffect('lets V8 optimise WebAssembly again once it is closed', async () => {
    const { status, stdout, stderr } = await client(true, 100, true);
    expect(status, stderr).toBe(0);
    // every flag set and set back is one this node's V8 knows
    expect(stderr).not.toMatch(/flag/i);
    // the hot loop, and only it (33 bytes of code): the parser ran while the client was open, and
    // the cold one is left to the baseline code as in a fresh process (V8 without dynamic tiering
    // would optimise every function it compiles)
    expect(optimisedLines(stdout)).toEqual([expect.stringContaining('bodysize 33 ')]);
  }, 30_000);
});

/**
 * Two clients: the first is closed while the second sends, and a loop of WebAssembly run then must
 * stay unoptimised; once the second is destroyed, the same loop in a new module is optimised.
 */
const TWO_CLIENTS = `${SETUP}
const open = () => createTrackClient({ url, apiKey: 'k-000000', connections: 2, baselineWasm: true });
const [first, second] = [open(), open()];
await post(first, 1);
const sending = Promise.all(Array.from({ length: 50 }, () => post(second, 1)));
await first.close();
loop('f', 20, 100000);
await sending;
await second.destroy();
loop('g', 20, 100000);
server.close();
`;

/**
 * upload() of the library sends 80 requests to a server of the child's own, then the same undici
 * parses 300 more answers: V8 optimises the parser in the caller's process as it would without track.
 */
const LIBRARY_CHILD = `${SETUP}
const { upload } = await import(process.env.LIBRARY);
const rows = Array.from({ length: 4000 }, (_, i) => ({ external_id: 'u' + i, visits: i }));
const summary = await upload({ inputs: [rows], url, apiKey: 'k-000000', journal: false, rate: 1000000 });
if (summary.requests !== 80) throw new Error('sent ' + summary.requests);
const client = createTrackClient({ url, apiKey: 'k-000000', connections: 2 });
await post(client, 300);
await client.close();
server.close();
`;

describe('clients with baselineWasm in one process', () => {
  onEffect('hold V8 back until the last is closed or destroyed', async () => {
    const { status, stdout, stderr } = await traced(['--input-type=module', '-e', TWO_CLIENTS], { CLIENT });
    expect(status, stderr).toBe(0);
    // one loop optimised: the one run after the second client was destroyed
    expect(optimisedLines(stdout)).toEqual([expect.stringContaining('bodysize 33 ')]);
  }, 30_000);
});

describe('upload() of the library', () => {
  it("leaves the caller's process free to optimise WebAssembly, undici's HTTP parser included", async () => {
    const { status, stdout, stderr } = await traced(['--input-type=module', '-e', LIBRARY_CHILD], { CLIENT, LIBRARY });
    expect(status, stderr).toBe(0);
    expect(stdout).toContain('using Liftoff');
    expect(optimised(stdout)).toBeGreaterThan(0);
  }, 30_000);
});

describe('track upload and WebAssembly', () => {
  const servers = useServers();
  const ROWS = 4000; // 80 requests of 50: past the answers after which V8 optimises the parser

  onEffect('optimises none while a CSV file is sent, and leaves V8 free to when a Parquet file is', async () => {
    const server = await servers.faultServer();
    const csv = join(servers.tmp.dir, 'users.csv');
    writeFileSync(csv, `external_id,visits\n${Array.from({ length: ROWS }, (_, i) => `u${i},${i}`).join('\n')}\n`);
    const parquet = join(servers.tmp.dir, 'users.parquet');
    writeParquet(
      parquet,
      [{ name: 'root', num_children: 2 }, { name: 'external_id', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'REQUIRED' }, { name: 'visits', type: 'INT32', repetition_type: 'REQUIRED' }],
      { external_id: Array.from({ length: ROWS }, (_, i) => `p${i}`), visits: Array.from({ length: ROWS }, (_, i) => i) },
    );
    const upload = (file: string) =>
      traced([BIN, 'upload', file, '--url', server.url, '--api-key', 'k-000000', '--quiet', '--no-journal', '--rate', '1000000']);
    const [sentCsv, sentParquet] = [await upload(csv), await upload(parquet)];
    expect(sentCsv.status, sentCsv.stderr).toBe(0);
    expect(sentParquet.status, sentParquet.stderr).toBe(0);
    expect(server.received.length).toBe(2 * (ROWS / 50));
    expect(optimised(sentCsv.stdout)).toBe(0);
    expect(optimised(sentParquet.stdout)).toBeGreaterThan(0);
  }, 60_000);
});
