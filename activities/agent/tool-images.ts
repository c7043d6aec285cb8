import type { ChatCompletionContentPart, ChatCompletionUserMessageParam } from 'openai/resources/chat/completions';
import type { Db } from '../../db/connect';
import { insertToolImages, type StoredToolImage } from '../../db/repos/agent-tool-images';
import { findJobLlmModel } from '../../db/repos/jobs';
import type { PriceTable } from '../../lib/billing/pricing';
import { modelImageProblem, type KeptToolImage, type ToolImage, type ToolImageKeeper } from '../../lib/tools/images';

/**
 * Images agents' tools return, given to the run's model as image input when its price-table entry
 * says `vision`, and described as text otherwise. The callTool activity keeps the images of an
 * answer (toolImageKeeper: bytes in agent_tool_images, only references and descriptions go back to
 * the workflow); the call's record says where they show; the decision activity adds the images of
 * the latest tool results to the model's request (imagesMessage). Older results keep only their
 * descriptions, so a long run's requests do not grow with every image it has seen.
 */

/** AGENT_TOOL_IMAGES_PER_RESULT and AGENT_TOOL_IMAGE_MAX_KB (lib/config.ts). */
export interface ToolImageLimits {
  /** Images of one tool result given to the model; the rest are described. */
  perResult: number;
  /** The largest image given to the model, in bytes; a larger one is described. */
  maxBytes: number;
}

export const DEFAULT_TOOL_IMAGE_LIMITS: ToolImageLimits = { perResult: 4, maxBytes: 1024 * 1024 };

/** Whether the run's model is given images (its price-table entry says `vision`). */
export async function runSeesImages(db: Db, prices: PriceTable, jobId: string): Promise<boolean> {
  const model = await findJobLlmModel(db, jobId);
  return typeof model === 'string' && prices.acceptsImages(model);
}

/**
 * Keeps the images of a tool answer for a run whose model sees images: the first `perResult` of
 * at most `maxBytes` each, of a type models take (modelImageProblem); any other image is described
 * with why it is not shown, never dropped unsaid. A run whose model does not see images keeps none
 * (they are described).
 */
export function toolImageKeeper(deps: { db: Db; prices: PriceTable; limits?: ToolImageLimits }): ToolImageKeeper {
  const limits = deps.limits ?? DEFAULT_TOOL_IMAGE_LIMITS;
  return {
    async keep(jobId: string, tool: string, images: ToolImage[]): Promise<KeptToolImage[]> {
      if (!(await runSeesImages(deps.db, deps.prices, jobId))) return images.map(() => ({ notShown: null }));
      const verdicts = images.map((image, n): { keep: Buffer } | { notShown: string } => {
        if (n >= limits.perResult)
          return { notShown: `only the first ${limits.perResult} images of a result are shown` };
        if (image.bytes > limits.maxBytes)
          return { notShown: `larger than the ${limits.maxBytes}-byte limit for images shown to the model` };
        const data = Buffer.from(image.data, 'base64');
        const problem = modelImageProblem(image.mimeType, data);
        return problem ? { notShown: problem } : { keep: data };
      });
      const kept = images.flatMap((image, n) => {
        const verdict = verdicts[n];
        return 'keep' in verdict
          ? [{ position: n, mimeType: image.mimeType.trim().toLowerCase(), data: verdict.keep }]
          : [];
      });
      const ids = await insertToolImages(deps.db, jobId, tool, kept);
      const idOf = new Map(kept.map((image, i) => [image.position, ids[i]]));
      return images.map((image, n) => {
        const verdict = verdicts[n];
        return 'keep' in verdict
          ? { ref: { id: idOf.get(n)!, mimeType: image.mimeType, bytes: image.bytes } }
          : { notShown: verdict.notShown };
      });
    },
  };
}

/**
 * The user message that shows the model the images of its latest tool results (the chat API's tool
 * messages carry text only): per tool call, a short text naming it, then its images as data URLs.
 */
export function imagesMessage(
  intro: string,
  calls: { label: string; images: StoredToolImage[] }[],
): ChatCompletionUserMessageParam | null {
  const parts: ChatCompletionContentPart[] = [];
  for (const call of calls) {
    if (call.images.length === 0) continue;
    parts.push({ type: 'text', text: call.label });
    for (const image of call.images)
      parts.push({
        type: 'image_url',
        image_url: { url: `data:${image.mimeType};base64,${image.data.toString('base64')}` },
      });
  }
  if (parts.length === 0) return null;
  return { role: 'user', content: [{ type: 'text', text: intro }, ...parts] };
}
