import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import type { AuthenticatedUser } from '../../../db/repos/users';
import type { McpDiscoveryRequestBody } from '../../../lib/schemas/tools';
import { sealDiscoveryParams } from '../../../lib/tools/discovery-request';
import { sourceErrorStatus, ToolSourceError, type ToolSourceErrorCode } from '../../../lib/tools/errors';
import { parseSourceUrl, preflightSourceUrl } from '../../../lib/tools/network';
import type { DiscoverToolsInput, DiscoveryOutcome } from '../../../workflows/tools-discovery';
import type { ApiDeps } from '../../deps';
import { ApiError, badRequest } from '../../errors';
import { startAndWait } from '../shared/start-and-wait';

/** How long POST /agents/discover-mcp waits for its discovery workflow before answering 504. */
const DISCOVERY_WAIT_MS = 60_000;

/**
 * POST /agents/discover-mcp: a tool source (a remote MCP server or an OpenAPI document) checked, then read by
 * its discovery workflow within a bound: its tools, or the source's error as the API answers it.
 */
export async function discoverTools(deps: ApiDeps, user: AuthenticatedUser, body: McpDiscoveryRequestBody) {
  const workflowId = `tools-discovery-${randomUUID()}`;
  const input = discoveryInput(body, deps, workflowId);
  const outcome = await runDiscovery(deps, user, workflowId, input);
  if (!outcome.ok) throw discoveryError(outcome.code, outcome.message);
  return outcome.discovery;
}

/** Checks what the schema cannot, refuses forbidden destinations before any work starts, and seals the params. */
function discoveryInput(body: McpDiscoveryRequestBody, deps: ApiDeps, workflowId: string): DiscoverToolsInput {
  const inline = [body.spec, body.specText].filter((value) => value !== undefined && value !== null).length;
  if (body.type === 'remote_mcp') {
    if (!body.url)
      throw badRequest('A remote_mcp source needs url', [
        { path: 'body/url', message: 'is required for type remote_mcp' },
      ]);
    if (inline > 0 || body.openapiBaseUrl)
      throw badRequest('spec, specText and openapiBaseUrl are for type openapi', [
        { path: 'body/type', message: 'is remote_mcp' },
      ]);
  } else if (inline + (body.url ? 1 : 0) !== 1) {
    throw badRequest('An openapi source needs exactly one of url (the document URL), specText or spec', [
      { path: 'body', message: 'give exactly one of url, specText, spec' },
    ]);
  }
  for (const [field, value] of [
    ['url', body.url],
    ['openapiBaseUrl', body.openapiBaseUrl],
  ] as const) {
    if (!value) continue;
    try {
      preflightSourceUrl(parseSourceUrl(value, field), deps.policy);
    } catch (error) {
      if (error instanceof ToolSourceError)
        throw new ApiError(sourceErrorStatus(error.code), error.code, error.message, [
          { path: `body/${field}`, message: error.message },
        ]);
      throw error;
    }
  }
  const params = body.params ?? {};
  return {
    type: body.type,
    ...(body.url && { url: body.url }),
    ...(body.spec && { spec: body.spec }),
    ...(body.specText !== undefined && { specText: body.specText }),
    ...(body.openapiBaseUrl && { baseUrl: body.openapiBaseUrl }),
    ...(Object.keys(params).length > 0 && {
      sealedParams: sealDiscoveryParams(deps.config.masterKey, workflowId, params),
    }),
  };
}

async function runDiscovery(
  deps: ApiDeps,
  user: AuthenticatedUser,
  workflowId: string,
  input: DiscoverToolsInput,
): Promise<DiscoveryOutcome> {
  const outcome = await startAndWait<DiscoveryOutcome>(
    deps.temporal,
    {
      workflowType: 'discoverToolsWorkflow',
      workflowId,
      taskQueue: deps.config.taskQueues.platform,
      args: [input],
      executionTimeout: '5m',
      userId: user.userId,
      kind: 'tools-discovery',
    },
    {
      waitMs: DISCOVERY_WAIT_MS,
      cancelOnTimeout: true,
      failure: (error) =>
        error instanceof WorkflowFailedError
          ? new ApiError(502, 'discovery_failed', 'The discovery failed unexpectedly; try again')
          : undefined,
    },
  );
  if (!outcome.finished)
    throw new ApiError(504, 'discovery_timeout', `The discovery did not finish within ${DISCOVERY_WAIT_MS / 1000} s`);
  return outcome.result;
}

function discoveryError(code: ToolSourceErrorCode, message: string): ApiError {
  return new ApiError(sourceErrorStatus(code), code, message);
}
