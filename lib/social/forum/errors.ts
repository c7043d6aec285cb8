export type ForumErrorCode =
  'invalid_credentials' | 'forbidden' | 'not_found' | 'rate_limited' | 'bad_request' | 'upstream';

export class ForumError extends Error {
  readonly code: ForumErrorCode;
  readonly status?: number;
  readonly retryAfterSeconds?: number;

  constructor(
    code: ForumErrorCode,
    message: string,
    details: { status?: number; retryAfterSeconds?: number; cause?: unknown } = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'ForumError';
    this.code = code;
    if (details.status !== undefined) this.status = details.status;
    if (details.retryAfterSeconds !== undefined) this.retryAfterSeconds = details.retryAfterSeconds;
  }
}
