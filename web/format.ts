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

/**
 * A short name of the device a user agent string stands for ("Firefox on Linux"), or the first 60 characters
 * of it when neither the browser nor the system is one of the common ones; null for none.
 */
export function deviceOf(userAgent: string | null): string | null {
  if (!userAgent) return null;
  const browser = /Edg\//.test(userAgent)
    ? 'Edge'
    : /Firefox\//.test(userAgent)
      ? 'Firefox'
      : /Chrome\//.test(userAgent)
        ? 'Chrome'
        : /Safari\//.test(userAgent)
          ? 'Safari'
          : null;
  const system = /Android/.test(userAgent)
    ? 'Android'
    : /iPhone|iPad/.test(userAgent)
      ? 'iOS'
      : /Windows/.test(userAgent)
        ? 'Windows'
        : /Mac OS X|Macintosh/.test(userAgent)
          ? 'macOS'
          : /Linux|X11/.test(userAgent)
            ? 'Linux'
            : null;
  if (browser && system) return `${browser} on ${system}`;
  return userAgent.slice(0, 60);
}
