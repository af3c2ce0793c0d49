// Numbers a JSON reader would change without a word (docs/upload.md "NDJSON numbers"): a
// number is sent as JavaScript holds it, so one written with more than it can hold is refused, never
// rounded. Refused: a whole number (no fraction, no exponent) beyond ±(2^53 - 1), as for a CSV
// cell; a number too large (it would become Infinity, sent as null) or too small (a non-zero number
// that would become 0); and any other number whose value as sent, in its shortest form, is not the
// value written (`0.1`, `1.5e3` and `0.30000000000000004` are kept; `3.14159265358979323846` is not).
// JSON.parse on Node 20 does not give a number's text, so the text is read again, and only when it
// holds a number with an exponent or sixteen digits or more: shorter ones are always held exactly.

/**
 * A number in JSON text (first, or after `:`, `,` or `[`) with an exponent, or with sixteen digits or
 * more; the number is the first group. Digits inside a string can match too: a match is checked, and
 * only a number that cannot be held is looked for in the text's structure.
 */
const SUSPECT = /(?:^|[:,[])\s*(-?(?:\d(?:\.?\d){15}|\d+(?:\.\d+)?[eE])[\d.eE+-]*)/g;

export interface InexactNumber {
  /** Where in the value: `properties.big`, `events[2].price`; empty for the value itself. */
  path: string;
  /** Why, naming the number and what it would become, and how to keep it. */
  message: string;
}

/** The digits of a decimal without leading or trailing zeros, and the power of ten of the last. */
function decimal(text: string): { negative: boolean; digits: string; exponent: number } {
  const match = /^(-?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text)!;
  const fraction = match[3] ?? '';
  let digits = `${match[2]}${fraction}`.replace(/^0+/, '');
  let exponent = Number(match[4] ?? 0) - fraction.length;
  const trimmed = digits.replace(/0+$/, '');
  exponent += digits.length - trimmed.length;
  digits = trimmed;
  return { negative: match[1] === '-' && digits !== '', digits, exponent: digits === '' ? 0 : exponent };
}

function shown(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}...` : text;
}

const KEEP = 'quote it as a string to send it as written';

/** True when the whole number written is exactly the double n. */
function sameWhole(text: string, n: number): boolean {
  try {
    return BigInt(text.trim()) === BigInt(n);
  } catch {
    return false;
  }
}

/** Why JavaScript cannot hold the number `text` (a JSON number or a CSV cell) as written, or undefined. */
export function numberTextProblem(text: string, advice = KEEP): string | undefined {
  const n = Number(text);
  if (!Number.isFinite(n)) return `${shown(text)} is too large for a number (it would become null); ${advice}`;
  const whole = !/[.eE]/.test(text);
  if (whole) {
    if (Number.isSafeInteger(n)) return undefined;
    // an ID-like number: past 2^53 neighbouring whole numbers share one value, so it is refused even
    // where the value happens to be the one written
    const becomes = sameWhole(text, n) ? '' : ` (it would become ${n})`;
    return `${shown(text)} is a whole number beyond ±${Number.MAX_SAFE_INTEGER}, which a number cannot tell from its neighbours${becomes}; ${advice}`;
  }
  const written = decimal(text);
  const sent = decimal(String(n));
  if (written.digits === sent.digits && written.exponent === sent.exponent && written.negative === sent.negative) return undefined;
  if (n === 0) return `${shown(text)} is too small for a number (it would become 0); ${advice}`;
  return `${shown(text)} has more digits than a number holds (it would become ${n}); ${advice}`;
}

/** The end of the JSON string whose opening quote is at `at` (the index of its closing quote). */
function stringEnd(text: string, at: number): number {
  let end = text.indexOf('"', at + 1);
  for (;;) {
    let backslashes = 0;
    while (text.charCodeAt(end - 1 - backslashes) === 0x5c) backslashes += 1;
    if (backslashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
}

/**
 * The path of the value starting at `at` in `text` (`properties.big`, `events[2].price`, empty for the
 * whole text), or undefined when `at` is inside a string.
 */
function pathAt(text: string, at: number): string | undefined {
  // the key (as its quoted text) or index at each level, and whether that level is an array
  const keys: Array<string | number> = [];
  const arrays: boolean[] = [];
  let wantKey = false;
  for (let i = 0; i < at; ) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const end = stringEnd(text, i);
      if (end >= at) return undefined;
      if (wantKey) {
        keys[keys.length - 1] = text.slice(i, end + 1);
        wantKey = false;
      }
      i = end + 1;
      continue;
    }
    if (c === 0x7b || c === 0x5b) {
      arrays.push(c === 0x5b);
      keys.push(c === 0x5b ? 0 : '');
      wantKey = c === 0x7b;
    } else if (c === 0x7d || c === 0x5d) {
      arrays.pop();
      keys.pop();
    } else if (c === 0x2c) {
      if (arrays[arrays.length - 1]) (keys[keys.length - 1] as number) += 1;
      else wantKey = true;
    }
    i += 1;
  }
  let path = '';
  for (const key of keys) {
    if (typeof key === 'number') path += `[${key}]`;
    else path += (path === '' ? '' : '.') + (JSON.parse(key) as string);
  }
  return path;
}

/**
 * The first number in `text`, valid JSON, that JavaScript cannot hold as written, or undefined. Cheap
 * for text holding no number with an exponent or sixteen digits, and for numbers in their shortest
 * form (what JSON writers write).
 */
export function inexactNumberIn(text: string): InexactNumber | undefined {
  SUSPECT.lastIndex = 0;
  for (let match = SUSPECT.exec(text); match !== null; match = SUSPECT.exec(text)) {
    const number = match[1];
    const n = Number(number);
    if (String(n) === number && (!Number.isInteger(n) || Number.isSafeInteger(n))) continue;
    const problem = numberTextProblem(number);
    if (problem === undefined) continue;
    const path = pathAt(text, match.index + match[0].length - number.length);
    if (path !== undefined) return { path, message: problem };
  }
  return undefined;
}
