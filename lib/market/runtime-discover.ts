import { discoverToolsWithDocument } from '../tools/discovery';
import { scrubSecrets, sourceErrorStatus, ToolSourceError, type ToolSourceErrorCode } from '../tools/errors';
import type { ToolRuntimeDeps } from '../tools/source';
import type { SourceParamValues, ToolSourceSpec } from '../tools/types';
import { scrubbedValue } from './consumer-errors';
import { DiscoveryError, type Discover, type DiscoveryResult } from './discovery';

/**
 * The market's names for the tool runtime's codes where they differ: `invalid_openapi` (the document is not valid
 * OpenAPI) has the market's one name for a bad document. The status is the runtime's (sourceErrorStatus).
 */
const MARKET_CODE: Partial<Record<ToolSourceErrorCode, string>> = { invalid_openapi: 'invalid_openapi_document' };

/**
 * The market's discovery over the tool runtime (lib/tools): remote MCP (Streamable HTTP, else legacy
 * SSE) or OpenAPI from a URL, text or object, every request through the SSRF guard, https only except
 * hosts NETWORK_ALLOWLIST opens, external `$ref`s not followed. An MCP server answering 401/403 is not
 * a failure: the result has no tools, `authRequired` and the credential it asked for as a param (the
 * validation is then `needs_parameters`). For an OpenAPI document fetched from `url` the document
 * comes back too (the fingerprint covers it). Failures throw DiscoveryError; no message carries a
 * param value (the runtime scrubs them).
 */
export function runtimeDiscover(deps: ToolRuntimeDeps): Discover {
  return async (request) => {
    const spec: ToolSourceSpec = {
      type: request.type,
      ...(request.url ? { url: request.url } : {}),
      ...(request.type === 'openapi' && request.spec != null ? { spec: request.spec } : {}),
      ...(request.type === 'openapi' && typeof request.specText === 'string' ? { specText: request.specText } : {}),
      ...(request.type === 'openapi' && request.openapiBaseUrl ? { baseUrl: request.openapiBaseUrl } : {}),
      ...(request.params && Object.keys(request.params).length ? { params: request.params as SourceParamValues } : {}),
    };
    try {
      const { discovery, openapiDocument } = await discoverToolsWithDocument(spec, deps);
      const { authRequired, ...source } = discovery.source;
      // A server URL variable given in params is a param value: it is not returned or stored either.
      if (typeof source.serverUrl === 'string')
        source.serverUrl = scrubSecrets(source.serverUrl, Object.values(spec.params ?? {}));
      const result: DiscoveryResult = {
        title: discovery.title,
        description: discovery.description,
        tools: discovery.tools.map((tool) => ({
          name: tool.name,
          description: tool.description,
          inputSchema: tool.inputSchema,
          ...(tool.annotations ? { annotations: { ...tool.annotations } } : {}),
          // Stored and served as it is: a value given in params (a credential) never stays in it.
          ...(tool.listing
            ? { listing: scrubbedValue(tool.listing, Object.values(spec.params ?? {})) as Record<string, unknown> }
            : {}),
        })),
        params: discovery.params.map((param) => ({ ...param })),
        // Like the listing: a value given in params never stays in what is stored.
        ...(discovery.prompts?.length && {
          prompts: scrubbedValue(discovery.prompts, Object.values(spec.params ?? {})) as typeof discovery.prompts,
        }),
        ...(discovery.resources?.length && {
          resources: scrubbedValue(discovery.resources, Object.values(spec.params ?? {})) as typeof discovery.resources,
        }),
        authRequired,
        source,
      };
      if (request.type === 'openapi' && request.url && openapiDocument) result.openapiDocument = openapiDocument;
      return result;
    } catch (error) {
      if (!(error instanceof ToolSourceError)) throw error;
      throw new DiscoveryError(
        MARKET_CODE[error.code] ?? error.code,
        error.message,
        sourceErrorStatus(error.code),
        error.transient,
      );
    }
  };
}
