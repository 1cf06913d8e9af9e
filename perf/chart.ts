// One SVG of every system's throughput and p99 over time, drawn from locust's history CSV: two
// stacked panels sharing the time axis, p99 on a log scale because the gates differ by orders of
// magnitude.
import type { CsvRow } from './locust-csv.js';

export interface SeriesPoint {
  /** Seconds since the system's run started. */
  readonly t: number;
  readonly rps: number;
  readonly p99Ms: number | undefined;
}

export interface Series {
  readonly name: string;
  readonly points: readonly SeriesPoint[];
}

const COLOURS = ['#1b6ac9', '#d1495b', '#edae49', '#00798c', '#6a4c93', '#2e933c'];
const WIDTH = 900;
const PANEL = 240;
const LEFT = 70;
const RIGHT = 170;
const TOP = 30;
const GAP = 60;

/** The aggregated rows of a history CSV as points (the first row's timestamp is t = 0). */
export function seriesFromHistory(name: string, history: readonly CsvRow[]): Series {
  const rows = history.filter((row) => row.Name === 'Aggregated');
  const start = Number(rows[0]?.Timestamp ?? 0);
  return {
    name,
    points: rows.map((row) => {
      const p99 = Number(row['99%']);
      return {
        t: Number(row.Timestamp) - start,
        rps: Number(row['Requests/s']) || 0,
        p99Ms: Number.isFinite(p99) && p99 > 0 ? p99 : undefined,
      };
    }),
  };
}

function escapeXml(text: string): string {
  return text.replace(
    /[<>&"]/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]!,
  );
}

/** Rounds up to 1, 2 or 5 × a power of ten, for readable axis maxima. */
export function niceCeil(value: number): number {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

function polyline(points: readonly [number, number][], colour: string): string {
  if (points.length === 0) return '';
  const d = points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' ');
  return `<polyline fill="none" stroke="${colour}" stroke-width="1.8" points="${d}"/>`;
}

/**
 * Renders the chart; an empty series list still gives a valid, labelled SVG. `xUnit` names what
 * the points' `t` holds: seconds of a run by default, offered requests/s for a capacity search.
 */
export function renderChart(series: readonly Series[], title: string, xUnit = 's'): string {
  const plotWidth = WIDTH - LEFT - RIGHT;
  const height = TOP + PANEL * 2 + GAP + 40;
  const maxT = Math.max(1, ...series.flatMap((s) => s.points.map((p) => p.t)));
  const maxRps = niceCeil(Math.max(1, ...series.flatMap((s) => s.points.map((p) => p.rps))));
  const p99s = series.flatMap((s) => s.points.flatMap((p) => (p.p99Ms ? [p.p99Ms] : [])));
  const minLog = 0; // 1 ms: nothing measured on loopback is faster
  const maxLog = Math.max(minLog + 1, Math.ceil(Math.log10(Math.max(10, ...p99s))));
  const x = (t: number) => LEFT + (t / maxT) * plotWidth;
  const yRps = (rps: number) => TOP + PANEL - (rps / maxRps) * PANEL;
  const top2 = TOP + PANEL + GAP;
  const yP99 = (ms: number) =>
    top2 + PANEL - ((Math.log10(ms) - minLog) / (maxLog - minLog)) * PANEL;

  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${LEFT}" y="18" font-size="14" font-weight="bold">${escapeXml(title)}</text>`,
  ];
  // Frames, grid and axis labels.
  for (const [top, label] of [
    [TOP, 'requests/s'],
    [top2, 'p99 (ms, log)'],
  ] as const) {
    parts.push(
      `<rect x="${LEFT}" y="${top}" width="${plotWidth}" height="${PANEL}" fill="none" stroke="#888"/>`,
    );
    parts.push(
      `<text x="14" y="${top + PANEL / 2}" transform="rotate(-90 14 ${top + PANEL / 2})" text-anchor="middle">${label}</text>`,
    );
  }
  for (let i = 0; i <= 4; i++) {
    const value = (maxRps * i) / 4;
    const y = yRps(value);
    parts.push(`<line x1="${LEFT}" x2="${LEFT + plotWidth}" y1="${y}" y2="${y}" stroke="#eee"/>`);
    parts.push(`<text x="${LEFT - 6}" y="${y + 4}" text-anchor="end">${Math.round(value)}</text>`);
  }
  for (let power = minLog; power <= maxLog; power++) {
    const y = yP99(10 ** power);
    parts.push(`<line x1="${LEFT}" x2="${LEFT + plotWidth}" y1="${y}" y2="${y}" stroke="#eee"/>`);
    parts.push(`<text x="${LEFT - 6}" y="${y + 4}" text-anchor="end">${10 ** power}</text>`);
  }
  for (let i = 0; i <= 5; i++) {
    const t = (maxT * i) / 5;
    parts.push(
      `<text x="${x(t)}" y="${top2 + PANEL + 18}" text-anchor="middle">${Math.round(t)} ${escapeXml(xUnit)}</text>`,
    );
  }
  series.forEach((s, index) => {
    const colour = COLOURS[index % COLOURS.length]!;
    parts.push(
      polyline(
        s.points.map((p) => [x(p.t), yRps(p.rps)]),
        colour,
      ),
    );
    parts.push(
      polyline(
        s.points.flatMap((p) => (p.p99Ms ? [[x(p.t), yP99(p.p99Ms)] as [number, number]] : [])),
        colour,
      ),
    );
    const legendY = TOP + 10 + index * 20;
    parts.push(
      `<rect x="${WIDTH - RIGHT + 15}" y="${legendY - 9}" width="14" height="4" fill="${colour}"/>`,
    );
    parts.push(`<text x="${WIDTH - RIGHT + 35}" y="${legendY}">${escapeXml(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}
