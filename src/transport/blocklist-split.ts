// A request refused whole for a blocklisted external_id (spec 7, a fatal answer: nothing of it was
// applied) is sent again in halves, and a half refused so in halves again, until each blocklisted
// item is alone: only those items are rejected, each naming its id, and the rest is delivered. A
// request of N items costs at most about 2·log2(N) posts more per blocklisted item. The parts'
// verdicts come back as one outcome of the whole request, so it settles once.
import { ARRAY_NAMES, type ArrayName, type MinorError, type TrackRequest } from '../model/types.js';
import type { RequestToSend } from './request.js';
import type { AttemptStats, Ending, ItemPlace, PartItems, SendOutcome } from './send-request.js';

/** The fatal answer to a request holding a blocklisted external_id (decisions.md "Wire format"). */
const BLOCKLISTED = /^HTTP 400: .*\bexternal_id\b.*\bblocklisted\b/i;

export function refusedForBlocklist(outcome: SendOutcome): boolean {
  return outcome.kind === 'rejected' && outcome.errors === undefined && BLOCKLISTED.test(outcome.message);
}

/** Sends one part's body as a request of its own (paced, retried); `items` are the request's items it holds. */
export type SendPart = (json: string, items: readonly ItemPlace[]) => Promise<SendOutcome>;

export interface SplitResult {
  /** The whole request's outcome: accepted, with the items refused named as minor errors; or how sending the parts ended. */
  outcome: SendOutcome;
  /** Parts posted (each counted once, however often it was tried). */
  parts: number;
  /** For a person: the ids refused, and the parts sent (none for a request of one item). */
  warning?: string;
}

/** Adds the distinct (file, line) rows behind some of a request's items to `rows`. */
export function addPartRows(request: RequestToSend, items: readonly ItemPlace[], rows: Set<string>): Set<string> {
  for (const { kind, index } of items) rows.add(`${request.origins[kind][index].file}\u0000${request.origins[kind][index].line}`);
  return rows;
}

/** Distinct (file, line) rows behind some of a request's items. */
export const partRows = (request: RequestToSend, items: readonly ItemPlace[]): number => addPartRows(request, items, new Set()).size;

function bodyOf(request: RequestToSend): TrackRequest {
  const body = request.body;
  return body instanceof Uint8Array ? (JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8')) as TrackRequest) : body;
}

/** The body of a part: the request's other fields as they are, and its items in their order. */
function partJson(body: TrackRequest, items: readonly ItemPlace[]): string {
  const part: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) if (!(ARRAY_NAMES as readonly string[]).includes(key)) part[key] = value;
  for (const { kind, index } of items) ((part[kind] ??= []) as unknown[]).push(body[kind]?.[index]);
  return JSON.stringify(part);
}

function addStats(into: AttemptStats, from: AttemptStats): void {
  into.attempts += from.attempts;
  into.answered += from.answered;
  into.retries += from.retries;
  into.rateLimited += from.rateLimited;
  into.unknownOutcomes += from.unknownOutcomes;
  into.possiblyApplied ||= from.possiblyApplied;
  into.reposted ||= from.reposted;
}

/** The refused items, as minor error entries of the whole request (an entry naming no item of its part has no index). */
type Entry = { type: string; input_array: ArrayName; index?: number };

/** Adds the entries of a part's answer, as entries of the whole request; `rest`: the reason of every item they do not name. */
function addEntries(errors: Entry[], part: readonly ItemPlace[], entries: readonly unknown[], rest?: string): void {
  const byKind: Record<ArrayName, ItemPlace[]> = { attributes: [], events: [], purchases: [] };
  for (const item of part) byKind[item.kind].push(item);
  const named = new Set<ItemPlace>();
  for (const entry of entries) {
    const e = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>;
    const type = typeof e.type === 'string' ? e.type : JSON.stringify(entry);
    const item = typeof e.index === 'number' ? byKind[e.input_array as ArrayName]?.[e.index] : undefined;
    if (item === undefined) errors.push({ type, input_array: e.input_array as ArrayName });
    else {
      named.add(item);
      errors.push({ type, input_array: item.kind, index: item.index });
    }
  }
  if (rest !== undefined) for (const item of part) if (!named.has(item)) errors.push({ type: rest, input_array: item.kind, index: item.index });
}

