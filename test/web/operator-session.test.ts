import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { useHarness, type Harness } from '../support/stack/harness';
import { operatorSignInContext, sharedBrowser, watchedContext } from '../support/stack/web-browser';

/** The review queue's operator sign-in ends on the server at sign-out (issue 34, "2. OAuth grants", last point). */
describe('Operator review session', function () {
  this.timeout(120_000);
  let h: Harness;
  let browser: Browser;

  before(async function () {
    h = await useHarness();
    browser = await sharedBrowser();
  });

  it('ends on the server at sign-out: a copy of the cookie taken before is refused after', async function () {
    const context = await watchedContext(browser);
    try {
      await operatorSignInContext(context, h.baseUrl, h.config.adminToken);
      const cookie = (await context.context.cookies()).find((c) => c.name === '__Host-console-operator');
      assert.ok(cookie, 'signed in');
      const queueWith = (value: string) =>
        fetch(`${h.baseUrl}/console/review`, {
          redirect: 'manual',
          headers: { cookie: `__Host-console-operator=${value}` },
        });
      assert.equal((await queueWith(cookie.value)).status, 200, 'the copy works while signed in');
      const stored = await h.db.selectFrom('operator_sessions').selectAll().execute();
      assert.ok(!JSON.stringify(stored).includes(cookie.value), 'only a hash of the token is stored');

      const page = await context.newPage();
      await page.goto(`${h.baseUrl}/console/review`);
      await page.getByRole('button', { name: 'Sign out of the review queue' }).click();
      await page.waitForURL(`${h.baseUrl}/console/review/sign-in`);

      const copy = await queueWith(cookie.value);
      assert.equal(copy.status, 302, 'the copied cookie is refused');
      assert.equal(new URL(copy.headers.get('location') ?? '', h.baseUrl).pathname, '/console/review/sign-in');
      assert.deepEqual(context.consoleErrors, []);
      assert.deepEqual(context.foreignRequests, []);
    } finally {
      await context.close();
    }
  });
});
