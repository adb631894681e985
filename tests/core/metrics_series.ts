/**
 * Series of a Prometheus text exposition as name, type and label names, to compare vkubelet's
 * `/metrics` before and after a change of registry (tests/core/metrics_series_test.ts).
 * @module
 */

/** One series: a sample line's name with its metric's TYPE and its label names, sorted. */
export interface Series {
  name: string;
  type: string;
  labels: string[];
}

/** Every distinct series in `text`, sorted by name then labels. */
export function seriesOf(text: string): Series[] {
  const types = new Map<string, string>();
  const seen = new Map<string, Series>();
  for (const line of text.split("\n")) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1], type[2]);
    if (line === "" || line.startsWith("#")) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$/.exec(line);
    if (!sample) throw new TypeError(`not a sample line: ${line}`);
    const name = sample[1];
    const family = types.has(name) ? name : name.replace(/_(bucket|sum|count)$/, "");
    const labels = [...(sample[2] ?? "").matchAll(/([a-zA-Z_]\w*)="/g)].map((m) => m[1]).sort();
    const series = { name, type: types.get(family) ?? "untyped", labels };
    seen.set(`${name}{${labels.join(",")}}`, series);
  }
  return [...seen.values()].sort((a, b) =>
    a.name.localeCompare(b.name) || a.labels.join().localeCompare(b.labels.join())
  );
}

/** The value of one sample line (`name{labels}` exactly as rendered), or undefined. */
export function sampleValue(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}
