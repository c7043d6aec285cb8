import { unbracketHost } from './host';

/** An operator-configured HTTP forward proxy, e.g. `http://user:pass@proxy.internal:8080`. */
export interface ProxyConfig {
  readonly url: URL;
}

export interface PlaywrightProxy {
  server: string;
  username?: string;
  password?: string;
}

const COUNTRY_PLACEHOLDER = '{country}';
const COUNTRY_CODE = /^[A-Za-z]{2}$/;

/**
 * Builds the proxy for a request from an operator template; `{country}` is replaced by `country` exactly as
 * given (case preserved). Returns null when no template is configured.
 */
export function proxyFromTemplate(template: string | undefined, country: string): ProxyConfig | null {
  const trimmed = template?.trim();
  if (!trimmed) return null;
  if (trimmed.includes(COUNTRY_PLACEHOLDER) && !COUNTRY_CODE.test(country)) {
    throw new Error(`Proxy country must be a two-letter country code, got ${JSON.stringify(country)}`);
  }
  let url: URL;
  try {
    url = new URL(trimmed.split(COUNTRY_PLACEHOLDER).join(country));
  } catch {
    throw new Error('Proxy URL template is not a valid URL');
  }
  if (url.protocol !== 'http:') throw new Error(`Proxy URL must use http:, got ${url.protocol}`);
  return { url };
}

export function proxyPort(config: ProxyConfig): number {
  return Number(config.url.port || 80);
}

export function proxyHost(config: ProxyConfig): string {
  return unbracketHost(config.url.hostname);
}

export function proxyAuthorization(config: ProxyConfig): string | undefined {
  const { username, password } = config.url;
  if (!username && !password) return undefined;
  const credentials = `${decodeURIComponent(username)}:${decodeURIComponent(password)}`;
  return `Basic ${Buffer.from(credentials).toString('base64')}`;
}

export function proxyForPlaywright(config: ProxyConfig): PlaywrightProxy {
  const { protocol, host, username, password } = config.url;
  return {
    server: `${protocol}//${host}`,
    ...(username ? { username: decodeURIComponent(username) } : {}),
    ...(password ? { password: decodeURIComponent(password) } : {}),
  };
}
