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

export function toTemporalCron(expression: string): string {
  const trimmed = expression.trim().replace(/\s+/g, ' ');
  if (DESCRIPTOR.test(trimmed) || EVERY.test(trimmed)) return trimmed;
  const fields = trimmed.split(' ');
  if (!fields.every((f) => FIELD.test(f))) throw new CronError(`"${expression}" has characters a cron field cannot contain`);
  if (fields.length === 5 || fields.length === 7) return trimmed;
  if (fields.length === 6) return `${trimmed} *`;
  throw new CronError(`"${expression}" must have 5 fields (or 6/7 with seconds), or be a descriptor such as @daily or @every 10m`);
}

export function isValidTimezone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}
