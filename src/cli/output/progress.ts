// Progress while a run goes: a spinner line on a terminal (a timestamped line every 5 s otherwise),
// and the notices worth a line of their own (long waits, 429 pauses).
import type { Ora } from 'ora';
import type { DeliveryNotice, DeliveryProgress } from '../../transport/index.js';
import { LONG_WAIT_MS, type WaitReason } from '../../transport/pacer.js';

/** A count as a person reads it: 1,234,567. */
export const number = (n: number): string => Math.round(n).toLocaleString('en-US');

export function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

const clockTime = (epochMs: number): string => `${new Date(epochMs).toISOString().slice(11, 19)} UTC`;

/** A spinner on stderr that leaves the terminal's input alone, so that Ctrl-C stays a signal. */
export async function startSpinner(text: string): Promise<Ora> {
  return (await import('ora')).default({ stream: process.stderr, text, discardStdin: false }).start();
}

/** The spinner text of a dry run. */
export const readingLine = (file: string, rows: number, requests: number): string => `reading ${file}: ${number(rows)} rows, ${number(requests)} requests`;

const WAIT_REASONS: Record<WaitReason, string> = {
  hourly: 'the hourly limit',
  'retry-after': "the server's Retry-After (429)",
  'server-window': "the server's rate-limit window",
  rate: 'the --rate limit',
};

/** A notice worth a line on stderr: long waits always; with no spinner, also each 429 pause (once per pause). */
export function noticeLine(notice: DeliveryNotice, spinner: boolean, hourly: number | undefined, last: { pauseEnds: number }): string | undefined {
  switch (notice.type) {
    case 'waiting': {
      const why = notice.reason === 'hourly' && hourly !== undefined ? `the hourly limit (--hourly ${hourly})` : WAIT_REASONS[notice.reason];
      return `waiting for ${why} until ${clockTime(notice.untilWallMs)}`;
    }
    case 'retry':
      return notice.delayMs > LONG_WAIT_MS ? `${notice.reason}: trying again at ${clockTime(Date.now() + notice.delayMs)}` : undefined;
    case 'rate-limited': {
      // every request in flight may get its 429 for the same pause
      const ends = Date.now() + notice.waitMs;
      // a long pause is told as a wait, with when it ends
      if (spinner || notice.waitMs > LONG_WAIT_MS || Math.abs(ends - last.pauseEnds) < 1_000) return undefined;
      last.pauseEnds = ends;
      return `rate limited: all sending paused for ${duration(notice.waitMs)}`;
    }
    case 'warning':
      return `warning: ${notice.message}`;
    default:
      return undefined;
  }
}

/** What the progress line of an upload shows, kept up to date as reading and sending go. */
export interface Meter {
  /** Epoch ms until which all sending waits (a long wait told by the deliverer). */
  waitingUntil?: number;
  rows: number;
  bytes: number;
  totalBytes: number;
  delivery?: DeliveryProgress;
  startedAt: number;
}

export function progressLine(m: Meter): string {
  const d = m.delivery;
  const sum = (k: 'sent' | 'accepted' | 'rejected'): number =>
    d === undefined ? 0 : d.items.attributes[k] + d.items.events[k] + d.items.purchases[k];
  const elapsed = Date.now() - m.startedAt;
  const rate = d === undefined || elapsed === 0 ? 0 : (d.requestsSent * 1000) / elapsed;
  const parts = [`rows read ${number(m.rows)}`, `sent ${number(sum('sent'))}`, `accepted ${number(sum('accepted'))}`, `rejected ${number(sum('rejected'))}`, `${rate.toFixed(1)} req/s`];
  if (m.waitingUntil !== undefined && m.waitingUntil > Date.now()) parts.push(`waiting until ${clockTime(m.waitingUntil)}`);
  else if (m.totalBytes > 0 && m.bytes > 0 && m.bytes < m.totalBytes) {
    parts.push(`ETA ${duration((elapsed * (m.totalBytes - m.bytes)) / m.bytes)}`);
  }
  if (d !== undefined && d.heldForMs > 0) parts.push(`held ${duration(d.heldForMs)} by the rate limit`);
  return parts.join(', ');
}
