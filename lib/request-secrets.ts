import { seal, unseal } from './crypto';

const MASK = '[redacted]';

/** Cookie values are session secrets: the stored and echoed request keeps only their names. */
export function maskCookies(cookies: unknown): unknown {
  if (typeof cookies === 'string') {
    return cookies
      .split(';')
      .map((part) => part.trim())
      .filter(Boolean)
      .map((part) => `${part.split('=')[0]}=${MASK}`)
      .join('; ');
  }
  if (Array.isArray(cookies)) return cookies.map((c) => (c && typeof c === 'object' ? { ...c, value: MASK } : MASK));
  if (cookies && typeof cookies === 'object') return Object.fromEntries(Object.keys(cookies).map((k) => [k, MASK]));
  return cookies;
}

export function maskSensitiveData(items: { id: string; value: string; domain_pattern?: string }[]) {
  return items.map((item) => ({ ...item, value: MASK }));
}

export interface RequestSecrets {
  cookies?: unknown;
  sensitive_data?: { id: string; value: string; domain_pattern?: string }[];
  /** Inline forum credentials of an automation run. */
  forumCredentials?: unknown;
}

export function sealRequestSecrets(masterKey: Buffer, jobId: string, secrets: RequestSecrets): string {
  return seal(masterKey, JSON.stringify(secrets), `job:${jobId}`);
}

export function unsealRequestSecrets(masterKey: Buffer, jobId: string, sealed: string | null): RequestSecrets {
  return sealed ? (JSON.parse(unseal(masterKey, sealed, `job:${jobId}`)) as RequestSecrets) : {};
}
