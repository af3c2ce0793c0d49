// Delivery throughput and pacing against a loopback server (in a child process) that answers 201
// at once. Prints figures only; nothing here is asserted.
//   1. no rate limit: N synthetic 50-item requests -> requests/s, items/s, and the time against
//      csv-parse reading as many rows (the floor for `track upload`: at most 2x of it end to end)
//   2. --rate R for about S seconds -> mean rate as % of R, most starts in any one-second window
// Build first: npm run build && node bench/run.mjs deliver
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { parse } from 'csv-parse/sync';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const ITEMS_PER_REQUEST = 50;
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const RATE = Number(process.env.BENCH_RATE ?? 200);
const RATE_SECONDS = Number(process.env.BENCH_RATE_SECONDS ?? 10);

if (process.argv[2] === '--floor') {
  // the floor, in its own process so that its memory does not count against delivery's
  const header = 'external_id,first_name,score,vip\n';
  let csv = header;
  for (let i = 0; i < ROWS; i += 1) csv += `user-${i + 2},Ada,${i % 1000},${i % 7 === 0}\n`;
  const t = performance.now();
  const cpu = process.cpuUsage();
  const rows = parse(csv, { columns: true });
  const ms = performance.now() - t;
  const used = process.cpuUsage(cpu);
  if (rows.length !== ROWS) throw new Error('csv-parse read a different number of rows');
  process.send({ parseMs: ms, parseCpuMs: (used.user + used.system) / 1000 }, () => process.exit(0));
} else if (process.argv[2] === '--server') {
  // the loopback server: 201 with counts at once; records arrival times when asked
  let arrivals = [];
  const server = createServer((req, res) => {
    arrivals.push(performance.timeOrigin + performance.now());
    let size = 0;
    req.on('data', (chunk) => (size += chunk.length));
    req.on('end', () => {
      const body = '{"message":"success","attributes_processed":50}';
      res.writeHead(201, { 'content-type': 'application/json', 'content-length': body.length });
      res.end(body);
    });
  });
  server.keepAliveTimeout = 30_000;
  process.on('message', (message) => {
    if (message === 'arrivals') {
      process.send({ arrivals });
      arrivals = [];
    }
    if (message === 'exit') server.close(() => process.exit(0));
  });
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
} else {
  await main();
}

