// Charts drawn as inline SVG text, for pages that run no script: the emulator's run page and the
// report of an upload. Pure functions of the figures given; every label is escaped here.

/** A count as a person reads it: 1,234,567 (grouped by hand: toLocaleString loads megabytes of formats). */
export function grouped(n: number): string {
  const rounded = Math.round(n * 10) / 10;
  const [whole, fraction] = String(Math.abs(rounded)).split('.');
  const text = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${rounded < 0 ? '-' : ''}${text}${fraction === undefined ? '' : `.${fraction}`}`;
}

export function escapeXml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export interface Series {
  name: string;
  colour: string;
  /** [x, y] points, x rising. */
  points: readonly (readonly [number, number])[];
}

export interface LineChart {
  /** Names the chart for screen readers and tests (`data-chart`). */
  id: string;
  title: string;
  series: Series[];
  /** A dashed level across the chart (the rate limit). */
  limit?: { value: number; label: string };
  xLabel: string;
  yLabel: string;
  /** How an x value is written under the axis (default: as a number). */
  xText?: (x: number) => string;
  width?: number;
  height?: number;
}

const FONT = 'font-family="system-ui,sans-serif" font-size="12"';
const AXIS = '#59636e';

/** A round step for about `ticks` divisions of 0..max. */
function niceStep(max: number, ticks: number): number {
  const raw = max / ticks;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power;
  return step;
}

export function lineChart(chart: LineChart): string {
  const width = chart.width ?? 720;
  const height = chart.height ?? 260;
  const pad = { left: 64, right: 16, top: 34, bottom: 40 };
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const all = chart.series.flatMap((s) => s.points);
  const xs = all.map(([x]) => x);
  const xMin = xs.length === 0 ? 0 : Math.min(...xs);
  const xMax = xs.length === 0 ? 1 : Math.max(...xs, xMin + 1);
  const dataTop = Math.max(1, ...all.map(([, y]) => y));
  // a limit far above the data would flatten it: it is then named, not drawn
  const limit = chart.limit !== undefined && chart.limit.value <= dataTop * 3 ? chart.limit : undefined;
  const yTop = Math.max(dataTop, (limit?.value ?? 0) * 1.1);
  const step = niceStep(yTop, 4);
  const yMax = Math.ceil(yTop / step) * step;
  const px = (x: number): number => pad.left + ((x - xMin) / (xMax - xMin)) * plotW;
  const py = (y: number): number => pad.top + plotH - (y / yMax) * plotH;
  const parts: string[] = [];
  for (let y = 0; y <= yMax + step / 2; y += step) {
    parts.push(`<line x1="${pad.left}" x2="${pad.left + plotW}" y1="${py(y).toFixed(1)}" y2="${py(y).toFixed(1)}" stroke="#e3e7eb"/>`);
    parts.push(`<text x="${pad.left - 6}" y="${(py(y) + 4).toFixed(1)}" text-anchor="end" fill="${AXIS}">${grouped(y)}</text>`);
  }
  const xText = chart.xText ?? grouped;
  for (const [x, anchor] of [[xMin, 'start'], [(xMin + xMax) / 2, 'middle'], [xMax, 'end']] as const) {
    parts.push(`<text x="${px(x).toFixed(1)}" y="${pad.top + plotH + 16}" text-anchor="${anchor}" fill="${AXIS}">${escapeXml(xText(x))}</text>`);
  }
  parts.push(`<text x="${pad.left + plotW / 2}" y="${height - 4}" text-anchor="middle" fill="${AXIS}">${escapeXml(chart.xLabel)}</text>`);
  parts.push(`<text x="14" y="${pad.top + plotH / 2}" text-anchor="middle" fill="${AXIS}" transform="rotate(-90 14 ${pad.top + plotH / 2})">${escapeXml(chart.yLabel)}</text>`);
  if (limit !== undefined) {
    const y = py(limit.value).toFixed(1);
    parts.push(`<line class="limit" x1="${pad.left}" x2="${pad.left + plotW}" y1="${y}" y2="${y}" stroke="#c2410c" stroke-width="1.5" stroke-dasharray="6 4"/>`);
    parts.push(`<text x="${pad.left + plotW - 4}" y="${Number(y) - 5}" text-anchor="end" fill="#c2410c">${escapeXml(limit.label)}</text>`);
  } else if (chart.limit !== undefined) {
    parts.push(`<text class="limit" x="${pad.left + plotW - 4}" y="${pad.top - 15}" text-anchor="end" fill="#c2410c">${escapeXml(chart.limit.label)}, far above</text>`);
  }
  for (const s of chart.series) {
    if (s.points.length === 0) continue;
    const d = s.points.map(([x, y], i) => `${i === 0 ? 'M' : 'L'}${px(x).toFixed(1)} ${py(y).toFixed(1)}`).join('');
    parts.push(`<path d="${d}" fill="none" stroke="${s.colour}" stroke-width="2" stroke-linejoin="round"><title>${escapeXml(s.name)}</title></path>`);
    if (s.points.length === 1) parts.push(`<circle cx="${px(s.points[0][0]).toFixed(1)}" cy="${py(s.points[0][1]).toFixed(1)}" r="3" fill="${s.colour}"/>`);
  }
  let legendX = pad.left;
  for (const s of chart.series) {
    parts.push(`<rect x="${legendX}" y="${pad.top - 20}" width="12" height="4" fill="${s.colour}"/><text x="${legendX + 16}" y="${pad.top - 15}" fill="#1d232a">${escapeXml(s.name)}</text>`);
    legendX += 28 + s.name.length * 7;
  }
  if (all.length === 0) parts.push(`<text x="${pad.left + plotW / 2}" y="${pad.top + plotH / 2}" text-anchor="middle" fill="${AXIS}">nothing yet</text>`);
  return svg(chart.id, chart.title, width, height, parts);
}

export interface Bar {
  label: string;
  value: number;
  /** Written after the value (`before sending`). */
  note?: string;
  colour?: string;
}

export interface BarChart {
  id: string;
  title: string;
  bars: Bar[];
  /** Written after each value: for 1, and for any other number (`['request', 'requests']`). */
  unit?: readonly [string, string];
  /** Shown in place of bars when there are none. */
  empty: string;
  width?: number;
}

/**
 * The `shown` largest bars, and the rest added up as one more bar named by `rest(how many)`: a chart
 * of many reasons stays a few rows high, beside the others in the first screen.
 */
export function largestBars(bars: readonly Bar[], shown: number, rest: (count: number) => string, colour = '#8a939c'): Bar[] {
  const sorted = [...bars].sort((a, b) => b.value - a.value);
  if (sorted.length <= shown + 1) return sorted;
  const others = sorted.slice(shown);
  return [...sorted.slice(0, shown), { label: rest(others.length), value: others.reduce((sum, bar) => sum + bar.value, 0), colour }];
}

/** Horizontal bars, each with its label on the left and its value at its end. */
export function barChart(chart: BarChart): string {
  const width = chart.width ?? 720;
  const rowH = 24;
  const labelW = Math.min(300, Math.max(90, ...chart.bars.map((b) => Math.min(b.label.length, 44) * 7 + 12)));
  const valueW = Math.max(110, ...chart.bars.map((b) => (b.note?.length ?? 0) * 7 + 90));
  const height = Math.max(1, chart.bars.length) * rowH + 12;
  const max = Math.max(1, ...chart.bars.map((b) => b.value));
  const plotW = width - labelW - valueW;
  const parts: string[] = [];
  if (chart.bars.length === 0) parts.push(`<text x="8" y="20" fill="${AXIS}">${escapeXml(chart.empty)}</text>`);
  chart.bars.forEach((bar, i) => {
    const y = 6 + i * rowH;
    const w = bar.value === 0 ? 0 : Math.max(2, (bar.value / max) * plotW);
    const label = bar.label.length > 44 ? `${bar.label.slice(0, 43)}…` : bar.label;
    const unit = chart.unit === undefined ? '' : ` ${chart.unit[bar.value === 1 ? 0 : 1]}`;
    const value = `${grouped(bar.value)}${unit}${bar.note === undefined ? '' : `, ${bar.note}`}`;
    parts.push(
      `<g class="bar" data-label="${escapeXml(bar.label)}" data-value="${bar.value}"><title>${escapeXml(`${bar.label}: ${value}`)}</title>` +
        `<text x="${labelW - 8}" y="${y + 16}" text-anchor="end" fill="#1d232a">${escapeXml(label)}</text>` +
        `<rect x="${labelW}" y="${y + 3}" width="${w.toFixed(1)}" height="${rowH - 8}" rx="2" fill="${bar.colour ?? '#2f6fb0'}"/>` +
        `<text x="${(labelW + w + 6).toFixed(1)}" y="${y + 16}" fill="#1d232a">${escapeXml(value)}</text></g>`,
    );
  });
  return svg(chart.id, chart.title, width, height, parts);
}

function svg(id: string, title: string, width: number, height: number, parts: string[]): string {
  return `<svg class="chart" data-chart="${escapeXml(id)}" role="img" aria-label="${escapeXml(title)}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" ${FONT} xmlns="http://www.w3.org/2000/svg"><title>${escapeXml(title)}</title>${parts.join('')}</svg>`;
}

/** Colours of answers by their status class, the same on every chart. */
export function statusColour(status: string): string {
  if (status === '429') return '#c2410c';
  if (status.startsWith('2')) return '#17692d';
  if (status.startsWith('4')) return '#a1161b';
  if (status.startsWith('5')) return '#7c3aed';
  return '#59636e';
}
