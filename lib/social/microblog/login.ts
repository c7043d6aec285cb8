/** The microblog web login: password form, then any email confirmation and TOTP challenge the site asks for. */
import type { BufferedResponse } from '../../net/buffered-fetch';
import { isBase32Secret, totp } from '../totp';
import { MicroblogConnection, parseBase } from './connection';
import type { CookieJar } from './cookies';
import { MicroblogError } from './errors';
import { pageErrorCode, parseForms, type HtmlForm } from './html-forms';
import type { MicroblogCredentials, MicroblogSession, MicroblogTransport } from './types';

const SESSION_COOKIE = 'mb_session';
const CSRF_COOKIE = 'mb_csrf';
const MAX_LOGIN_STEPS = 8;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

type LoginStep = 'password' | 'email' | 'totp';

interface LoginIdentity {
  username: string;
  email: string;
  password: string;
  totpSecret: string | undefined;
}

const STEP_FIELD: Record<LoginStep, string> = { password: 'password', email: 'email', totp: 'code' };

function checkCredentials(creds: MicroblogCredentials): LoginIdentity {
  const username = (creds.username ?? '').trim().replace(/^@/, '');
  if (!username) throw new MicroblogError('invalid_credentials', 'Microblog username is missing');
  if (!creds.password)
    throw new MicroblogError('invalid_credentials', `Microblog password for @${username} is missing`);
  const totpSecret = creds.totp_secret?.trim() || undefined;
  if (totpSecret !== undefined && !isBase32Secret(totpSecret)) {
    throw new MicroblogError(
      'totp_invalid',
      `The TOTP secret for @${username} is not a Base32 setup key (at least 16 characters of A-Z and 2-7); a one-time code cannot be used`,
    );
  }
  return { username, email: (creds.email ?? '').trim(), password: creds.password, totpSecret };
}

function loginAnswer(step: LoginStep, identity: LoginIdentity): Record<string, string> {
  if (step === 'password') return { identifier: identity.username, password: identity.password };
  if (step === 'email') {
    if (!identity.email) {
      throw new MicroblogError(
        'invalid_credentials',
        `Microblog asks to confirm the email address of @${identity.username}, but none is configured`,
      );
    }
    return { email: identity.email };
  }
  if (!identity.totpSecret) {
    throw new MicroblogError(
      'totp_required',
      `Microblog account @${identity.username} has two-factor authentication; add its TOTP secret`,
    );
  }
  return { code: totp(identity.totpSecret) };
}

function loginRejection(step: LoginStep, username: string): MicroblogError {
  if (step === 'totp') {
    return new MicroblogError(
      'totp_invalid',
      `Microblog rejected the two-factor code for @${username}; check the TOTP secret and the server clock`,
    );
  }
  if (step === 'email')
    return new MicroblogError(
      'invalid_credentials',
      `Microblog did not accept the email confirmation for @${username}`,
    );
  return new MicroblogError('invalid_credentials', `Microblog rejected the username or password for @${username}`);
}

function loginFailure(response: BufferedResponse, lastStep: LoginStep, username: string): MicroblogError {
  const marker = pageErrorCode(response.body.toString('utf8'));
  if (response.status === 423 || marker === 'locked') {
    return new MicroblogError('locked', `Microblog account @${username} is locked; unlock it on the website`);
  }
  if (marker === 'totp_invalid') return loginRejection('totp', username);
  if (marker === 'email_mismatch') return loginRejection('email', username);
  if (marker === 'invalid_credentials') return loginRejection('password', username);
  if (response.status === 401) return loginRejection(lastStep, username);
  if (response.status === 403)
    return new MicroblogError('upstream', 'Microblog refused the login form (its form token expired or was rejected)');
  return new MicroblogError('upstream', `Microblog login failed with HTTP ${response.status}`);
}

function pendingStep(forms: HtmlForm[]): { step: LoginStep; form: HtmlForm } | undefined {
  for (const step of ['totp', 'email', 'password'] as const) {
    const form = forms.find((candidate) => candidate.inputs.has(STEP_FIELD[step]));
    if (form) return { step, form };
  }
  return undefined;
}

function submitForm(
  connection: MicroblogConnection,
  page: BufferedResponse,
  form: HtmlForm,
  answer: Record<string, string>,
): Promise<BufferedResponse> {
  return connection.send({
    method: 'POST',
    target: new URL(form.action || page.url, page.url),
    form: { ...form.hidden, ...answer },
  });
}

function sessionFrom(jar: CookieJar, username: string): MicroblogSession | undefined {
  const csrf = jar.get(CSRF_COOKIE);
  if (!jar.get(SESSION_COOKIE) || !csrf) return undefined;
  return { username, cookies: jar.snapshot(), csrf, createdAt: Date.now() };
}

/** Signs in through the web login: password form, then any email confirmation and TOTP challenge the site asks for. */
export async function loginMicroblog(
  base: string,
  creds: MicroblogCredentials,
  transport: MicroblogTransport,
): Promise<MicroblogSession> {
  const identity = checkCredentials(creds);
  const connection = new MicroblogConnection(parseBase(base), transport);
  let response = await connection.send({ method: 'GET', target: '/login' });
  let lastStep: LoginStep = 'password';
  const answered = new Set<LoginStep>();
  for (let step = 0; step < MAX_LOGIN_STEPS; step++) {
    if (REDIRECT_STATUSES.has(response.status)) {
      const session = sessionFrom(connection.jar, identity.username);
      if (session) return session;
      response = await connection.send({ method: 'GET', target: connection.redirectTarget(response) });
      continue;
    }
    if (response.status !== 200) throw loginFailure(response, lastStep, identity.username);
    const pending = pendingStep(parseForms(response.body.toString('utf8')));
    if (!pending) throw new MicroblogError('upstream', 'Microblog showed an unexpected page during login');
    if (answered.has(pending.step)) throw loginRejection(pending.step, identity.username);
    const answer = loginAnswer(pending.step, identity);
    lastStep = pending.step;
    answered.add(pending.step);
    response = await submitForm(connection, response, pending.form, answer);
  }
  throw new MicroblogError('upstream', `Microblog login did not finish within ${MAX_LOGIN_STEPS} steps`);
}