async function main() {
  const { deliver } = await import('../dist/transport/deliver.js');
  const { createTrackClient } = await import('../dist/transport/http-client.js');
  const { textHash } = await import('../dist/model/identity.js');

  const child = fork(fileURLToPath(import.meta.url), ['--server'], { stdio: 'inherit' });
  const ask = (message, key) =>
    new Promise((resolve) => {
      const on = (reply) => {
        if (key in reply) {
          child.off('message', on);
          resolve(reply[key]);
        }
      };
      child.on('message', on);
      if (message !== undefined) child.send(message);
    });
  const port = await ask(undefined, 'port');
  const url = `http://127.0.0.1:${port}`;

  /** Synthetic requests, built as they are pulled (as the batcher would hand them over). */
  async function* plan(requests) {
    let line = 2;
    for (let seq = 0; seq < requests; seq += 1) {
      const attributes = new Array(ITEMS_PER_REQUEST);
      const origins = new Array(ITEMS_PER_REQUEST);
      const userKeys = new Array(ITEMS_PER_REQUEST);
      for (let i = 0; i < ITEMS_PER_REQUEST; i += 1, line += 1) {
        const id = `user-${line}`;
        attributes[i] = { external_id: id, first_name: 'Ada', score: line % 1000, vip: line % 7 === 0 };
        origins[i] = { file: 'users.csv', line, row: null };
        userKeys[i] = textHash(`external_id:${id}`);
      }
      yield { seq, body: { attributes }, origins: { attributes: origins, events: [], purchases: [] }, userKeys };
    }
  }

  const settledLines = { count: 0 };
  const journal = {
    record(request) {
      settledLines.count += request.origins.attributes.length;
    },
    async flush() {},
  };

  // the floor: csv-parse reading ROWS rows of a typical users file
  const floor = fork(fileURLToPath(import.meta.url), ['--floor'], { stdio: 'inherit' });
  const { parseMs, parseCpuMs } = await new Promise((resolve) => floor.once('message', resolve));
  let t;
  let cpu;
  const cpuMs = (since) => {
    const used = process.cpuUsage(since);
    return (used.user + used.system) / 1000;
  };

  // 1. as fast as it goes
  const requests = Math.ceil(ROWS / ITEMS_PER_REQUEST);
  const fast = createTrackClient({ url, apiKey: 'bench-key-0000', connections: CONCURRENCY });
  // warm the connections and the server
  await deliver(plan(CONCURRENCY * 4), { client: fast, concurrency: CONCURRENCY });
  t = performance.now();
  cpu = process.cpuUsage();
  const summary = await deliver(plan(requests), { client: fast, concurrency: CONCURRENCY, journal });
  const deliverMs = performance.now() - t;
  const deliverCpuMs = cpuMs(cpu);

  // the same requests through the client alone: what pacing, ordering and bookkeeping add
  const source = plan(requests)[Symbol.asyncIterator]();
  t = performance.now();
  cpu = process.cpuUsage();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let next = await source.next(); !next.done; next = await source.next()) await fast.post(JSON.stringify(next.value.body));
    }),
  );
  const rawMs = performance.now() - t;
  const rawCpuMs = cpuMs(cpu);
  await fast.close();
  if (summary.requestsSettled !== requests || summary.fatal) throw new Error(`delivery failed: ${summary.fatal?.message}`);
  console.log(`csv-parse, ${ROWS.toLocaleString('en')} rows (floor): ${(parseMs / 1000).toFixed(2)} s (${(parseCpuMs / 1000).toFixed(2)} s CPU)`);
  console.log(
    `deliver, no rate limit, concurrency ${CONCURRENCY}: ${requests.toLocaleString('en')} requests of ${ITEMS_PER_REQUEST} items in ${(deliverMs / 1000).toFixed(2)} s`,
  );
  console.log(`  ${Math.round(requests / (deliverMs / 1000)).toLocaleString('en')} requests/s, ${Math.round((requests * ITEMS_PER_REQUEST) / (deliverMs / 1000)).toLocaleString('en')} items/s`);
  console.log(`  ratio to the csv-parse floor: ${(deliverMs / parseMs).toFixed(2)}x wall, ${(deliverCpuMs / parseCpuMs).toFixed(2)}x CPU (the whole upload may take 2x)`);
  console.log(`  CPU per request: ${((deliverCpuMs * 1000) / requests).toFixed(0)} us; the HTTP client alone: ${((rawCpuMs * 1000) / requests).toFixed(0)} us (${Math.round(requests / (rawMs / 1000)).toLocaleString('en')} requests/s)`);
  console.log(`  rows journaled: ${settledLines.count.toLocaleString('en')}`);
  await ask('arrivals', 'arrivals'); // drop the arrivals of this phase

  // 2. paced
  const paced = createTrackClient({ url, apiKey: 'bench-key-0000', connections: CONCURRENCY });
  await deliver(plan(CONCURRENCY), { client: paced, concurrency: CONCURRENCY }); // warm
  await ask('arrivals', 'arrivals');
  await new Promise((r) => setTimeout(r, 1_100)); // start with a fresh window
  const sentAt = [];
  const watched = {
    endpoint: paced.endpoint,
    post: (json, signal, onSent) =>
      paced.post(json, signal, () => {
        sentAt.push(performance.timeOrigin + performance.now());
        onSent?.();
      }),
  };
  const pacedRequests = RATE * RATE_SECONDS;
  t = performance.now();
  const pacedSummary = await deliver(plan(pacedRequests), { client: watched, concurrency: CONCURRENCY, rate: RATE });
  const pacedMs = performance.now() - t;
  await paced.close();
  const arrivals = await ask('arrivals', 'arrivals');
  if (pacedSummary.requestsSettled !== pacedRequests) throw new Error('paced delivery failed');

  // over the run: from the call to its return; steady: between the first and the last start
  const span = (Math.max(...sentAt) - Math.min(...sentAt)) / 1000;
  const meanOverRun = pacedRequests / (pacedMs / 1000);
  const steady = (pacedRequests - 1) / span;
  console.log(`deliver, --rate ${RATE}, ${pacedRequests.toLocaleString('en')} requests: ${(pacedMs / 1000).toFixed(2)} s`);
  console.log(
    `  mean rate: ${meanOverRun.toFixed(1)}/s over the run (${((100 * meanOverRun) / RATE).toFixed(1)}% of ${RATE}), ` +
      `${steady.toFixed(1)}/s between the first and last start (${((100 * steady) / RATE).toFixed(1)}%)`,
  );
  console.log(`  most starts in any 1 s window: ${maxInWindow(sentAt)} as sent, ${maxInWindow(arrivals)} as the server saw them (limit ${RATE})`);
  console.log(`peak RSS of the delivering process: ${Math.round(process.resourceUsage().maxRSS / 1024)} MB`);

  child.send('exit');
}

function maxInWindow(times, windowMs = 1000) {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i += 1) {
    while (sorted[i] - sorted[j] >= windowMs) j += 1;
    best = Math.max(best, i - j + 1);
  }
  return best;
}
