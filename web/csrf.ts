import type { WebContext } from './context';
import { constantTimeEquals } from '../lib/crypto';
import type { Config } from '../lib/config';
import { PageError } from './page';

const refused = (why: string) =>
  new PageError(
    403,
    'Request refused',
    `This form was not sent from this site's own pages (${why}). Go back, reload the page and try again.`,
  );

/** The origins this site's own pages are served from: the request's, and PUBLIC_API_URL's. */
function ownOrigins(ctx: WebContext, config: Pick<Config, 'market'>): Set<string> {
  const origins = new Set([`${ctx.protocol}://${ctx.host}`]);
  if (config.market.publicApiUrl) origins.add(new URL(config.market.publicApiUrl).origin);
  return origins;
}

/**
 * The first two of the three CSRF defences of every request that changes something (SameSite=Lax
 * cookies are the third): browsers say where a request comes from, in Sec-Fetch-Site and Origin;
 * each given must say "this site", and at least one must be given.
 */
export function requireSameOrigin(ctx: WebContext, config: Pick<Config, 'market'>): void {
  const site = ctx.get('sec-fetch-site');
  const origin = ctx.get('origin');
  if (!site && !origin) throw refused('the browser did not say where it came from');
  if (site && site !== 'same-origin')
    throw refused(`it came from ${site === 'none' ? 'outside any page' : `a ${site} page`}`);
  if (origin && !ownOrigins(ctx, config).has(origin)) throw refused('it came from another origin');
}

/** The form's token must be the one this browser was given. */
export function requireFormToken(given: string | null, expected: string | null): void {
  if (!given || !expected || !constantTimeEquals(given, expected))
    throw refused('its form token is missing or out of date');
}
