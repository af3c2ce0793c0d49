// The run's events as the outputs receive them: notices become waits and retries, progress is read
// off the plan and the delivery, the last progress comes before end, and each event fits the schema.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRunEvents, type RunEvent } from '../../src/cli/output/run-events.js';
import { emptyDeliverySummary, progressOf } from '../../src/transport/summary.js';
import { checkedEvent } from '../helpers/progress-events.js';

function recorder(now: { ms: number }) {
  const seen: RunEvent[] = [];
  const events = createRunEvents([{ progressEvery: 3600, event: (e) => seen.push(e) }], { totalBytes: 1000, now: () => now.ms });
  return { seen, events };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('the run events', () => {
  it('turns notices into waits and retries, with when they end', () => {
    const now = { ms: Date.parse('2024-05-01T10:00:00Z') };
    const { seen, events } = recorder(now);
    events.start({ command: 'upload', inputs: [{ file: 'a.csv', bytes: 1000 }], target: 'http://127.0.0.1:1', limits: { rate: 10 } });
    events.notice({ type: 'rate-limited', seq: 4, waitMs: 2500 });
    events.notice({ type: 'waiting', reason: 'hourly', untilWallMs: now.ms + 60_000 });
    events.notice({ type: 'retry', seq: 5, failure: 1, delayMs: 800, reason: 'HTTP 503' });
    events.notice({ type: 'unknown-outcome', seq: 6, action: 'retry', reason: 'socket closed' });
    for (const e of seen) checkedEvent(e);
    expect(seen.slice(1)).toEqual([
      { type: 'wait', time: '2024-05-01T10:00:00.000Z', reason: 'rate-limited', until: '2024-05-01T10:00:02.500Z', seconds: 2.5, request: 4 },
      { type: 'wait', time: '2024-05-01T10:00:00.000Z', reason: 'hourly', until: '2024-05-01T10:01:00.000Z', seconds: 60 },
      { type: 'retry', time: '2024-05-01T10:00:00.000Z', request: 5, attempt: 2, reason: 'HTTP 503', delaySeconds: 0.8 },
      { type: 'unknown-outcome', time: '2024-05-01T10:00:00.000Z', request: 6, action: 'retry', reason: 'socket closed' },
    ]);
  });

  it('reads progress off the plan and the delivery, estimates the time left, and gives the last progress before end', async () => {
    const now = { ms: 1_700_000_000_000 };
    const { seen, events } = recorder(now);
    events.start({ command: 'upload', inputs: [], limits: { rate: 10 } });
    events.read({ file: 'a.csv', rows: 200, requests: 4, bytes: 500, rejected: 3, dataPoints: 400 });
    now.ms += 2000;
    const d = emptyDeliverySummary();
    d.requestsSent = 2;
    d.requestsSettled = 2;
    d.requestsPulled = 4;
    d.items.events = { sent: 100, accepted: 98, rejected: 2 };
    d.dataPoints = 196;
    d.answers = { 201: 2, 429: 1 };
    events.delivery(progressOf(d, 2, 0));
    const p = checkedEvent(events.progress());
    // half the bytes read made 4 requests: 8 expected, 2 settled in 2 s, so 6 more take 6 s
    expect(p).toMatchObject({ rows: 200, rejectedRows: 3, requests: { planned: 4, sent: 2, settled: 2, inFlight: 2 }, answers: { 201: 2, 429: 1 }, items: { sent: 100, accepted: 98, rejected: 2 }, dataPoints: 196, requestsPerSecond: 1, etaSeconds: 6 });
    await events.end({ command: 'upload', rows: 200, rejected: 3, rejectedTotal: 5, requests: 4, elapsedMs: 2000, dataPoints: { sent: 196, avoided: 0, planned: 400 } }, 1);
    expect(seen.slice(-2).map((e) => e.type)).toEqual(['progress', 'end']);
    checkedEvent(seen.at(-1));
  });

  it('gives the consumers of one interval the same progress event, each interval its own', async () => {
    vi.useFakeTimers();
    // a clock that moves on each time it is read: events made apart would differ
    const now = { ms: 1_700_000_000_000 };
    const tick = (): number => (now.ms += 1);
    const seen: Record<string, RunEvent[]> = { stderr: [], file: [], report: [] };
    const consumer = (name: string, progressEvery: number) => ({ progressEvery, event: (e: RunEvent) => seen[name].push(e) });
    const events = createRunEvents([consumer('stderr', 5), consumer('file', 5), consumer('report', 1)], { totalBytes: 0, now: tick });
    events.start({ command: 'validate', inputs: [], limits: { rate: 1 } });
    vi.advanceTimersByTime(10_000);
    const progress = (name: string): RunEvent[] => seen[name].filter((e) => e.type === 'progress');
    expect(progress('stderr')).toHaveLength(2);
    expect(progress('file')).toEqual(progress('stderr'));
    expect(progress('report')).toHaveLength(10);
    await events.end({ command: 'validate', rows: 0, rejected: 0, rejectedTotal: 0, requests: 0, elapsedMs: 0, dataPoints: { sent: 0, avoided: 0, planned: 0 } }, 0);
    expect(seen.file).toEqual(seen.stderr);
  });

  it('closes the outputs last listed first, so the first still hear the warnings of the others closing', async () => {
    const lines: string[] = [];
    let open = true;
    const eventsFile = { event: (e: RunEvent) => open && lines.push(e.type), close: async () => void (open = false) };
    const failing = { event: () => undefined, close: async () => Promise.reject(new Error('cannot write $GITHUB_STEP_SUMMARY')) };
    const events = createRunEvents([eventsFile, failing], { totalBytes: 0, now: () => 0 });
    events.start({ command: 'validate', inputs: [], limits: { rate: 1 } });
    await events.end({ command: 'validate', rows: 0, rejected: 0, rejectedTotal: 0, requests: 0, elapsedMs: 0, dataPoints: { sent: 0, avoided: 0, planned: 0 } }, 0);
    expect(lines).toEqual(['start', 'end', 'warning']);
  });

  it('tells an error that came before a summary without a progress event', async () => {
    const { seen, events } = recorder({ ms: 0 });
    events.start({ command: 'validate', inputs: [], limits: { rate: 1 } });
    await events.failed(Object.assign(new Error('bad flag'), { name: 'UsageError' }), 2);
    expect(seen.map((e) => e.type)).toEqual(['start', 'error']);
    expect(checkedEvent(seen[1])).toMatchObject({ exitStatus: 2, error: { name: 'UsageError', message: 'bad flag' } });
  });
});
