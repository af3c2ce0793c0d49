// The --map file: renames and types columns without editing the input. A JSON object from a column
// as the file's header names it to the header to read it as (`"Zip": "zip:string"`), or to null to
// leave the column out.
export type ColumnMap = ReadonlyMap<string, string | null>;

export type ColumnMapResult = { ok: true; map: ColumnMap } | { ok: false; problems: string[] };

export function validateColumnMap(json: unknown): ColumnMapResult {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    return { ok: false, problems: ['must be a JSON object from column name to field name (or null to leave the column out)'] };
  }
  const problems: string[] = [];
  const map = new Map<string, string | null>();
  for (const [column, target] of Object.entries(json)) {
    if (target === null || (typeof target === 'string' && target.length > 0)) map.set(column, target);
    else problems.push(`"${column}": must be a field name such as "zip:string", or null, got ${JSON.stringify(target)}`);
  }
  return problems.length === 0 ? { ok: true, map } : { ok: false, problems };
}
