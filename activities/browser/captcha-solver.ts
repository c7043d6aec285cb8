/**
 * Captcha solver adapter speaking the widely used 2captcha-style HTTP API
 * (`POST /in.php` to submit, `GET /res.php?action=get` to poll). The solver is operator
 * infrastructure configured by CAPTCHA_SOLVER_URL / CAPTCHA_SOLVER_KEY.
 */
export type CaptchaKind = 'recaptcha' | 'hcaptcha' | 'turnstile';

export interface CaptchaChallenge {
  kind: CaptchaKind;
  siteKey: string;
  pageUrl: string;
}

export interface CaptchaSolverConfig {
  baseURL: string;
  apiKey: string;
  pollIntervalMs?: number;
  timeoutMs?: number;
}

export class CaptchaSolveError extends Error {}

const METHOD: Record<CaptchaKind, { method: string; keyField: string }> = {
  recaptcha: { method: 'userrecaptcha', keyField: 'googlekey' },
  hcaptcha: { method: 'hcaptcha', keyField: 'sitekey' },
  turnstile: { method: 'turnstile', keyField: 'sitekey' },
};

interface SolverAnswer {
  status: number;
  request: string;
}

async function call(url: string, init?: RequestInit): Promise<SolverAnswer> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  if (!response.ok) throw new CaptchaSolveError(`captcha solver answered HTTP ${response.status}`);
  return (await response.json()) as SolverAnswer;
}

export async function solveCaptcha(config: CaptchaSolverConfig, challenge: CaptchaChallenge): Promise<string> {
  const { method, keyField } = METHOD[challenge.kind];
  const form = new URLSearchParams({
    key: config.apiKey,
    method,
    [keyField]: challenge.siteKey,
    pageurl: challenge.pageUrl,
    json: '1',
  });
  const submitted = await call(`${config.baseURL}/in.php`, { method: 'POST', body: form });
  if (submitted.status !== 1) throw new CaptchaSolveError(`captcha solver refused the task: ${submitted.request}`);
  const deadline = Date.now() + (config.timeoutMs ?? 180_000);
  const poll = new URLSearchParams({ key: config.apiKey, action: 'get', id: submitted.request, json: '1' });
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, config.pollIntervalMs ?? 5_000));
    const answer = await call(`${config.baseURL}/res.php?${poll}`);
    if (answer.status === 1) return answer.request;
    if (answer.request !== 'CAPCHA_NOT_READY') throw new CaptchaSolveError(`captcha solver failed: ${answer.request}`);
  }
  throw new CaptchaSolveError('captcha solver did not answer in time');
}
