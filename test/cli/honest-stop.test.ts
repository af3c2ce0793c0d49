// An honest stop: a run stopped by SIGINT or SIGTERM without a terminal says so every time, in the
// JSON summary (`interrupted: true`) and in the text one (the rows read and those left unsettled),
// however the signal falls: here while sending outpaces planning, so that the delivery is often
// waiting on the planning thread when it comes.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const { tmp, faultServer } = useServers();

/** A CRM table of `rows` users and 13 columns, every row valid. */
function crmTable(rows: number): string {
  const path = join(tmp.dir, 'users.csv');
  const lines = ['external_id,email,phone,first_name,last_name,dob,country,plan,company,city,zip,score,signed_up'];
  for (let i = 0; i < rows; i += 1) {
    const phone = `+1415555${String(1000 + (i % 9000))}`;
    lines.push(`E-${i},u${i}@example.com,${phone},First${i},Last${i},1990-05-02,US,team,Globex ${i},Springfield,0${2134 + (i % 100)},${i},2024-03-07T10:00:00Z`);
  }
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

/** Runs the upload and sends `signal` once the server has taken `after` requests; the exit status and output. */
function stopped(args: string[], signal: NodeJS.Signals, server: { received: unknown[] }, after: number) {
  return new Promise<{ status: number | null; stdout: string }>((resolve) => {
    const child = spawn(process.execPath, [BIN, 'upload', ...args], { cwd: tmp.dir, env: { ...process.env, NO_COLOR: '1' } });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const poll = setInterval(() => {
      if (server.received.length < after) return;
      clearInterval(poll);
      child.kill(signal);
    }, 5);
    child.on('close', (status) => {
      clearInterval(poll);
      resolve({ status, stdout });
    });
  });
}

describe('a run stopped by a signal, without a terminal', () => {
  it('says it was interrupted, every time, with what it left unsettled', async () => {
    const server = await faultServer();
    const file = crmTable(100_000);
    const common = [file, '--url', server.url, '--api-key', 'k', '--rate', '1000000', '--restart'];
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      for (let i = 0; i < 3; i += 1) {
        server.forget();
        // the text summary once, the JSON one the other times
        const json = i > 0;
        const run = await stopped(json ? [...common, '--json'] : common, signal, server, 40);
        expect(run.status, `${signal} ${i}`).toBe(130);
        if (!json) {
          expect(run.stdout).toMatch(/\ninterrupted by a signal \(Ctrl-C, SIGTERM, SIGHUP\) after [\d,]+ rows of the input were read: [\d,]+ rows unsettled(?: \((?:[\d,]+ in requests tried and left without a verdict, [\d,]+ )?not sent yet\))?, and the rest of the input is not read yet; run again with --resume to send the rest\n/);
          continue;
        }
        const summary = JSON.parse(run.stdout);
        expect(summary.interrupted, `${signal} ${i}: ${summary.rows} rows read`).toBe(true);
        expect(summary.readToEnd).toBe(false);
        expect(summary.rows).toBeLessThan(100_000);
        expect(summary.delivery.stopped).toBe(true);
      }
    }
  }, 120_000);
});

describe('a stop that comes once every row was read', () => {
  it('says every row was read, not that the rest of the input is unread, and resumes the rest', async () => {
    const server = await faultServer();
    // one chunk of 1,000 rows: read at once, planned into 20 requests sent one a second
    const path = join(tmp.dir, 'small.csv');
    writeFileSync(path, `external_id,plan\n${Array.from({ length: 1000 }, (_, i) => `u${i},team\n`).join('')}`);
    const common = [path, '--url', server.url, '--api-key', 'k', '--rate', '1', '--restart'];
    const text = await stopped(common, 'SIGTERM', server, 2);
    expect(text.status).toBe(130);
    expect(text.stdout).toMatch(/\ninterrupted by a signal \(Ctrl-C, SIGTERM, SIGHUP\) after every row was read: [\d,]+ rows unsettled(?: \((?:[\d,]+ in requests tried and left without a verdict, [\d,]+ )?not sent yet\))?; run again with --resume to send the rest\n/);
    expect(text.stdout).not.toContain('not read yet');

    server.forget();
    const json = await stopped([...common, '--json'], 'SIGTERM', server, 2);
    const summary = JSON.parse(json.stdout);
    expect(summary).toMatchObject({ interrupted: true, readToEnd: true, rows: 1000 });

    // the resume sends every row the stopped run did not settle, each once
    server.forget();
    const resumed = await stopped([path, '--url', server.url, '--api-key', 'k', '--resume', '--json'], 'SIGTERM', server, Number.POSITIVE_INFINITY);
    const after = JSON.parse(resumed.stdout);
    const sentBefore = summary.delivery.items.attributes.accepted;
    expect(after.exitStatus).toBe(0);
    expect(after.delivery.items.attributes.accepted).toBe(1000 - sentBefore);
    const ids = server.appliedItems().map(({ item }) => item.external_id);
    expect(new Set(ids).size).toBe(ids.length);
  }, 60_000);
});

