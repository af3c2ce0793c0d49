// Progress while a run goes: a spinner line on a terminal (a timestamped line every 5 s otherwise),
// the notices worth a line of their own (long waits, 429 pauses), and what a stopped run waits for.
import type { Ora } from 'ora';
import type { DeliveryNotice, DeliveryProgress } from '../../transport/index.js';
import type { ReadProgress } from '../../upload/upload.js';
import { LONG_WAIT_MS, type WaitReason } from '../../transport/pacer.js';
import { itemsSum } from '../../transport/summary.js';

/** A count as a person reads it: 1,234,567. */
export const number = (n: number): string => Math.round(n).toLocaleString('en-US');

/** A count and its noun, one for 1: `1 row`, `1,234 rows`, `1 retry`, `2 retries`. */
export const counted = (n: number, one: string, many = `${one}s`): string => `${number(n)} ${n === 1 ? one : many}`;

export function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

const clockTime = (epochMs: number): string => `${new Date(epochMs).toISOString().slice(11, 19)} UTC`;

/**
 * Whether stderr is a terminal a spinner can be drawn on: one that reports no width (a pseudo-terminal
 * whose size was never set, as `script` or a CI wrapper gives a command) would have the spinner clear
 * lines without end, so it gets the plain lines instead.
 */
export const spinnerFits = (stream: NodeJS.WriteStream = process.stderr): boolean => stream.isTTY === true && (stream.columns ?? 0) > 0;

/** A spinner on stderr that leaves the terminal's input alone, so that Ctrl-C stays a signal. */
export async function startSpinner(text: string): Promise<Ora> {
  return (await import('ora')).default({ stream: process.stderr, text, discardStdin: false }).start();
}

/** The spinner text of a dry run. */
export const readingLine = (file: string, rows: number, requests: number): string => `reading ${file}: ${counted(rows, 'row')}, ${counted(requests, 'request')}`;

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

/**
 * What a stopped upload waits for, as soon as the stop is taken: `stopping: 8 requests in flight; Ctrl-C
 * again to abort`; `journal`: the run keeps one (not with --no-journal, nor from standard input).
 */
export function stoppingLine(inFlight: number | undefined, timeoutSeconds: number, journal = true): string {
  if (inFlight === undefined || inFlight === 0) return `stopping: no request in flight${journal ? ', saving the journal' : ''}; Ctrl-C again to abort`;
  const requests = counted(inFlight, 'request');
  return `stopping: ${requests} in flight, waiting for ${inFlight === 1 ? 'its answer' : 'their answers'} (at most ${timeoutSeconds} s each, --request-timeout); Ctrl-C again to abort`;
}

/** What the progress line of an upload shows, kept up to date as reading and sending go. */
export interface Meter {
  /** Set by the first Ctrl-C: the line then says what the run waits for, and no ETA. */
  stopping?: { inFlight: number | undefined };
  /** Epoch ms until which all sending waits (a long wait told by the deliverer). */
  waitingUntil?: number;
  rows: number;
  /** Rows rejected before sending, so far (the server's refusals are the delivery's). */
  rejected: number;
  bytes: number;
  totalBytes: number;
  delivery?: DeliveryProgress;
  startedAt: number;
}

export function progressLine(m: Meter): string {
  const d = m.delivery;
  const sum = (figure: 'sent' | 'accepted' | 'refused'): number => (d === undefined ? 0 : itemsSum(d.items, figure));
  const elapsed = Date.now() - m.startedAt;
  const rate = d === undefined || elapsed === 0 ? 0 : (d.requestsSent * 1000) / elapsed;
  // rejected: as the summary counts them, the rows refused before sending and the items the server refused
  const parts = [`rows read ${number(m.rows)}`, `sent ${number(sum('sent'))}`, `accepted ${number(sum('accepted'))}`, `rejected ${number(m.rejected + sum('refused'))}`, `${rate.toFixed(1)} req/s`];
  if (m.stopping !== undefined) {
    // the line of its own said the rest; no rate or ETA while nothing more is sent
    const n = m.stopping.inFlight ?? 0;
    return `stopping: ${counted(n, 'request')} in flight; Ctrl-C again to abort | ${parts.slice(0, 4).join(', ')}`;
  }
  if (m.waitingUntil !== undefined && m.waitingUntil > Date.now()) parts.push(`waiting until ${clockTime(m.waitingUntil)}`);
  else if (m.totalBytes > 0 && m.bytes > 0 && m.bytes < m.totalBytes) {
    parts.push(`ETA ${duration((elapsed * (m.totalBytes - m.bytes)) / m.bytes)}`);
  }
  if (d !== undefined && d.heldForMs > 0) parts.push(`held ${duration(d.heldForMs)} by the rate limit`);
  return parts.join(', ');
}

