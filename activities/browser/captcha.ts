import type { Page } from 'playwright-core';
import type { Db } from '../../db/connect';
import { recordUsage } from '../../db/repos/job-usage';
import { appendJobLog } from '../../db/repos/jobs';
import { CAPTCHA_MICROS_PER_SOLVE } from '../../lib/billing/pricing';
import { applyCaptchaToken, detectCaptcha } from './captcha-page';
import { solveCaptcha, type CaptchaSolverConfig } from './captcha-solver';
import { attemptKey, withHeartbeat } from '../heartbeat';

/**
 * The one way a job's page gets its captcha solved (scrape renders and agent sessions): when the page shows a widget,
 * the solver solves it, the solve is recorded as usage at once (under `usageKey`), and the token is applied.
 * Returns whether a captcha was solved; a solver failure is thrown as CaptchaSolveError for the caller to judge.
 */
export async function solvePageCaptcha(
  deps: { db: Db; captcha: CaptchaSolverConfig | null },
  jobId: string,
  page: Page,
  usageKey: string,
): Promise<boolean> {
  const { db, captcha } = deps;
  if (!captcha) return false;
  const challenge = await detectCaptcha(page);
  if (!challenge) return false;
  await appendJobLog(db, jobId, `solving a ${challenge.kind} captcha`);
  const token = await withHeartbeat(() => solveCaptcha(captcha, challenge));
  await recordUsage(db, {
    jobId,
    usageKey: attemptKey(jobId, usageKey),
    kind: 'captcha',
    quantity: 1,
    costMicros: CAPTCHA_MICROS_PER_SOLVE,
  });
  await applyCaptchaToken(page, challenge, token);
  await appendJobLog(db, jobId, 'captcha solved');
  return true;
}
