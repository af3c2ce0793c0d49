// What may separate CSV cells (--delimiter), in a module of its own: the CLI's flags read it
// without loading the CSV parser.
export const DELIMITERS = [',', ';', '\t', '|'] as const;
export type Delimiter = (typeof DELIMITERS)[number];
