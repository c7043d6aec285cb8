/**
 * Cron expressions as users write them, turned into what Temporal Schedules expect.
 * Accepted: 5 fields (minute hour day-of-month month day-of-week), 6 fields with a leading
 * seconds field (as in Quartz or node-cron), 7 fields (seconds … year), and the descriptors
 * @yearly @monthly @weekly @daily @hourly and `@every <duration>`. Temporal itself reads a
 * 6-field string as "minute … year", hence the translation.
 */
const FIELD = /^[0-9A-Za-z*?/,#LW-]+$/;
const DESCRIPTOR = /^@(yearly|annually|monthly|weekly|daily|midnight|hourly)$/i;
const EVERY = /^@every\s+(\d+(ms|s|m|h|d))+$/i;

export class CronError extends Error {}

/** A valid expression that fires more often than the configured minimum interval. */
export class CronTooFrequentError extends CronError {
  constructor(
    expression: string,
    readonly intervalSeconds: number,
    readonly minimumSeconds: number,
  ) {
    super(
      `"${expression}" fires every ${describeSeconds(intervalSeconds)} at its most frequent; ` +
        `an automation may run at most once every ${describeSeconds(minimumSeconds)} (the minimum interval between runs)`,
    );
  }
}

function normalized(expression: string): string {
  return expression.trim().replace(/\s+/g, ' ');
}

export function toTemporalCron(expression: string): string {
  const trimmed = normalized(expression);
  if (DESCRIPTOR.test(trimmed) || EVERY.test(trimmed)) return trimmed;
  const fields = trimmed.split(' ');
  if (!fields.every((f) => FIELD.test(f)))
    throw new CronError(`"${expression}" has characters a cron field cannot contain`);
  if (fields.length === 5 || fields.length === 7) return trimmed;
  if (fields.length === 6) return `${trimmed} *`;
  throw new CronError(
    `"${expression}" must have 5 fields (or 6/7 with seconds), or be a descriptor such as @daily or @every 10m`,
  );
}

export function isValidTimezone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// How often an expression fires: the shortest gap between two consecutive firings.

interface FieldRange {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const SECOND: FieldRange = { name: 'second', min: 0, max: 59 };
const MINUTE: FieldRange = { name: 'minute', min: 0, max: 59 };
const HOUR: FieldRange = { name: 'hour', min: 0, max: 23 };
const DAY_OF_MONTH: FieldRange = { name: 'day-of-month', min: 1, max: 31 };
const MONTH: FieldRange = {
  name: 'month',
  min: 1,
  max: 12,
  names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'],
};
const DAY_OF_WEEK: FieldRange = {
  name: 'day-of-week',
  min: 0,
  max: 7,
  names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'],
};
const YEAR: FieldRange = { name: 'year', min: 1970, max: 2199 };

const DESCRIPTOR_CRON: Record<string, string> = {
  yearly: '0 0 1 1 *',
  annually: '0 0 1 1 *',
  monthly: '0 0 1 * *',
  weekly: '0 0 * * 0',
  daily: '0 0 * * *',
  midnight: '0 0 * * *',
  hourly: '0 * * * *',
};

const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86_400 };

/** The values a field allows; `restricted` is false for `*`, `?` and day rules (L, W, #), which are read as "every day". */
interface FieldValues {
  values: Set<number>;
  restricted: boolean;
}

function fieldValue(text: string, range: FieldRange, expression: string): number {
  const byName = range.names?.indexOf(text.toUpperCase()) ?? -1;
  const value = byName >= 0 ? byName + (range === MONTH ? 1 : 0) : /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(value)) throw new CronError(`"${expression}": "${text}" is not a valid ${range.name} value`);
  if (value < range.min || value > range.max)
    throw new CronError(
      `"${expression}": ${value} is out of range for the ${range.name} field (${range.min}-${range.max})`,
    );
  return value;
}

