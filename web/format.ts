/** How the pages write amounts and times. */

/** A USD amount with at least two decimals and as many as it has (up to six, the micro-USD unit). */
export function usd(amount: number): string {
  const decimals = Math.min(6, Math.max(2, (String(amount).split('.')[1] ?? '').length));
  return `$${amount.toFixed(decimals)}`;
}

/** A time in UTC, to the second: 2026-03-01 14:05:09 UTC. */
export function utc(value: Date | string): string {
  const date = value instanceof Date ? value : new Date(value);
  return `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

export const shortId = (id: string) => id.slice(0, 8);
