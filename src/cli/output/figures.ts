// The headline figures of a run, read off the summary --json prints: the one reading that the
// GitHub Actions outputs, the step summary, the report and the metrics push all show.

/** The fields of the --json summary the figures are read from. */
export interface SummaryFields {
  command: string;
  rows: number;
  /** Of the rows, those of files an earlier run settled whole: not read again. */
  unread?: number;
  rejected: number;
  droppedFields: number;
  requests: number;
  elapsedMs: number;
  rejectsPath?: string;
  rejectReasons: Record<string, number>;
  refusedReasons?: Record<string, number>;
  dataPoints: { sent: number; avoided: number; planned: number };
  interrupted: boolean;
  fatal?: { name: string; message: string };
  journalPath?: string;
  /** Every row of every input was read. */
  readToEnd?: boolean;
  /** Rows read that were neither answered, rejected nor left out: a resume sends them (absent in a dry run). */
  rowsUnsettled?: number;
  delivery?: {
    requestsSent: number;
    attempts: number;
    retries: number;
    rateLimited: number;
    items: Record<string, { sent: number; accepted: number; rejected: number }>;
    fatal?: { name: string; message: string };
    stopped: boolean;
    aborted: boolean;
  };
}

export interface RunFigures {
  /** Rows read (not those of files an earlier run settled whole, which are not read again). */
  rows: number;
  /** Rows refused before sending, and items the server refused: the rejects file's rows (fields left out aside). */
  rejected: number;
  /** Requests the server answered with its verdict (an upload), or that would be sent (a dry run). */
  requests: number;
  /** Data points of the items the server accepted (an upload), or of the items planned (a dry run). */
  dataPoints: number;
  avoidedDataPoints: number;
  durationSeconds: number;
  /** Rejects by reason: before sending, and refused by the server. */
  reasons: { reason: string; rows: number; where: 'before sending' | 'by the server' }[];
}

export const asSummary = (summary: Record<string, unknown>): SummaryFields => summary as unknown as SummaryFields;

/** The items a delivery sent that the server refused (each a row of the rejects file); 0 in a dry run. */
export const refusedItems = (delivery: { items: Record<string, { rejected: number }> } | undefined): number =>
  delivery === undefined ? 0 : Object.values(delivery.items).reduce((sum, t) => sum + t.rejected, 0);

export function runFigures(summary: SummaryFields): RunFigures {
  const d = summary.delivery;
  const refused = refusedItems(d);
  const reasons = [
    ...Object.entries(summary.rejectReasons).map(([reason, rows]) => ({ reason, rows, where: 'before sending' as const })),
    ...Object.entries(summary.refusedReasons ?? {}).map(([reason, rows]) => ({ reason, rows, where: 'by the server' as const })),
  ].sort((a, b) => b.rows - a.rows);
  return {
    rows: summary.rows - (summary.unread ?? 0),
    rejected: summary.rejected + refused,
    requests: d === undefined ? summary.requests : d.requestsSent,
    dataPoints: d === undefined ? summary.dataPoints.planned : summary.dataPoints.sent,
    avoidedDataPoints: summary.dataPoints.avoided,
    durationSeconds: Math.round(summary.elapsedMs / 100) / 10,
    reasons,
  };
}
