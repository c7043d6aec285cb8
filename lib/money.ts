export const MICROS_PER_USD = 1_000_000;

const DECIMAL_NOTATION = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/;

function toScaledDecimal(nonNegative: number): { digits: bigint; exponent: number } {
  const match = DECIMAL_NOTATION.exec(String(nonNegative));
  if (!match) throw new Error(`Cannot read ${nonNegative} as a decimal number`);
  const [, integerPart, fractionPart = '', exponentPart = '0'] = match;
  return {
    digits: BigInt(integerPart + fractionPart),
    exponent: Number(exponentPart) - fractionPart.length,
  };
}

/**
 * Converts a USD amount to integer micro-USD, rounding half away from zero.
 * Rounding works on the shortest decimal form of `usd` (what `String(usd)` prints),
 * so 0.0000005 becomes 1 and 1.0000005 becomes 1_000_001 despite binary floating point.
 */
export function usdToMicros(usd: number): number {
  if (!Number.isFinite(usd)) throw new Error(`usdToMicros needs a finite amount of USD, got ${usd}`);
  const { digits, exponent } = toScaledDecimal(Math.abs(usd));
  const shift = exponent + 6;
  let micros: bigint;
  if (shift >= 0) {
    micros = digits * 10n ** BigInt(shift);
  } else {
    const divisor = 10n ** BigInt(-shift);
    micros = digits / divisor + ((digits % divisor) * 2n >= divisor ? 1n : 0n);
  }
  const magnitude = Number(micros);
  if (!Number.isSafeInteger(magnitude)) throw new Error(`usdToMicros: ${usd} USD is too large to count in micro-USD`);
  if (magnitude === 0) return 0;
  return usd < 0 ? -magnitude : magnitude;
}

export function microsToUsd(micros: number): number {
  if (!Number.isSafeInteger(micros)) throw new Error(`microsToUsd needs an integer amount of micro-USD, got ${micros}`);
  return micros / MICROS_PER_USD;
}

/**
 * The USD amount as integer micro-USD when it is a whole number of micro-USD (at most 6 decimals,
 * e.g. 1.5 or 0.000001), else null (1e-7, 0.0000015). Amounts that move money are never rounded.
 */
export function usdToWholeMicros(usd: number): number | null {
  if (!Number.isFinite(usd)) return null;
  let micros: number;
  try {
    micros = usdToMicros(usd);
  } catch {
    return null;
  }
  return micros / MICROS_PER_USD === usd ? micros : null;
}

/**
 * A stored cap in USD as whole micro-USD, rounded down (never up, never dropped): a cap stored before
 * caps were checked to whole micro-USD (e.g. 0.0100001) still bounds what is spent, at 10_000.
 * Null for what is not a finite non-negative amount.
 */
export function usdCapToMicrosFloor(usd: number): number | null {
  if (!Number.isFinite(usd) || usd < 0) return null;
  const whole = usdToWholeMicros(usd);
  if (whole !== null) return whole;
  const { digits, exponent } = toScaledDecimal(usd);
  const shift = exponent + 6;
  const micros = shift >= 0 ? digits * 10n ** BigInt(shift) : digits / 10n ** BigInt(-shift);
  const floored = Number(micros);
  return Number.isSafeInteger(floored) ? floored : null;
}