/** The progress of an upload on stderr, fed by the run's callbacks. */
export interface UploadProgress {
  onRead: (read: ReadProgress) => void;
  /** Undefined with --quiet: progress is built for every settled request, and nothing would show it. */
  onDelivery?: (progress: DeliveryProgress) => void;
  onNotice: (notice: DeliveryNotice) => void;
  /** The first Ctrl-C was taken: said at once, unless the delivery has said it with what it waits for. */
  stopping: () => void;
  /** The run is over: the spinner and the ticker stop. */
  end: () => void;
}

export async function startUploadProgress(options: {
  quiet: boolean;
  /** Nothing at all on stderr, the stop line included (NDJSON progress events take it). */
  silent?: boolean;
  totalBytes: number;
  hourly?: number;
  timeoutSeconds: number;
  /** The run keeps a journal (what a stop with nothing in flight is saving). */
  journal: boolean;
  /** Between progress lines when stderr is not a terminal (default 5 s). */
  intervalMs?: number;
}): Promise<UploadProgress> {
  const { quiet, hourly, timeoutSeconds } = options;
  const meter: Meter = { rows: 0, rejected: 0, bytes: 0, totalBytes: options.totalBytes, startedAt: Date.now() };
  const lastPause = { pauseEnds: 0 };
  const spinner = !quiet && spinnerFits() ? await startSpinner('starting') : undefined;
  const tick = (): void => {
    if (spinner !== undefined) spinner.text = progressLine(meter);
    else process.stderr.write(`${new Date().toISOString()} ${progressLine(meter)}\n`);
  };
  const ticker = quiet ? undefined : setInterval(tick, spinner !== undefined ? 200 : (options.intervalMs ?? 5000));
  /** A line of its own above the spinner. */
  const say = (line: string): void => {
    spinner?.clear();
    process.stderr.write(`${line}\n`);
    spinner?.render();
  };
  // the first Ctrl-C is answered at once, on the spinner and in a line of its own, whatever --quiet says;
  // the delivery's word on it, when it begins, gets a line only when it tells more
  let toldStopping: string | undefined;
  const tellStopping = (inFlight: number | undefined): void => {
    meter.stopping = { inFlight };
    if (options.silent === true) return;
    if (spinner !== undefined) spinner.text = progressLine(meter);
    const line = stoppingLine(inFlight, timeoutSeconds, options.journal);
    if (line !== toldStopping) say(`\n${line}`);
    toldStopping = line;
  };
  return {
    onRead: ({ rows, bytes, rejected }) => {
      meter.rows = rows;
      meter.rejected = rejected ?? meter.rejected;
      meter.bytes += bytes;
    },
    onDelivery: quiet
      ? undefined
      : (progress) => {
          meter.delivery = progress;
          if (meter.stopping !== undefined) meter.stopping.inFlight = progress.inFlight;
        },
    onNotice: (notice) => {
      if (notice.type === 'stopping') return tellStopping(notice.inFlight);
      if (quiet) return;
      if (notice.type === 'waiting') meter.waitingUntil = notice.untilWallMs;
      const line = noticeLine(notice, spinner !== undefined, hourly, lastPause);
      if (line !== undefined) say(line);
    },
    stopping: () => {
      if (meter.stopping === undefined) tellStopping(undefined);
    },
    end: () => {
      if (ticker !== undefined) clearInterval(ticker);
      spinner?.stop();
    },
  };
}
