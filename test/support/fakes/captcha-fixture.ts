import type { FixtureHandler } from './fixture-site';

export const CAPTCHA_SITE_KEY = 'fixture-site-key';
export const CAPTCHA_REWARD = 'Welcome, human: the hidden price list is 42 credits.';

/** A page gated by a reCAPTCHA-style widget: the content appears only when the form posts the solver's token. */
export function captchaRoutes(expectedToken: string): Record<string, FixtureHandler> {
  return {
    '/captcha': async (req, res) => {
      if (req.method === 'POST') {
        let raw = '';
        for await (const chunk of req) raw += chunk;
        const token = new URLSearchParams(raw).get('g-recaptcha-response');
        res.writeHead(token === expectedToken ? 200 : 403, { 'content-type': 'text/html' });
        res.end(
          token === expectedToken
            ? `<html><head><title>Passed</title></head><body><h1>Passed</h1><p>${CAPTCHA_REWARD}</p></body></html>`
            : '<html><body>Captcha failed</body></html>',
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<html><head><title>Are you human?</title></head><body>
        <h1>Please prove you are human</h1>
        <p>This page is protected. Solve the challenge below to see the price list of our rooftop honey products.</p>
        <form method="POST" action="/captcha"><div class="g-recaptcha" data-sitekey="${CAPTCHA_SITE_KEY}"></div><button>Continue</button></form>
      </body></html>`);
    },
  };
}