function parseField(text: string, range: FieldRange, expression: string): FieldValues {
  const all = (): Set<number> => {
    const values = new Set<number>();
    for (let v = range.min; v <= range.max; v++) values.add(v);
    return values;
  };
  if (text === '*' || text === '?') return { values: all(), restricted: false };
  // Quartz day rules (last day, nearest weekday, nth weekday): read as "every day", which can only make the gap shorter.
  const isDayRule = (part: string) =>
    range === DAY_OF_MONTH
      ? /^(L(-\d+)?|LW|\d+W)$/i.test(part)
      : range === DAY_OF_WEEK && /^((\d|[A-Za-z]{3})#\d|(\d|[A-Za-z]{3})?L)$/i.test(part);
  if (text.split(',').some(isDayRule)) return { values: all(), restricted: false };
  const values = new Set<number>();
  for (const part of text.split(',')) {
    const match = /^(\*|[0-9A-Za-z]+)(?:-([0-9A-Za-z]+))?(?:\/(\d+))?$/.exec(part);
    if (!match) throw new CronError(`"${expression}": "${part}" is not a valid ${range.name} field`);
    const [, start, end, stepText] = match;
    if (start === '*' && end !== undefined)
      throw new CronError(`"${expression}": "${part}" is not a valid ${range.name} field`);
    const step = stepText === undefined ? 1 : Number(stepText);
    if (step < 1) throw new CronError(`"${expression}": the step in "${part}" must be at least 1`);
    const from = start === '*' ? range.min : fieldValue(start, range, expression);
    const to =
      start === '*'
        ? range.max
        : end !== undefined
          ? fieldValue(end, range, expression)
          : stepText !== undefined
            ? range.max
            : from;
    if (to < from) throw new CronError(`"${expression}": the range "${part}" runs backwards`);
    for (let v = from; v <= to; v += step) values.add(v);
  }
  if (range === DAY_OF_WEEK && values.has(7)) values.add(0);
  return { values, restricted: true };
}

const DAY_SECONDS = 86_400;
/** 28 years: the calendar (weekday of each date) repeats with this period between 1901 and 2099. */
const CALENDAR_CYCLE_DAYS = 10_227;
const CYCLE_START = Date.UTC(2001, 0, 1);

function cronFields(expression: string): string[] {
  const fields = normalized(expression).split(' ');
  if (fields.length === 5) return ['0', ...fields];
  if (fields.length === 6 || fields.length === 7) return fields;
  throw new CronError(
    `"${expression}" must have 5 fields (or 6/7 with seconds), or be a descriptor such as @daily or @every 10m`,
  );
}

/**
 * The shortest time in seconds between two consecutive firings of a cron expression (as accepted
 * by toTemporalCron), Infinity when it fires at most once. Exact for the second, minute, hour,
 * month and weekday fields; Quartz day rules (L, W, #) count as every day and the year field is
 * ignored, so the result is never longer than the truth. Clock changes (DST) are not considered.
 */
export function minimumIntervalSeconds(expression: string): number {
  const trimmed = normalized(expression);
  toTemporalCron(trimmed);
  const descriptor = DESCRIPTOR.exec(trimmed);
  if (descriptor) return minimumIntervalSeconds(DESCRIPTOR_CRON[descriptor[1].toLowerCase()]);
  if (EVERY.test(trimmed)) {
    let seconds = 0;
    for (const [, amount, unit] of trimmed.slice('@every'.length).matchAll(/(\d+)(ms|s|m|h|d)/gi))
      seconds += Number(amount) * UNIT_SECONDS[unit.toLowerCase()];
    if (seconds <= 0) throw new CronError(`"${expression}": @every needs a positive duration`);
    return seconds;
  }
  const fields = cronFields(trimmed);
  const [seconds, minutes, hours] = [SECOND, MINUTE, HOUR].map(
    (range, i) => parseField(fields[i], range, expression).values,
  );
  const dom = parseField(fields[3], DAY_OF_MONTH, expression);
  const months = parseField(fields[4], MONTH, expression).values;
  const dow = parseField(fields[5], DAY_OF_WEEK, expression);
  if (fields[6] !== undefined) parseField(fields[6], YEAR, expression);

  const times: number[] = [];
  for (const h of [...hours].sort((a, b) => a - b)) {
    for (const m of [...minutes].sort((a, b) => a - b))
      for (const s of [...seconds].sort((a, b) => a - b)) times.push(h * 3600 + m * 60 + s);
  }
  let shortest = Infinity;
  for (let i = 1; i < times.length; i++) shortest = Math.min(shortest, times[i] - times[i - 1]);

  // Standard cron: with both day fields restricted a day matches either; an unrestricted one defers to the other.
  const dayMatches = (date: Date): boolean => {
    if (!months.has(date.getUTCMonth() + 1)) return false;
    const byDom = dom.values.has(date.getUTCDate());
    const byDow = dow.values.has(date.getUTCDay());
    if (dom.restricted && dow.restricted) return byDom || byDow;
    if (dom.restricted) return byDom;
    if (dow.restricted) return byDow;
    return true;
  };
  let previousDay: number | null = null;
  for (let day = 0; day < CALENDAR_CYCLE_DAYS; day++) {
    if (!dayMatches(new Date(CYCLE_START + day * DAY_SECONDS * 1000))) continue;
    if (previousDay !== null)
      shortest = Math.min(shortest, (day - previousDay) * DAY_SECONDS - times[times.length - 1] + times[0]);
    previousDay = day;
  }
  // No matching day at all (say 30 February): it never fires.
  return previousDay === null ? Infinity : shortest;
}

/** Throws CronTooFrequentError when the expression can fire twice within `minimumMinutes`. */
export function assertCronInterval(expression: string, minimumMinutes: number): void {
  const minimumSeconds = Math.round(minimumMinutes * 60 * 1000) / 1000;
  const interval = minimumIntervalSeconds(expression);
  if (interval < minimumSeconds) throw new CronTooFrequentError(normalized(expression), interval, minimumSeconds);
}

function describeSeconds(seconds: number): string {
  const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`;
  if (seconds < 60 || !Number.isInteger(seconds / 60)) return plural(Math.round(seconds * 1000) / 1000, 'second');
  const minutes = seconds / 60;
  if (minutes % (24 * 60) === 0) return plural(minutes / (24 * 60), 'day');
  if (minutes % 60 === 0) return plural(minutes / 60, 'hour');
  return plural(minutes, 'minute');
}
