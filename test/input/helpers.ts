// Feeding readers from memory, in chunks of a chosen size, and collecting what they yield.
export async function* chunksOf(data: string | Buffer, size = Infinity): AsyncGenerator<Buffer> {
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, Math.min(bytes.length, at + size));
}

export async function collect<T>(batches: AsyncIterable<T[]>): Promise<T[]> {
  const all: T[] = [];
  for await (const batch of batches) all.push(...batch);
  return all;
}
