/** A market rule was broken: the API answers `status` with `code` (the rule's name). */
export class MarketRuleError extends Error {
  constructor(
    readonly status: 400 | 403 | 404 | 409 | 410,
    readonly code: string,
    message: string,
    readonly details?: { path: string; message: string }[],
  ) {
    super(message);
  }
}

export const ruleBroken = (code: string, message: string, path?: string) =>
  new MarketRuleError(400, code, message, path ? [{ path, message }] : undefined);
