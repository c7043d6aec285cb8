export type CookieSameSite = 'Strict' | 'Lax' | 'None';

/** A cookie shaped for Playwright's `context.addCookies`: a leading dot in `domain` makes it apply to subdomains. */
export type PageCookie = {
  name: string;
  value: string;
  domain: string;
  path: string;
  expires?: number;
  httpOnly: boolean;
  secure: boolean;
  sameSite: CookieSameSite;
};

export type CookieObjectInput = {
  name: string;
  value: string;
  domain?: string;
  path?: string;
  expires?: number;
  httpOnly?: boolean;
  secure?: boolean;
  sameSite?: string;
};

export type CookiesInput = string | Record<string, string> | CookieObjectInput[];

const MAX_COOKIES = 200;

export const cookiesJsonSchema = {
  oneOf: [
    { type: 'string', maxLength: 16384, description: 'A Cookie header value, e.g. "a=1; b=2"' },
    {
      type: 'object',
      maxProperties: MAX_COOKIES,
      additionalProperties: { type: 'string' },
      description: 'Cookie names mapped to values',
    },
    {
      type: 'array',
      maxItems: MAX_COOKIES,
      description: 'Playwright-style cookie objects',
      items: {
        type: 'object',
        required: ['name', 'value'],
        properties: {
          name: { type: 'string', minLength: 1 },
          value: { type: 'string' },
          domain: { type: 'string' },
          path: { type: 'string' },
          expires: { type: 'number' },
          httpOnly: { type: 'boolean' },
          secure: { type: 'boolean' },
          sameSite: { type: 'string', enum: ['Strict', 'Lax', 'None', 'strict', 'lax', 'none'] },
        },
      },
    },
  ],
} as const;

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const FORBIDDEN_VALUE_CHARS = /[\u0000-\u001f\u007f;]/;
const DOMAIN = /^\.?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$/;

class CookieInputError extends Error {
  constructor(where: string, problem: string) {
    super(`Invalid cookies: ${where} ${problem}`);
  }
}

function checkName(name: string, where: string): string {
  if (!TOKEN.test(name)) throw new CookieInputError(where, `has an invalid name ${JSON.stringify(name)}`);
  return name;
}

function checkValue(value: string, where: string): string {
  if (FORBIDDEN_VALUE_CHARS.test(value)) {
    throw new CookieInputError(where, 'has a value containing ";" or control characters');
  }
  return value;
}

function checkDomain(domain: string, where: string): string {
  const lower = domain.trim().toLowerCase();
  if (!DOMAIN.test(lower) && !/^\[[0-9a-f:.]+\]$/.test(lower)) {
    throw new CookieInputError(where, `has an invalid domain ${JSON.stringify(domain)}`);
  }
  return lower.replace(/\.$/, '');
}

function checkSameSite(sameSite: unknown, where: string): CookieSameSite {
  if (sameSite === undefined) return 'Lax';
  const match = (['Strict', 'Lax', 'None'] as const).find(
    (s) => typeof sameSite === 'string' && s.toLowerCase() === sameSite.toLowerCase(),
  );
  if (!match) throw new CookieInputError(where, 'has sameSite that is not one of "Strict", "Lax", "None"');
  return match;
}

function optionalBoolean(value: unknown, field: string, where: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new CookieInputError(where, `has a non-boolean ${field}`);
  return value;
}

function targetHost(targetUrl: string): string {
  let parsed: URL;
  try {
    parsed = new URL(targetUrl);
  } catch {
    throw new Error(`Invalid cookies: target URL ${JSON.stringify(targetUrl)} is not a valid URL`);
  }
  return parsed.hostname.toLowerCase();
}

function simpleCookie(name: string, value: string, host: string, where: string): PageCookie {
  return {
    name: checkName(name, where),
    value: checkValue(value, where),
    domain: host,
    path: '/',
    httpOnly: false,
    secure: false,
    sameSite: 'Lax',
  };
}

function fromHeaderString(header: string, host: string): PageCookie[] {
  return header
    .split(';')
    .map((part) => part.trim())
    .filter((part) => part.length > 0)
    .map((part, index) => {
      const where = `pair ${index + 1} ("${part.slice(0, 40)}")`;
      const eq = part.indexOf('=');
      if (eq <= 0) throw new CookieInputError(where, 'is not of the form name=value');
      return simpleCookie(part.slice(0, eq).trim(), part.slice(eq + 1).trim(), host, where);
    });
}