/** The counts of an outcome, and how it ended. */
function apart(outcome: SendOutcome): { stats: AttemptStats; ending: Ending } {
  const { attempts, answered, retries, rateLimited, unknownOutcomes, possiblyApplied, reposted, ...ending } = outcome;
  return { stats: { attempts, answered, retries, rateLimited, unknownOutcomes, possiblyApplied, reposted }, ending };
}

/** Sends the items of a request refused whole for a blocklisted id in parts; `refused` is that refusal. */
export async function sendInParts(request: RequestToSend, refused: SendOutcome & { kind: 'rejected' }, send: SendPart): Promise<SplitResult> {
  const body = bodyOf(request);
  const items: ItemPlace[] = ARRAY_NAMES.flatMap((kind) => (body[kind] ?? []).map((_, index) => ({ kind, index })));
  const stats = apart(refused).stats;
  const errors: Entry[] = [];
  const blocklisted: string[] = [];
  let parts = 0;
  let applied = false;
  // refused after an attempt whose outcome was not known, or with the outcome not known: it may have been applied
  let inDoubt = refused.possiblyApplied;
  // the whole request's attempts count for every item; a part's, for its own (its items may have been
  // applied twice once it was sent again after an attempt that may have been applied; the parts
  // themselves send again those of a whole request that may have been)
  const partItems: PartItems = {
    unknown: refused.unknownOutcomes > 0 ? [...items] : [],
    possiblyApplied: refused.possiblyApplied ? [...items] : [],
    noVerdict: [],
  };

  /** Sends the halves of `part` (refused whole for a blocklisted id); returns how sending stopped short, if it did. */
  const split = async (part: readonly ItemPlace[], message: string): Promise<Ending | undefined> => {
    if (part.length === 1) {
      const id = body[part[0].kind]?.[part[0].index]?.external_id;
      if (typeof id === 'string') blocklisted.push(id);
      // `, got` as a value in a reason: the rejects' reasons count such rows as one
      addEntries(errors, part, [], typeof id === 'string' ? `${message}, got ${JSON.stringify(id)}` : message);
      return undefined;
    }
    const middle = Math.ceil(part.length / 2);
    for (const half of [part.slice(0, middle), part.slice(middle)]) {
      const outcome = await send(partJson(body, half), half);
      if (outcome.attempts > 0) parts += 1; // (not one a stop left unsent)
      addStats(stats, outcome);
      if (outcome.unknownOutcomes > 0 && refused.unknownOutcomes === 0) partItems.unknown.push(...half);
      if (outcome.reposted && !refused.possiblyApplied) partItems.possiblyApplied.push(...half);
      if (outcome.kind === 'fatal' || outcome.kind === 'abandoned') return apart(outcome).ending;
      if (outcome.kind === 'accepted') {
        applied = true;
        addEntries(errors, half, Array.isArray(outcome.response.errors) ? outcome.response.errors : []);
        continue;
      }
      if (outcome.kind === 'unknown-rejected' || outcome.possiblyApplied) inDoubt = true;
      if (outcome.kind === 'unknown-rejected') partItems.noVerdict.push(...half);
      if (outcome.kind === 'rejected' && refusedForBlocklist(outcome)) {
        const stopped = await split(half, outcome.message);
        if (stopped !== undefined) return stopped;
      } else addEntries(errors, half, (outcome.kind === 'rejected' ? outcome.errors : undefined) ?? [], outcome.message);
    }
    return undefined;
  };

  const stopped = await split(items, refused.message);
  const ids = blocklisted.length === 0 ? '' : ` (${[...new Set(blocklisted)].map((id) => JSON.stringify(id)).join(', ')})`;
  const warning = parts === 0 ? undefined : `request ${request.seq}: refused whole for a blocklisted external_id${ids}; sent again in ${parts} parts, so that only its items are rejected`;
  const done = (ending: Ending): SplitResult => ({ outcome: Object.assign(stats, ending), parts, warning });
  // the parts accepted before a stop were applied: the request's rows stay in doubt
  if (stopped !== undefined) {
    stats.possiblyApplied ||= applied;
    return done({ ...stopped, parts: partItems });
  }
  // (an entry naming no item keeps no index, so that the join warns of it as of a 201's)
  if (applied) return done({ kind: 'accepted', response: { message: 'success', errors: errors as MinorError[] }, inDoubt, parts: partItems });
  // nothing applied: a refusal of every item, each with its own reason
  stats.possiblyApplied ||= inDoubt;
  return done({ kind: 'rejected', message: refused.message, errors, parts: partItems });
}
