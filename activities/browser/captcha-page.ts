import type { Page } from 'playwright-core';
import type { CaptchaChallenge, CaptchaKind } from './captcha-solver';

const WIDGETS: { kind: CaptchaKind; selector: string; field: string }[] = [
  { kind: 'recaptcha', selector: '.g-recaptcha[data-sitekey]', field: 'g-recaptcha-response' },
  { kind: 'hcaptcha', selector: '.h-captcha[data-sitekey]', field: 'h-captcha-response' },
  { kind: 'turnstile', selector: '.cf-turnstile[data-sitekey]', field: 'cf-turnstile-response' },
];

export async function detectCaptcha(page: Page): Promise<CaptchaChallenge | null> {
  for (const widget of WIDGETS) {
    const siteKey = await page
      .locator(widget.selector)
      .first()
      .getAttribute('data-sitekey', { timeout: 500 })
      .catch(() => null);
    if (siteKey) return { kind: widget.kind, siteKey, pageUrl: page.url() };
  }
  return null;
}

/** Puts the solved token where the widget would, then calls the widget's callback or submits its form. */
export async function applyCaptchaToken(page: Page, challenge: CaptchaChallenge, token: string): Promise<void> {
  const widget = WIDGETS.find((w) => w.kind === challenge.kind)!;
  const navigation = page.waitForNavigation({ timeout: 15_000 }).catch(() => null);
  const acted = await page.evaluate(
    ({ selector, field, token }) => {
      const element = document.querySelector(selector) as HTMLElement | null;
      if (!element) return false;
      const form = element.closest('form');
      let input = (form ?? document).querySelector(`[name="${field}"]`) as
        HTMLTextAreaElement | HTMLInputElement | null;
      if (!input) {
        input = document.createElement('textarea');
        input.name = field;
        input.style.display = 'none';
        (form ?? element).appendChild(input);
      }
      input.value = token;
      const callbackName = element.getAttribute('data-callback');
      const callback = callbackName ? (window as unknown as Record<string, unknown>)[callbackName] : undefined;
      if (typeof callback === 'function') (callback as (t: string) => void)(token);
      else form?.submit();
      return true;
    },
    { selector: widget.selector, field: widget.field, token },
  );
  if (acted) await navigation;
}
