/** The one error body every failed request gets: `{ error: { code, message, details?, requestId } }`. */
export interface ErrorDetail {
  /** JSON pointer into the body, or `query.<name>` / `path.<name>` / `header.<name>`. */
  path: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

export const badRequest = (message: string, details?: ErrorDetail[]) =>
  new ApiError(400, 'validation_failed', message, details);
export const unauthorized = (message = 'Missing or invalid API key (send it in the X-API-Key header)') =>
  new ApiError(401, 'unauthorized', message);
export const notFound = (what: string) => new ApiError(404, 'not_found', `${what} not found`);
