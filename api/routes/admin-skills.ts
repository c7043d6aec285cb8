import type Router from '@koa/router';
import { AdminSkillsImportRequest, AdminSkillsRefreshRequest } from '../../lib/schemas/skills';
import { embedderFromConfig } from '../../lib/skills/embeddings';
import type { AppState } from '../context';
import type { ApiDeps } from '../deps';
import { importSkills, refreshSkillsNow } from '../services/skills/directory';
import { parseBody } from '../validation';

/**
 * The skills directory's operator routes, on the admin router (prefix /admin, ADMIN_TOKEN): JSON Lines import
 * (the CLI sends a file in chunks under the body limit) and an immediate GitHub refresh.
 */
export function registerSkillsAdminRoutes(router: Router<AppState>, deps: ApiDeps): void {
  const embedder = embedderFromConfig(deps.config);

  router.post('/skills/import', async (ctx) => {
    const body = parseBody(AdminSkillsImportRequest, ctx.state.body);
    ctx.body = await importSkills(deps.db, embedder, body);
  });

  router.post('/skills/refresh', async (ctx) => {
    const body = parseBody(AdminSkillsRefreshRequest, ctx.state.body ?? {});
    const { finished, ...answer } = await refreshSkillsNow(deps, body);
    if (!finished) ctx.status = 202;
    ctx.body = answer;
  });
}