describe('a stop while taken requests wait for their turn', () => {
  // every request names the same 100 users: each waits for the one before it to be answered (one
  // user's items go in order); or the pacer holds them (--rate 1): most requests the delivery took
  // were never posted at the stop
  for (const [how, flags] of [['their users\' earlier requests', []], ['the pacer', ['--rate', '1']]] as const) {
    it(`counts the rows of requests never posted as not sent, not as tried and left without a verdict: waiting for ${how}`, async () => {
      const server = await faultServer(() => ({ kind: 'ok', delayMs: 300 }));
      const path = join(tmp.dir, 'clicks.csv');
      writeFileSync(path, `external_id,name,time\n${Array.from({ length: 3000 }, (_, i) => `e${i % 100},clicked,2024-03-07T10:${String(i % 60).padStart(2, '0')}:00Z\n`).join('')}`);
      const run = await stopped([path, '--url', server.url, '--api-key', 'k', '--json', ...flags], 'SIGTERM', server, 2);
      expect(run.status).toBe(130);
      const summary = JSON.parse(run.stdout);
      const d = summary.delivery;
      const neverPosted = d.notDelivered['stopped before it was sent'];
      expect(neverPosted).toBeGreaterThan(0);
      // only requests the server got can have been left without a verdict
      expect(d.requestsAbandoned).toBeLessThanOrEqual(server.received.length - d.requestsSent);
      expect(d.rowsAbandoned).toBe(d.requestsAbandoned * 50);
      expect(d.requestsSettled + d.requestsAbandoned + neverPosted).toBe(d.requestsPulled);
      expect(d.rowsAbandoned + summary.rowsNotSent).toBe(summary.rowsUnsettled);
      expect(summary.rowsNotSent).toBeGreaterThanOrEqual(neverPosted * 50);
    }, 30_000);
  }
});

describe('a stop while planned requests wait to be sent', () => {
  it('counts every row read: accepted, or unsettled, those not handed to the delivery yet among them; the resume sends exactly the rest', async () => {
    const server = await faultServer();
    // 20 requests planned at once; one in flight and one waiting (--concurrency 1): the other 18 are
    // planned and not yet taken when the stop comes
    const path = join(tmp.dir, 'small.csv');
    writeFileSync(path, `external_id,plan\n${Array.from({ length: 1000 }, (_, i) => `u${i},team\n`).join('')}`);
    const events = join(tmp.dir, 'events.ndjson');
    const common = [path, '--url', server.url, '--api-key', 'k', '--rate', '1', '--concurrency', '1'];
    const text = await stopped([...common, '--restart'], 'SIGTERM', server, 2);
    expect(text.status).toBe(130);
    const accepted = Number(/\nattributes  sent [\d,]+, accepted ([\d,]+)/.exec(text.stdout)![1].replace(/,/g, ''));
    // (all of them not sent yet: said once, as "(not sent yet)")
    const line = /\ninterrupted by a signal \(Ctrl-C, SIGTERM, SIGHUP\) after every row was read: ([\d,]+) rows unsettled \((?:(?:([\d,]+) in requests tried and left without a verdict, )?([\d,]+) )?not sent yet\); run again with --resume to send the rest\n/.exec(text.stdout);
    expect(line, text.stdout).not.toBeNull();
    const [unsettled, taken] = line!.slice(1, 3).map((n) => Number((n ?? '0').replace(/,/g, '')));
    const notSent = line![3] === undefined ? unsettled : Number(line![3].replace(/,/g, ''));
    expect(accepted + unsettled).toBe(1000);
    expect(taken + notSent).toBe(unsettled);
    expect(notSent).toBeGreaterThan(0);

    server.forget();
    const json = await stopped([...common, '--restart', '--json', '--events', events], 'SIGTERM', server, 2);
    const summary = JSON.parse(json.stdout);
    expect(summary).toMatchObject({ interrupted: true, readToEnd: true, rows: 1000 });
    const { accepted: sentBefore } = summary.delivery.items.attributes;
    expect(sentBefore + summary.rowsUnsettled).toBe(1000);
    expect(summary.delivery.rowsAbandoned + summary.rowsNotSent).toBe(summary.rowsUnsettled);
    expect(summary.rowsNotSent).toBeGreaterThan(0);
    // the end event carries the summary --json prints
    const end = readFileSync(events, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l)).find((e) => e.type === 'end');
    expect(end.summary).toMatchObject({ rowsUnsettled: summary.rowsUnsettled, rowsNotSent: summary.rowsNotSent });

    // the resume sends every row the stopped run did not settle, each once
    server.forget();
    const resumed = await stopped([path, '--url', server.url, '--api-key', 'k', '--resume', '--json'], 'SIGTERM', server, Number.POSITIVE_INFINITY);
    const after = JSON.parse(resumed.stdout);
    expect(after.exitStatus).toBe(0);
    expect(after.delivery.items.attributes.accepted).toBe(summary.rowsUnsettled);
    expect(after.rowsUnsettled).toBe(0);
    const ids = server.appliedItems().map(({ item }) => item.external_id);
    expect(new Set(ids).size).toBe(ids.length);
  }, 60_000);
});

describe('a run killed before it writes its summary', () => {
  it('leaves no --summary-file, not the one an earlier run left there', async () => {
    const server = await faultServer();
    server.script(() => ({ kind: 'hang' }));
    const path = join(tmp.dir, 'small.csv');
    writeFileSync(path, 'external_id,plan\nu1,team\n');
    const summary = join(tmp.dir, 'summary-0.json');
    writeFileSync(summary, '{"command":"upload","rows":1,"exitStatus":0}\n');
    const killed = await stopped([path, '--url', server.url, '--api-key', 'k', '--summary-file', summary], 'SIGKILL', server, 1);
    expect(killed.status).toBe(null);
    expect(existsSync(summary)).toBe(false);
  }, 60_000);
});
