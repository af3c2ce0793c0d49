// Bounds on what one item may hold, so no later stage (storage, JSON text, a database) meets input
// it cannot take: nesting depth, nested array length, and text that is not valid Unicode.

export const MAX_NESTING_DEPTH = 32;
export const MAX_NESTED_ARRAY_LENGTH = 10_000;

/** False for text holding a lone UTF-16 surrogate: JSON can carry one, UTF-8 storage cannot. */
function wellFormed(text: string): boolean {
  // String.prototype.isWellFormed is in Node 20; the ES2023 typings do not list it yet
  return (text as string & { isWellFormed(): boolean }).isWellFormed();
}

/** The first bound an item's field breaks, as a message naming the field, or undefined. */
export function shapeProblem(item: Record<string, unknown>): string | undefined {
  for (const field in item) {
    if (!wellFormed(field)) return `${field}: the field name is not valid Unicode text`;
    const value = item[field];
    if (typeof value === 'string') {
      if (!wellFormed(value)) return `${field}: holds text that is not valid Unicode (a lone surrogate)`;
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    const stack: [unknown, number][] = [[value, 1]];
    while (stack.length > 0) {
      const [node, depth] = stack.pop() as [unknown, number];
      if (typeof node === 'string') {
        if (!wellFormed(node)) return `${field}: holds text that is not valid Unicode (a lone surrogate)`;
        continue;
      }
      if (typeof node !== 'object' || node === null) continue;
      if (depth > MAX_NESTING_DEPTH) return `${field}: nests deeper than ${MAX_NESTING_DEPTH} levels`;
      if (Array.isArray(node)) {
        if (node.length > MAX_NESTED_ARRAY_LENGTH) return `${field}: holds an array of more than ${MAX_NESTED_ARRAY_LENGTH} values`;
        for (const child of node) stack.push([child, depth + 1]);
      } else {
        const record = node as Record<string, unknown>;
        for (const key in record) {
          if (!wellFormed(key)) return `${field}: holds a name that is not valid Unicode text`;
          stack.push([record[key], depth + 1]);
        }
      }
    }
  }
  return undefined;
}
