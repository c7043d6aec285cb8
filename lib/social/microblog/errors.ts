export type MicroblogErrorCode =
  | 'invalid_credentials'
  | 'totp_required'
  | 'totp_invalid'
  | 'locked'
  | 'rate_limited'
  | 'not_found'
  | 'bad_request'
  | 'upstream';

export class MicroblogError extends Error {
  readonly code: MicroblogErrorCode;
  /** Set on `rate_limited` when the site said how long to wait. */
  readonly retryAfterMs: number | undefined;
  /** The site's own error code, when it gave one (e.g. `already_reposted`). */
  readonly upstreamCode: string | undefined;

  constructor(
    code: MicroblogErrorCode,
    message: string,
    options: { cause?: unknown; retryAfterMs?: number; upstreamCode?: string } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'MicroblogError';
    this.code = code;
    this.retryAfterMs = options.retryAfterMs;
    this.upstreamCode = options.upstreamCode;
  }
}
