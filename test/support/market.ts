import type { LlmReview } from '../../lib/market/llm-review';
import { randomBytes } from 'node:crypto';
import { recordValidation, type StoredValidation } from '../../db/repos/market-validations';
import type { DiscoveredTool, Discovery } from '../../lib/market/discovery';
import { oneJsonLine, runAdmin } from './stack/admin-cli';
import type { Harness } from './stack/harness';

/** Realistic, well described tools (quality 100, no poisoning). */
export function weatherTools(): DiscoveredTool[] {
  return [
    {
      name: 'get_weather',
      description: 'Returns the current weather (temperature, wind, conditions) for a city by name.',
      inputSchema: {
        type: 'object',
        properties: { city: { type: 'string', description: 'City name, e.g. Lisbon' } },
        required: ['city'],
      },
    },
    {
      name: 'get_forecast',
      description: 'Returns a daily weather forecast for up to seven days for a city by name.',
      inputSchema: {
        type: 'object',
        properties: {
          city: { type: 'string', description: 'City name' },
          days: { type: 'integer', description: 'Number of days, 1 to 7' },
        },
        required: ['city'],
      },
    },
    {
      name: 'air_quality',
      description: 'Returns the air quality index and the main pollutants measured in a city right now.',
      inputSchema: {
        type: 'object',
        properties: { city: { type: 'string', description: 'City name' } },
        required: ['city'],
      },
    },
  ];
}

export const uniqueHost = () => `mcp-${randomBytes(4).toString('hex')}.provider.example`;

/**
 * A validation stored through the repository layer, as the validate workflow stores it (the real
 * discovery is the tool runtime's; these tests exercise what the market does with its result).
 */
export async function storeValidation(
  h: Harness,
  ownerId: string,
  options: {
    url?: string;
    tools?: DiscoveredTool[];
    discovery?: Partial<Discovery>;
    ttlMs?: number;
    now?: Date;
    givenParamNames?: string[];
    /** The LLM second opinion stored in the report (as the validate workflow stores it when one is configured). */
    llmReview?: LlmReview;
  } = {},
): Promise<StoredValidation & { url: string }> {
  const url = options.url ?? `https://${uniqueHost()}/mcp`;
  const stored = await recordValidation(h.db, {
    ownerId,
    source: { type: 'remote_mcp', url },
    discovery: {
      title: 'Weather',
      description: 'Weather data',
      params: [],
      tools: options.tools ?? weatherTools(),
      ...options.discovery,
    },
    ttlMs: options.ttlMs,
    now: options.now,
    givenParamNames: options.givenParamNames,
    llmReview: options.llmReview,
  });
  return { ...stored, url };
}

/** A valid submission body for a stored remote-MCP validation. */
export function submissionBody(
  validation: { id: string; sourceFingerprint: string; url: string },
  overrides: Record<string, unknown> = {},
): Record<string, any> {
  return {
    validationId: validation.id,
    sourceFingerprint: validation.sourceFingerprint,
    type: 'remote_mcp',
    // Slugs are unique in the market: every submission gets its own name unless a test chooses one.
    name: `Weather Now ${randomBytes(3).toString('hex')}`,
    description: 'Current weather, forecasts and air quality for any city',
    remoteMcpUrl: validation.url,
    monetizationStrategy: 'free',
    ...overrides,
  };
}

/** The admin CLI as an operator runs it, against this harness's API. */
export async function admin(h: Harness, args: string[]): Promise<any> {
  return oneJsonLine(await runAdmin(args, { ...process.env, ...h.env, ADMIN_URL: h.baseUrl }));
}

export async function adminRaw(h: Harness, args: string[]) {
  return runAdmin(args, { ...process.env, ...h.env, ADMIN_URL: h.baseUrl });
}

/** Creates a submission and returns its owner view; throws unless 201. */
export async function createSubmission(h: Harness, apiKey: string, body: Record<string, unknown>): Promise<any> {
  const response = await h.http('POST', '/api/v1/mcp-market/submissions', { apiKey, body });
  if (response.status !== 201)
    throw new Error(`create submission: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

/** Proves every event of a new verification through the charge endpoint; returns the verification id. */
export async function completeVerification(
  h: Harness,
  apiKey: string,
  sourceFingerprint: string,
  eventNames: string[],
): Promise<string> {
  const created = await h.http('POST', '/api/v1/mcp-market/event-verifications', {
    apiKey,
    body: { sourceFingerprint, eventNames },
  });
  if (created.status !== 201) throw new Error(`verification: ${created.status} ${JSON.stringify(created.body)}`);
  for (const eventName of eventNames) {
    const charged = await h.http('POST', `/api/v1/provider/runs/${created.body.runId}/charge`, {
      apiKey,
      headers: { 'x-service-charge-token': created.body.chargeToken, 'idempotency-key': `verify-${eventName}` },
      body: { eventName },
    });
    if (charged.status !== 200)
      throw new Error(`charge ${eventName}: ${charged.status} ${JSON.stringify(charged.body)}`);
  }
  return created.body.id;
}

/** An operator decision through the admin API (the CLI drives the same endpoint). */
export async function review(
  h: Harness,
  submissionId: string,
  action: 'approve' | 'reject' | 'disable',
  reason?: string,
): Promise<any> {
  const response = await h.http('POST', `/admin/market/mcp/submissions/${submissionId}/review`, {
    headers: { authorization: `Bearer ${h.config.adminToken}` },
    body: { action, ...(reason && { reason }) },
  });
  if (response.status !== 200) throw new Error(`review ${action}: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

/** An approved, live entry of `provider` (submission body overrides as for submissionBody). Returns the public id. */
export async function approvedEntry(
  h: Harness,
  provider: { userId: string; apiKey: string },
  overrides: Record<string, unknown> = {},
  validation?: { id: string; sourceFingerprint: string; url: string },
) {
  const validated = validation ?? (await storeValidation(h, provider.userId));
  const created = await createSubmission(h, provider.apiKey, submissionBody(validated, overrides));
  const submitted = await h.http('POST', `/api/v1/mcp-market/submissions/${created.id}/submit`, {
    apiKey: provider.apiKey,
  });
  if (submitted.status !== 200) throw new Error(`submit: ${submitted.status} ${JSON.stringify(submitted.body)}`);
  await review(h, created.id, 'approve');
  return { entryId: created.publicId as string, submissionId: created.id as string, slug: created.slug as string };
}

/**
 * An approved, live provider_event entry of `provider`: validated, its events verified through the
 * charge endpoint, submitted and approved. Returns the public id (what runs are opened against).
 */
export async function approvedEventEntry(
  h: Harness,
  provider: { userId: string; apiKey: string },
  events: { eventName: string; unitPriceUsd: number }[],
): Promise<{ entryId: string; submissionId: string; slug: string }> {
  const validation = await storeValidation(h, provider.userId);
  const eventVerificationId = await completeVerification(
    h,
    provider.apiKey,
    validation.sourceFingerprint,
    events.map((e) => e.eventName),
  );
  return approvedEntry(
    h,
    provider,
    { monetizationStrategy: 'provider_event', pricingEvents: events, eventVerificationId },
    validation,
  );
}
