import { checkLlmModel, type PriceTable } from '../../../lib/billing/pricing';
import { ApiError } from '../../errors';

/** 400 `model_not_supported` (listing the accepted models) when the request's service model is not in the price table. */
export function assertLlmModel(prices: PriceTable, body: { llm_provider: string; llm_model: string }): void {
  const problem = checkLlmModel(prices, body);
  if (problem)
    throw new ApiError(400, problem.code, problem.message, [
      { path: 'body/llm_model', message: `must be one of: ${problem.accepted.join(', ')}` },
    ]);
}
