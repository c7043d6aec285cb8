import { usdToWholeMicros } from '../money';
import { MarketRuleError } from './errors';

/**
 * A spending cap or budget given in USD (an agent's market_mcps[].max_total_usd, a listing's
 * mcpSelections[].max_total_usd, a credential's maxTotalUsdPerRun or budgets, the consent page's
 * values) as whole micro-USD. Money is counted in whole micro-USD, so an amount with more than 6
 * decimals (0.0100001) is refused with 400 validation_failed naming the field: never rounded (a cap
 * read back must be the cap that was given) and never dropped (which would mean no cap at all).
 */
export function wholeMicrosCap(usd: number, field: string, path: string): number {
  const micros = usdToWholeMicros(usd);
  if (micros === null || micros <= 0)
    throw new MarketRuleError(
      400,
      'validation_failed',
      `${field} must be a positive amount of USD in whole micro-USD (at most 6 decimals); ${usd} is not`,
      [{ path, message: 'is not a positive whole number of micro-USD' }],
    );
  return micros;
}
