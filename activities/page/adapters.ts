import type { ScrapeRequestBody } from '../../api/schemas/scrape';
import { proxyFromTemplate, type ProxyConfig } from '../../lib/net/proxy';
import { rejectScrape } from '../rejections';

export interface AdapterConfig {
  proxyUrlTemplate: string | null;
  captcha: { baseURL: string; apiKey: string } | null;
}

/** The proxy a request asked for; asking for one that is not configured is a job error, never a silent direct fetch. */
export function requestedProxy(config: AdapterConfig, request: Pick<ScrapeRequestBody, 'mobile_proxy_enabled' | 'mobile_proxy_country'>): ProxyConfig | null {
  if (!request.mobile_proxy_enabled) return null;
  const proxy = proxyFromTemplate(config.proxyUrlTemplate ?? undefined, request.mobile_proxy_country);
  if (!proxy) throw rejectScrape('mobile_proxy_enabled was requested but this service has no proxy configured (operator: set PROXY_URL)');
  return proxy;
}

export function assertCaptchaAvailable(config: AdapterConfig, request: Pick<ScrapeRequestBody, 'captcha_solver_enabled'>): void {
  if (request.captcha_solver_enabled && !config.captcha) {
    throw rejectScrape('captcha_solver_enabled was requested but this service has no captcha solver configured (operator: set CAPTCHA_SOLVER_URL and CAPTCHA_SOLVER_KEY)');
  }
}
