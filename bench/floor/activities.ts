import { fetchBuffered } from '../../lib/net/buffered-fetch';
import type { NetworkPolicy } from '../../lib/net/ssrf';
import { htmlToPage } from '../../lib/page/convert';
import { extractStructured } from '../../activities/llm/extract';
import { jsonSchemaForRequest } from '../../lib/llm/structured-output';
import type OpenAI from 'openai';

/**
 * The floor's one activity: the scrape's fetch (the SSRF-guarded fetchBuffered), conversion
 * (htmlToPage) and extraction (extractStructured, no schema: the same default output) — the library
 * functions the platform's fast-path activity calls, without its database reads and writes.
 */
export function createFloorActivities(deps: { policy: NetworkPolicy; llm: OpenAI; model: string }) {
  const output = jsonSchemaForRequest(undefined);
  return {
    async fetchConvertExtract(url: string): Promise<number> {
      const response = await fetchBuffered(url, {
        policy: deps.policy,
        headers: { accept: 'text/html,application/xhtml+xml,application/json;q=0.9,text/plain;q=0.8,*/*;q=0.5' },
      });
      if (response.status >= 400) throw new Error(`${url} answered ${response.status}`);
      const page = htmlToPage(response.body.toString('utf8'), response.url);
      await extractStructured(
        { client: deps.llm },
        { model: deps.model, page: { url: response.url, ...page }, output },
      );
      return page.markdown.length;
    },
  };
}

export type FloorActivities = ReturnType<typeof createFloorActivities>;
