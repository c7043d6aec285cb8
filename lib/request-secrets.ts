import { seal, unseal } from './crypto';

/** What a stored or echoed request shows in place of a secret value. */
export const REDACTED = '[redacted]';

/** The record with the values of `fields` (every field when omitted) replaced by REDACTED; the names stay visible. */
export function redactFields<T extends Record<string, unknown>>(record: T, fields?: readonly string[]): T {
  return Object.fromEntries(
    Object.entries(record).map(([name, value]) => [name, !fields || fields.includes(name) ? REDACTED : value]),
  ) as T;
}

/** Cookie values are session secrets: the stored and echoed request keeps only their names. */
export function maskCookies(cookies: unknown): unknown {
  if (typeof cookies === 'string') {
    return cookies
      .split(';')
      .map((part) => part.trim())
      .filter(Boolean)
      .map((part) => `${part.split('=')[0]}=${REDACTED}`)
      .join('; ');
  }
  if (Array.isArray(cookies))
    return cookies.map((c) => (c && typeof c === 'object' ? { ...c, value: REDACTED } : REDACTED));
  if (cookies && typeof cookies === 'object') return redactFields(cookies as Record<string, unknown>);
  return cookies;
}

export function maskSensitiveData(items: { id: string; value: string; domain_pattern?: string }[]) {
  return items.map((item) => ({ ...item, value: REDACTED }));
}

export interface RequestSecrets {
  cookies?: unknown;
  sensitive_data?: { id: string; value: string; domain_pattern?: string }[];
  /** Inline forum credentials of an automation run. */
  forumCredentials?: unknown;
  /** The params of each custom_mcps / market_mcps selection of a tool-using run, by index. */
  custom_mcps_params?: Record<string, string | number | boolean>[];
  market_mcps_params?: Record<string, string | number | boolean>[];
  /** Agent-market runs: the task as the model sees it (a filled template is the provider's private text). */
  task?: string;
  /** Agent-market runs: the provider's private system prompt, added to the runtime's. */
  agent_instructions?: string;
  /** Agent-market runs: the listing's prompt template as written (its words are masked in what the model writes). */
  agent_template?: string;
  /** Agent-market runs: the listing's skills (private to its provider). */
  skills?: unknown;
  /** Agent-market runs: the listing's tool selections with their params (for the tool loop). */
  agent_selections?: unknown;
}

export function sealRequestSecrets(masterKey: Buffer, jobId: string, secrets: RequestSecrets): string {
  return seal(masterKey, JSON.stringify(secrets), `job:${jobId}`);
}

export function unsealRequestSecrets(masterKey: Buffer, jobId: string, sealed: string | null): RequestSecrets {
  return sealed ? (JSON.parse(unseal(masterKey, sealed, `job:${jobId}`)) as RequestSecrets) : {};
}
