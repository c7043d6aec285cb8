import { proxyFromTemplate, type ProxyConfig } from '../../lib/net/proxy';
import { rejectScrape } from '../rejections';

export interface AdapterConfig {
  proxyUrlTemplate: string | null;
  captcha: { baseURL: string; apiKey: string } | null;
}

/** The proxy a request asked for; asking for one that is not configured is a job error, never a silent direct fetch. */
export function requestedProxy(
  config: AdapterConfig,
  request: { enabled: boolean; country: string | undefined; field: 'mobile_proxy_enabled' | 'proxy_enabled' },
): ProxyConfig | null {
  if (!request.enabled) return null;
  const proxy = proxyFromTemplate(config.proxyUrlTemplate ?? undefined, request.country ?? 'US');
  if (!proxy)
    throw rejectScrape(
      `${request.field} was requested but this service has no proxy configured (operator: set PROXY_URL)`,
    );
  return proxy;
}

export function assertCaptchaAvailable(config: AdapterConfig, request: { captcha_solver_enabled: boolean }): void {
  if (request.captcha_solver_enabled && !config.captcha) {
    throw rejectScrape(
      'captcha_solver_enabled was requested but this service has no captcha solver configured (operator: set CAPTCHA_SOLVER_URL and CAPTCHA_SOLVER_KEY)',
    );
  }
}
