/**
 * How a production charge is priced and split, in integer micro-USD.
 *
 *   chargedCount  = min(count, floor(remaining hold / unit price))   (remaining = hold − charged so far)
 *   total         = chargedCount × unit price
 *   commission    = floor(total × rate), rate taken to 6 decimals (parts per million)
 *   revenue       = total − commission
 *
 * Commission is rounded down to the micro-USD and the provider gets the remainder, so the consumer's
 * debit is always exactly provider revenue + commission, with nothing created or lost by rounding.
 * `chargeableWithinLimit` is how many more units of this event the run can still pay for after this
 * charge, and `eventChargeLimitReached` is true when that is 0 (the provider should stop producing).
 */
export interface ChargeSplit {
  chargedCount: number;
  chargeableWithinLimit: number;
  eventChargeLimitReached: boolean;
  totalMicros: number;
  commissionMicros: number;
  providerRevenueMicros: number;
}

export const PPM = 1_000_000;

/** A commission rate (0–1) as parts per million. */
export function ratePpm(rate: number): number {
  if (!Number.isFinite(rate) || rate < 0 || rate > 1)
    throw new Error(`A commission rate is between 0 and 1, got ${rate}`);
  return Math.round(rate * PPM);
}

export function commissionOf(totalMicros: number, commissionPpm: number): number {
  return Number((BigInt(totalMicros) * BigInt(commissionPpm)) / BigInt(PPM));
}

export function splitCharge(input: {
  count: number;
  unitPriceMicros: number;
  remainingMicros: number;
  commissionPpm: number;
}): ChargeSplit {
  const { count, unitPriceMicros, commissionPpm } = input;
  if (!Number.isSafeInteger(unitPriceMicros) || unitPriceMicros <= 0)
    throw new Error('A unit price is a positive whole number of micro-USD');
  const remaining = Math.max(0, input.remainingMicros);
  const affordable = Math.floor(remaining / unitPriceMicros);
  const chargedCount = Math.min(count, affordable);
  const totalMicros = chargedCount * unitPriceMicros;
  const commissionMicros = commissionOf(totalMicros, commissionPpm);
  const chargeableWithinLimit = affordable - chargedCount;
  return {
    chargedCount,
    chargeableWithinLimit,
    eventChargeLimitReached: chargeableWithinLimit === 0,
    totalMicros,
    commissionMicros,
    providerRevenueMicros: totalMicros - commissionMicros,
  };
}
