// Why a CSV row could not be split into cells: the reasons the CSV reader gives, and what a
// rejects file fed back says of such a row (its `row` is then the row's text).
/** Why a CSV reader could not split a row into cells; such a reject's `row` is the row's text. */
export const CSV_TEXT_AFTER_QUOTE =
  'row: a quoted cell on this row has text after its closing quote; quote the whole cell and double each quote inside it';
export const CSV_UNCLOSED_QUOTE =
  'row: a quoted cell on this row is never closed, so the rest of the file was read as one cell; close the quote';
/** Asked of a reject fed back whose `row` is still the text of a CSV row. */
export const CSV_ROW_TEXT = 'row: is the text of a CSV row that could not be read; write it as an object of cells under their headers';

/** True for a reject reason given only to the text of a CSV row. */
export function isCsvTextReason(error: unknown): boolean {
  return error === CSV_TEXT_AFTER_QUOTE || error === CSV_UNCLOSED_QUOTE || error === CSV_ROW_TEXT;
}
