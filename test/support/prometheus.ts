/** One sample of a Prometheus text exposition: `name{label="value",...} number`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  /** `# TYPE` lines: metric family name → counter | gauge | histogram | summary | untyped. */
  types: Map<string, string>;
  /** The samples of `name` whose labels include every given label. */
  find(name: string, labels?: Record<string, string>): Sample[];
  /** The single value of `name` with these labels; throws when there is not exactly one. */
  value(name: string, labels?: Record<string, string>): number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Parses the text format strictly enough that a malformed line fails the test that reads it. */
export function parsePrometheus(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const type = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
      if (type) types.set(type[1], type[2]);
      else if (!/^# HELP \S+ /.test(line)) throw new Error(`not a Prometheus comment line: ${line}`);
      continue;
    }
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, raw] of (match[2] ?? '').matchAll(LABEL))
      labels[key] = raw.replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    const value = match[3] === '+Inf' ? Infinity : match[3] === '-Inf' ? -Infinity : Number(match[3]);
    if (Number.isNaN(value) && match[3] !== 'NaN') throw new Error(`bad sample value: ${line}`);
    samples.push({ name: match[1], labels, value });
  }
  const find = (name: string, labels: Record<string, string> = {}) =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return {
    samples,
    types,
    find,
    value(name, labels = {}) {
      const found = find(name, labels);
      if (found.length !== 1)
        throw new Error(`expected one sample of ${name}${JSON.stringify(labels)}, found ${found.length}`);
      return found[0].value;
    },
  };
}
