/**
 * The microblog (X-style) adapter: the site's web login (password, email confirmation, TOTP) kept as a
 * sealable cookie session, and a JSON API client (read, post, reply, like, repost) with writes spaced and
 * relogin on 401, every request through the SSRF guard. Modules: types (public shapes), client, login,
 * connection (HTTP, cookies, 429 waits), html-forms (the login pages), answers (reading API answers),
 * input (checks), cookies, errors.
 */
export { createMicroblogClient, validateMicroblogCredentials } from './client';
export { MicroblogError, type MicroblogErrorCode } from './errors';
export { MICROBLOG_MAX_POST_LENGTH } from './input';
export { loginMicroblog } from './login';
export type {
  MicroblogClient,
  MicroblogClientOptions,
  MicroblogCredentials,
  MicroblogPost,
  MicroblogPostRef,
  MicroblogProfile,
  MicroblogSession,
  MicroblogThread,
  MicroblogTransport,
  MicroblogValidation,
} from './types';
