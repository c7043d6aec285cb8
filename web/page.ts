import type { WebContext } from './context';

/**
 * Every page and asset gets these. The policy is strict and nonce-free: scripts, styles, images and
 * connections only from this origin, no inline script or style at all, forms post only here, and no
 * framing. Pages therefore render no inline handler, `style` attribute or `<script>` body.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "font-src 'none'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export function setSecurityHeaders(ctx: WebContext): void {
  ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'same-origin');
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('Cross-Origin-Opener-Policy', 'same-origin');
}

/** Something JSX rendered: hono/jsx nodes print themselves (escaped) with toString(). */
export interface Renderable {
  toString(): string | Promise<string>;
}

/** Answers with a rendered page. Signed-in pages pass `private: true` (never stored by caches). */
export async function sendPage(
  ctx: WebContext,
  page: Renderable,
  options: { status?: number; private?: boolean } = {},
): Promise<void> {
  ctx.status = options.status ?? 200;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', options.private ? 'no-store' : 'no-cache');
  ctx.body = `<!doctype html>${await page.toString()}`;
}

/** Answers with a part of a page (what htmx swaps in), rendered and escaped like a page; never stored by caches. */
export async function sendFragment(
  ctx: WebContext,
  fragment: Renderable,
  options: { status?: number } = {},
): Promise<void> {
  ctx.status = options.status ?? 200;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.body = await fragment.toString();
}

/** A page-level failure (404, 403, ...) that the pages' error handler renders as an HTML page. */
export class PageError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

export const pageNotFound = (message = 'There is nothing at this address.') =>
  new PageError(404, 'Page not found', message);
