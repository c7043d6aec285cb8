import type { Discovery, DiscoveryParam, DiscoveryRequest } from './discovery';
import type { ValidationReport, ValidationStatus } from './validation-report';

/** A discovery request as it travels through workflow history: params sealed, never in plain text. */
export interface MarketSourceInput {
  request: Omit<DiscoveryRequest, 'params'>;
  /** JSON of the params sealed with the master key (associated data DISCOVERY_PARAMS_AAD), or null. */
  sealedParams: string | null;
}

export const DISCOVERY_PARAMS_AAD = 'market-discovery-params';

export interface ValidateSourceInput extends MarketSourceInput {
  validationId: string;
  ownerId: string;
}

/** McpMarketValidationResponse. */
export interface ValidationView {
  validationId: string;
  status: ValidationStatus;
  sourceFingerprint: string;
  parametersRequired: boolean;
  requiredParameters: DiscoveryParam[];
  report: ValidationReport;
  discovery: Discovery;
  expiresAt: string;
}
