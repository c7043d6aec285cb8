/** The cookies of one microblog connection: what the site set, sent back on every request. */

export class CookieJar {
  private readonly cookies: Map<string, string>;

  constructor(initial: Record<string, string> = {}) {
    this.cookies = new Map(Object.entries(initial));
  }

  absorb(setCookies: readonly string[]): void {
    for (const line of setCookies) {
      const [pair, ...attributes] = line.split(';');
      const separator = pair.indexOf('=');
      if (separator <= 0) continue;
      const name = pair.slice(0, separator).trim();
      const value = pair.slice(separator + 1).trim();
      if (value === '' || isExpiry(attributes)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  get(name: string): string | undefined {
    return this.cookies.get(name);
  }

  header(): string | undefined {
    if (this.cookies.size === 0) return undefined;
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  replaceAll(cookies: Record<string, string>): void {
    this.cookies.clear();
    for (const [name, value] of Object.entries(cookies)) this.cookies.set(name, value);
  }

  clear(): void {
    this.cookies.clear();
  }

  snapshot(): Record<string, string> {
    return Object.fromEntries(this.cookies);
  }
}

function isExpiry(attributes: readonly string[]): boolean {
  for (const attribute of attributes) {
    const [rawName, ...rest] = attribute.split('=');
    const name = rawName.trim().toLowerCase();
    const value = rest.join('=').trim();
    if (name === 'max-age' && Number(value) <= 0) return true;
    if (name === 'expires' && Date.parse(value) <= Date.now()) return true;
  }
  return false;
}