function fromRecord(record: Record<string, unknown>, host: string): PageCookie[] {
  return Object.entries(record).map(([name, value]) => {
    const where = `cookie "${name}"`;
    if (typeof value !== 'string') throw new CookieInputError(where, 'must have a string value');
    return simpleCookie(name, value, host, where);
  });
}

function fromObject(item: unknown, index: number, host: string): PageCookie {
  const where = `item ${index}`;
  if (typeof item !== 'object' || item === null || Array.isArray(item)) {
    throw new CookieInputError(where, 'must be an object with name and value');
  }
  const c = item as Record<string, unknown>;
  if (typeof c.name !== 'string') throw new CookieInputError(where, 'must have a string name');
  if (typeof c.value !== 'string') throw new CookieInputError(where, 'must have a string value');
  if (c.domain !== undefined && typeof c.domain !== 'string')
    throw new CookieInputError(where, 'has a non-string domain');
  if (c.path !== undefined && (typeof c.path !== 'string' || !c.path.startsWith('/'))) {
    throw new CookieInputError(where, 'has a path that does not start with "/"');
  }
  if (c.expires !== undefined && (typeof c.expires !== 'number' || !Number.isFinite(c.expires))) {
    throw new CookieInputError(where, 'has expires that is not a number of seconds since the epoch');
  }
  const secure = optionalBoolean(c.secure, 'secure', where);
  const sameSite = checkSameSite(c.sameSite, where);
  if (sameSite === 'None' && !secure) throw new CookieInputError(where, 'has sameSite "None" without secure: true');
  const cookie: PageCookie = {
    name: checkName(c.name, where),
    value: checkValue(c.value, where),
    domain: c.domain ? checkDomain(c.domain, where) : host,
    path: (c.path as string | undefined) ?? '/',
    httpOnly: optionalBoolean(c.httpOnly, 'httpOnly', where),
    secure,
    sameSite,
  };
  if (typeof c.expires === 'number' && c.expires >= 0) cookie.expires = c.expires;
  return cookie;
}

export function normalizeCookies(input: unknown, targetUrl: string): PageCookie[] {
  if (input === undefined || input === null) return [];
  const host = targetHost(targetUrl);
  let cookies: PageCookie[];
  if (typeof input === 'string') cookies = fromHeaderString(input, host);
  else if (Array.isArray(input)) cookies = input.map((item, i) => fromObject(item, i, host));
  else if (typeof input === 'object') cookies = fromRecord(input as Record<string, unknown>, host);
  else
    throw new Error(
      'Invalid cookies: expected a "name=value; ..." string, an object of strings, or an array of cookie objects',
    );
  if (cookies.length > MAX_COOKIES) throw new Error(`Invalid cookies: at most ${MAX_COOKIES} cookies are allowed`);
  return cookies;
}

function domainMatches(cookieDomain: string, host: string): boolean {
  if (!cookieDomain.startsWith('.')) return host === cookieDomain;
  const base = cookieDomain.slice(1);
  return host === base || host.endsWith(cookieDomain);
}

function pathMatches(cookiePath: string, requestPath: string): boolean {
  if (requestPath === cookiePath) return true;
  if (!requestPath.startsWith(cookiePath)) return false;
  return cookiePath.endsWith('/') || requestPath[cookiePath.length] === '/';
}

export function cookieHeaderFor(cookies: readonly PageCookie[], url: string): string | undefined {
  const target = new URL(url);
  const host = target.hostname.toLowerCase();
  const nowSeconds = Date.now() / 1000;
  const matching = cookies
    .filter((c) => domainMatches(c.domain, host))
    .filter((c) => pathMatches(c.path, target.pathname || '/'))
    .filter((c) => !c.secure || target.protocol === 'https:')
    .filter((c) => c.expires === undefined || c.expires > nowSeconds)
    .sort((a, b) => b.path.length - a.path.length);
  if (matching.length === 0) return undefined;
  return matching.map((c) => `${c.name}=${c.value}`).join('; ');
}
