import Router from '@koa/router';
import { aiSearch } from '../services/skills/ai-search';
import { searchSkillsDirectory } from '../services/skills/directory';
import { embedderFromConfig, serviceLlmClient } from '../../lib/skills/embeddings';
import type { UserState } from '../context';
import type { ApiDeps } from '../deps';
import { SkillsSearchQuery, type SkillsSearchParams } from '../../lib/schemas/skills';
import { parseQuery } from '../validation';

/** /skills/directory: plain full-text search and AI search (see lib/skills). Its operator routes are in admin-skills.ts. */
export function skillsRoutes(deps: ApiDeps): Router<UserState> {
  const router = new Router<UserState>();
  const ai = {
    db: deps.db,
    llm: serviceLlmClient(deps.config, 30_000),
    embedder: embedderFromConfig(deps.config),
    model: deps.config.skills.aiModel,
    prices: deps.config.modelPrices,
    rerank: deps.config.skills.rerank,
  };

  router.get('/skills/directory/search', async (ctx) => {
    const { q, page, pageSize } = parseQuery<SkillsSearchParams>(SkillsSearchQuery, ctx.query);
    ctx.body = await searchSkillsDirectory(deps.db, q, { page, pageSize });
  });

  router.get('/skills/directory/ai-search', async (ctx) => {
    const user = ctx.state.user;
    const { q, page, pageSize } = parseQuery<SkillsSearchParams>(SkillsSearchQuery, ctx.query);
    ctx.body = await aiSearch(ai, { userId: user.userId, q, page, pageSize, requestId: ctx.state.requestId });
  });

  return router;
}
