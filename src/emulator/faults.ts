// Injected faults, so a client's retry path can be rehearsed: random failures, latency, dropped
// connections, and one forced outcome per request through the X-Track-Fault header.

export type Fault =
  | { kind: 'status'; status: number }
  /** Close the connection without an answer; nothing applied. */
  | { kind: 'drop' }
  /** Apply the request, then close the connection without an answer: an outcome the client cannot know. */
  | { kind: 'drop-after-commit' };

export interface FaultConfig {
  /** Fraction of requests answered 500 or 503. */
  failRate: number;
  /** Fraction of requests whose connection is closed without an answer. */
  dropRate: number;
  /** Delay before answering, in ms: fixed, or a range drawn uniformly. */
  latency?: { min: number; max: number };
}

export const FAULT_HEADER = 'x-track-fault';

/**
 * The forced outcome a header value asks for: `500`..`599` or `429` answers that status, `drop`
 * closes without an answer, `drop-after-commit` applies the request and then closes.
 */
export function parseFaultHeader(value: string | undefined): Fault | 'latency-only' | undefined {
  if (value === undefined) return undefined;
  const v = value.trim().toLowerCase();
  if (v === 'drop') return { kind: 'drop' };
  if (v === 'drop-after-commit') return { kind: 'drop-after-commit' };
  if (/^(429|5\d\d)$/.test(v)) return { kind: 'status', status: Number(v) };
  if (v === 'none') return 'latency-only';
  return undefined;
}

/** The fault chosen for one request, forced by header or drawn at the configured rates. */
export function chooseFault(config: FaultConfig, header: string | undefined, random: () => number = Math.random): Fault | undefined {
  const forced = parseFaultHeader(header);
  if (forced === 'latency-only') return undefined;
  if (forced !== undefined) return forced;
  const r = random();
  if (r < config.dropRate) return { kind: 'drop' };
  if (r < config.dropRate + config.failRate) return { kind: 'status', status: random() < 0.5 ? 500 : 503 };
  return undefined;
}

export function latencyMs(config: FaultConfig, random: () => number = Math.random): number {
  if (config.latency === undefined) return 0;
  const { min, max } = config.latency;
  return min + Math.round((max - min) * random());
}
