import Router from '@koa/router';
import { ruleBroken } from '../../../lib/market/errors';
import { checkPngIcon } from '../../../lib/market/png-icon';
import { MarketIconUploadRequest } from '../../../lib/schemas/market';
import type { AppState, UserState } from '../../context';
import type { ApiDeps } from '../../deps';
import { notFound } from '../../errors';
import { parseBody } from '../../validation';
import { iconUrlFor, marketErrors } from './common';
import { insertIcon, readIcon } from '../../services/market/reads';

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/;

/** POST /market/icons: a PNG checked in full (lib/market/png-icon.ts) and stored under the caller. */
export function marketIconRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();
  router.use(marketErrors());
  router.post('/market/icons', async (ctx) => {
    const user = ctx.state.user;
    const body = parseBody(MarketIconUploadRequest, ctx.state.body);
    const text = body.base64.replace(/\s+/g, '');
    if (!BASE64.test(text)) throw ruleBroken('invalid_base64', 'base64 is not valid base64', 'body/base64');
    const bytes = Buffer.from(text, 'base64');
    const { width, height } = checkPngIcon(bytes);
    const icon = await insertIcon(deps.db, {
      ownerId: user.userId,
      content: bytes,
      width,
      height,
      fileName: body.fileName,
    });
    ctx.status = 201;
    ctx.body = { iconObjectKey: icon.id, iconUrl: iconUrlFor(ctx, deps)(icon.id), width, height };
  });
  return router;
}

/**
 * GET /api/v1/market/icons/{key}.png, outside API-key auth: icons are public once uploaded (their
 * keys are random). Served as image/png with nosniff and a sandboxing CSP; content never changes.
 */
export function publicMarketIconRoutes(deps: ApiDeps): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/api/v1/market/icons/:key.png', async (ctx) => {
    const key = String(ctx.params.key);
    const icon = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(key)
      ? await readIcon(deps.db, key)
      : null;
    if (!icon) throw notFound('Icon');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Content-Security-Policy', "default-src 'none'; sandbox");
    ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
    ctx.set('ETag', `"${icon.sha256}"`);
    ctx.type = 'image/png';
    ctx.body = icon.content;
  });
  return router;
}
