import { seal, unseal } from '../crypto';
import type { ToolSourceErrorCode } from './errors';
import type { DiscoveryResult, SourceParamValues, ToolSourceType } from './types';

/**
 * A discovery as it travels through Temporal (API → workflow → activity): the source, with its
 * params sealed (AES-256-GCM under MASTER_KEY, bound to the workflow id), so no credential is ever
 * readable in a workflow history.
 */
export interface DiscoverToolsInput {
  type: ToolSourceType;
  url?: string;
  spec?: Record<string, unknown>;
  specText?: string;
  baseUrl?: string;
  sealedParams?: string;
}

/** Refusals, unreachable upstreams and bad documents come back as values (the API maps them to statuses), not as failures. */
export type DiscoveryOutcome =
  { ok: true; discovery: DiscoveryResult } | { ok: false; code: ToolSourceErrorCode; message: string };

export function sealDiscoveryParams(masterKey: Buffer, workflowId: string, params: SourceParamValues): string {
  return seal(masterKey, JSON.stringify(params), `tools-discovery:${workflowId}`);
}

export function unsealDiscoveryParams(masterKey: Buffer, workflowId: string, sealed: string): SourceParamValues {
  return JSON.parse(unseal(masterKey, sealed, `tools-discovery:${workflowId}`)) as SourceParamValues;
}
