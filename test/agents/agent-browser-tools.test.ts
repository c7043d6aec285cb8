import assert from 'node:assert/strict';

import type { BrowserContext, BrowserContextOptions } from 'playwright-core';

import {
  BrowserSession,
  contextOptionsFromCheckpoint,
  type SessionCheckpoint,
} from '../../activities/agent/browser/session';
import { BROWSER_TOOLS, executeAction, toolsFor, type ActionResult } from '../../activities/agent/browser/tools';
import { observe, renderObservation, type Observation } from '../../activities/agent/browser/observation';
import {
  hostMatchesDomainPattern,
  maskSecrets,
  resolvePlaceholders,
  type SensitiveItem,
} from '../../activities/agent/sensitive-data';
import { guardContext, type ContextGuard } from '../../activities/browser/guarded-routing';
import { createBrowserPool, type BrowserPool } from '../../activities/browser/pool';
import { parseNetworkAllowlist } from '../../lib/net/ssrf';
import {
  AGENT_GOLDEN_TICKET,
  AGENT_LOGIN,
  AGENT_SPA_REVEALED,
  AGENT_TAB_TARGET_TEXT,
  startFixtureSite,
  type FixtureSite,
} from '../support/fakes/fixture-site';

const SECRETS: SensitiveItem[] = [
  { id: 'password', value: AGENT_LOGIN.password, domain_pattern: '127.0.0.1' },
  { id: 'nickname', value: 'Zebra-Quartz-77', domain_pattern: '*.127.0.0.1' },
];
const OBSERVE = { maxChars: 8_000, includeScreenshot: false, detail: 'auto' } as const;
const MASK_COLOR = [255, 0, 255];

function indexOf(observation: Observation, predicate: (element: Observation['elements'][number]) => boolean): number {
  const element = observation.elements.find(predicate);
  assert.ok(element, `no matching element in:\n${observation.rendered}`);
  return element.index;
}

function byText(text: string) {
  return (element: Observation['elements'][number]) => element.text === text;
}

function byName(name: string) {
  return (element: Observation['elements'][number]) => element.attributes.name === name;
}

function assertOk(result: ActionResult): ActionResult {
  assert.ok(result.ok, result.message);
  return result;
}

describe('agent browser tools', function () {
  this.timeout(60_000);

  const policy = parseNetworkAllowlist('127.0.0.1,localhost');
  let site: FixtureSite;
  let pool: BrowserPool;

  before(async () => {
    site = await startFixtureSite();
    pool = createBrowserPool({ maxContexts: 3 });
  });

  after(async () => {
    await pool?.close();
    await site?.close();
  });

  function withGuardedContext<T>(
    options: BrowserContextOptions,
    fn: (context: BrowserContext, guard: ContextGuard) => Promise<T>,
  ): Promise<T> {
    return pool.withContext(options, async (context) => fn(context, await guardContext(context, { policy })));
  }

  async function withSession<T>(fn: (session: BrowserSession) => Promise<T>, sensitiveData = SECRETS): Promise<T> {
    return withGuardedContext({}, async (context, guard) => {
      const session = await BrowserSession.open(context, { sensitiveData, guard });
      try {
        return await fn(session);
      } finally {
        await session.close();
      }
    });
  }

  async function pixelAt(base64Png: string, x: number, y: number): Promise<number[]> {
    return pool.withContext({}, async (context) => {
      const page = await context.newPage();
      return page.evaluate(
        async ({ src, x: px, y: py }) => {
          const image = new Image();
          image.src = src;
          await image.decode();
          const canvas = document.createElement('canvas');
          canvas.width = image.width;
          canvas.height = image.height;
          const context2d = canvas.getContext('2d')!;
          context2d.drawImage(image, 0, 0);
          return Array.from(context2d.getImageData(px, py, 1, 1).data.slice(0, 3));
        },
        { src: `data:image/png;base64,${base64Png}`, x: Math.round(x), y: Math.round(y) },
      );
    });
  }

  it('observes interactive elements with stable indices in document order', async () => {
    await withSession(async (session) => {
      assertOk(await executeAction(session, { name: 'navigate', args: { url: `${site.url}/agent/form` } }));
      const observation = await observe(session, OBSERVE);
      assert.equal(observation.url, `${site.url}/agent/form`);
      assert.equal(observation.title, 'Order form');
      assert.deepEqual(observation.tabs, [
        { index: 0, title: 'Order form', url: `${site.url}/agent/form`, active: true },
      ]);
      assert.deepEqual(
        observation.elements.map((element) => [element.index, element.tag]),
        [
          [1, 'select'],
          [2, 'input'],
          [3, 'button'],
        ],
      );
      assert.equal(observation.elements[0].attributes.value, 'basic');
      assert.equal(observation.elements[1].attributes.placeholder, 'Your name');
      assert.equal(observation.elements[2].text, 'Place order');
      assert.ok(observation.readable);

      const stamped = await session
        .currentPage()
        .locator('[data-agent-index]')
        .evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-agent-index')));
      assert.deepEqual(stamped, ['1', '2', '3']);

      const lines = observation.rendered.split('\n');
      assert.equal(lines[0], `URL: ${site.url}/agent/form`);
      assert.equal(lines[1], 'Title: Order form');
      assert.equal(lines[2], 'Tabs: [0] Order form (active)');
      assert.ok(
        lines.includes(
          '[1] <select name="plan" label="Plan"> options: *Basic [basic]*, Pro [pro], Enterprise [enterprise]',
        ),
        observation.rendered,
      );
      assert.ok(
        lines.includes('[2] <input type="text" name="name" placeholder="Your name" label="Name">'),
        observation.rendered,
      );
      assert.ok(lines.includes('[3] <button type="submit">Place order</button>'), observation.rendered);
      assert.ok(observation.rendered.includes('Page text:\nOrder'), observation.rendered);

      assertOk(await executeAction(session, { name: 'navigate', args: { url: `${site.url}/agent/list?page=1` } }));
      const list = await observe(session, OBSERVE);
      assert.ok(list.rendered.includes('[1] <a href="/agent/list?page=2">Next page</a>'), list.rendered);
      assert.equal(await session.currentPage().locator('[data-agent-index]').count(), 1);
    });
  });

  it('fits the rendered observation into maxChars with elements first', async () => {
    const elements = Array.from({ length: 50 }, (_, i) => ({
      index: i + 1,
      tag: 'a',
      text: `Link number ${i + 1}`,
      attributes: { href: `/l/${i + 1}` },
    }));
    const view = {
      url: 'http://example.test/',
      title: 'Many',
      tabs: [{ index: 0, title: 'Many', url: 'http://example.test/', active: true }],
      elements,
      text: 'word '.repeat(2_000),
      readable: true,
    };
    const rendered = renderObservation(view, 1_500);
    assert.ok(rendered.length <= 1_500, String(rendered.length));
    assert.ok(rendered.includes('[1] <a href="/l/1">Link number 1</a>'));
    assert.match(rendered, /… \d+ more interactive elements not shown/);
    assert.match(rendered, /… \[page text truncated: showing \d+ of 10000 characters\]$/);
    assert.ok(rendered.indexOf('Interactive elements:') < rendered.indexOf('Page text:'));
  });

  it('clicks through the pagination to the answer on page 3', async () => {
    await withSession(async (session) => {
      assertOk(await executeAction(session, { name: 'navigate', args: { url: `${site.url}/agent/list?page=1` } }));
      for (const page of [2, 3]) {
        const observation = await observe(session, OBSERVE);
        assert.ok(!observation.text.includes(AGENT_GOLDEN_TICKET));
        const result = assertOk(
          await executeAction(session, { name: 'click', args: { index: indexOf(observation, byText('Next page')) } }),
        );
        assert.equal(result.navigated, true);
        assert.match(
          result.message,
          new RegExp(
            `^clicked \\[\\d\\] <a> 'Next page'; now at ${site.url.replace(/\./g, '\\.')}/agent/list\\?page=${page}`,
          ),
        );
      }
      const last = await observe(session, OBSERVE);
      assert.equal(last.url, `${site.url}/agent/list?page=3`);
      assert.ok(last.text.includes(AGENT_GOLDEN_TICKET));
      assert.ok(!last.elements.some(byText('Next page')));
    });
  });

  it('fills a secret only on a host its domain pattern allows and never shows it', async () => {
    await withSession(async (session) => {
      const otherHostUrl = `${site.url.replace('127.0.0.1', 'localhost')}/agent/login`;
      assertOk(await executeAction(session, { name: 'navigate', args: { url: otherHostUrl } }));
      let observation = await observe(session, OBSERVE);
      const refused = await executeAction(session, {
        name: 'type',
        args: { index: indexOf(observation, byName('password')), text: '<secret>password</secret>' },
      });
      assert.equal(refused.ok, false);
      assert.match(refused.message, /<secret>password<\/secret> may not be used on localhost/);
      assert.ok(!refused.message.includes(AGENT_LOGIN.password));
      assert.equal(await session.currentPage().locator('input[name=password]').inputValue(), '');

      assertOk(await executeAction(session, { name: 'navigate', args: { url: `${site.url}/agent/login` } }));
      observation = await observe(session, OBSERVE);
      assertOk(
        await executeAction(session, {
          name: 'type',
          args: { index: indexOf(observation, byName('username')), text: AGENT_LOGIN.username },
        }),
      );
      const typed = assertOk(
        await executeAction(session, {
          name: 'type',
          args: { index: indexOf(observation, byName('password')), text: '<secret>password</secret>' },
        }),
      );
      assert.ok(typed.message.includes('<secret>password</secret>'));
      assert.ok(!typed.message.includes(AGENT_LOGIN.password));
      assert.equal(await session.currentPage().locator('input[name=password]').inputValue(), AGENT_LOGIN.password);

      const filled = await observe(session, { maxChars: 8_000, includeScreenshot: true, detail: 'high' });
      assert.ok(!JSON.stringify({ ...filled, screenshot: undefined }).includes(AGENT_LOGIN.password));
      assert.equal(filled.elements.find(byName('password'))?.attributes.value, '<secret>password</secret>');
      assert.ok(filled.rendered.includes('value="<secret>password</secret>"'), filled.rendered);
      assert.ok(filled.rendered.includes(`value="${AGENT_LOGIN.username}"`), filled.rendered);
      assert.ok(filled.screenshot);
      assert.equal(filled.screenshot.mimeType, 'image/png');
      assert.ok(filled.screenshot.maskedElements >= 1);
      const box = await session.currentPage().locator('input[name=password]').boundingBox();
      assert.ok(box);
      assert.deepEqual(
        await pixelAt(filled.screenshot.base64, box.x + box.width / 2, box.y + box.height / 2),
        MASK_COLOR,
      );
      const usernameBox = (await session.currentPage().locator('input[name=username]').boundingBox())!;
      assert.notDeepEqual(
        await pixelAt(filled.screenshot.base64, usernameBox.x + 4, usernameBox.y + usernameBox.height / 2),
        MASK_COLOR,
      );

      const lowDetail = await observe(session, { maxChars: 8_000, includeScreenshot: true, detail: 'low' });
      assert.equal(lowDetail.screenshot?.mimeType, 'image/jpeg');

      const submitted = assertOk(
        await executeAction(session, { name: 'click', args: { index: indexOf(filled, byText('Sign in')) } }),
      );
      assert.equal(submitted.navigated, true);
      const account = await observe(session, OBSERVE);
      assert.equal(account.url, `${site.url}/agent/account`);
      assert.ok(account.text.includes('Welcome back, alice'), account.rendered);
    });
  });

  it('hides a secret typed into a plain text input and masks it wherever the page echoes it', async () => {
    await withSession(async (session) => {
      assertOk(await executeAction(session, { name: 'navigate', args: { url: `${site.url}/agent/form` } }));
      const form = await observe(session, OBSERVE);
      assertOk(
        await executeAction(session, {
          name: 'type',
          args: { index: indexOf(form, byName('name')), text: '<secret>nickname</secret>' },
        }),
      );
      await session
        .currentPage()
        .evaluate(() => document.querySelector('input[name=name]')?.removeAttribute('data-agent-secret'));
      const filled = await observe(session, { ...OBSERVE, includeScreenshot: true });
      assert.ok(!filled.rendered.includes('Zebra-Quartz-77'), filled.rendered);
      assert.equal(filled.elements.find(byName('name'))?.attributes.value, '<secret>nickname</secret>');
      assert.equal(filled.screenshot?.maskedElements, 1);

      assertOk(
        await executeAction(session, { name: 'click', args: { index: indexOf(filled, byText('Place order')) } }),
      );
      const echoed = await observe(session, OBSERVE);
      assert.ok(echoed.text.includes('Order received: plan=basic name=<secret>nickname</secret>'), echoed.rendered);
      assert.ok(!JSON.stringify(echoed).includes('Zebra-Quartz-77'));
    });
  });

  it('selects an option by label and submits the form', async () => {
    await withSession(async (session) => {
      assertOk(await executeAction(session, { name: 'navigate', args: { url: `${site.url}/agent/form` } }));
      const form = await observe(session, OBSERVE);
      const planIndex = indexOf(form, byName('plan'));
      const missing = await executeAction(session, {
        name: 'select_option',
        args: { index: planIndex, value: 'platinum' },
      });
      assert.equal(missing.ok, false);
      assert.match(missing.message, /no option 'platinum'.*'Basic', 'Pro', 'Enterprise'/);
      const selected = assertOk(
        await executeAction(session, { name: 'select_option', args: { index: planIndex, value: 'Pro' } }),
      );
      assert.match(selected.message, /^selected 'Pro' in \[1\] <select>/);
      assert.equal(selected.navigated, false);
      const afterSelect = await observe(session, OBSERVE);
      assert.ok(
        afterSelect.rendered.includes('options: Basic [basic], *Pro [pro]*, Enterprise [enterprise]'),
        afterSelect.rendered,
      );
      assert.equal(afterSelect.elements.find(byName('plan'))?.attributes.value, 'pro');

      const typed = assertOk(
        await executeAction(session, {
          name: 'type',
          args: { index: indexOf(afterSelect, byName('name')), text: 'Bob', submit: true },
        }),
      );
      assert.equal(typed.navigated, true);
      const receipt = await observe(session, OBSERVE);
      assert.ok(receipt.text.includes('Order received: plan=pro name=Bob'), receipt.rendered);
    });
  });

  it('switches to a tab opened by a target=_blank link or window.open', async () => {
    await withSession(async (session) => {
      assertOk(await executeAction(session, { name: 'navigate', args: { url: `${site.url}/agent/tabs` } }));
      const tabsPage = await observe(session, OBSERVE);
      const opened = assertOk(
        await executeAction(session, {
          name: 'click',
          args: { index: indexOf(tabsPage, byText('Open the other tab')) },
        }),
      );
      assert.equal(opened.newTab, true);
      assert.match(opened.message, /opened a new tab \[1\], now the current tab, at .*\/agent\/tab-target/);
      const other = await observe(session, OBSERVE);
      assert.ok(other.text.includes(AGENT_TAB_TARGET_TEXT));
      assert.deepEqual(
        other.tabs.map((tab) => [tab.index, tab.active]),
        [
          [0, false],
          [1, true],
        ],
      );
      assert.ok(other.rendered.includes('Tabs: [0] Tabs | [1] Other tab (active)'), other.rendered);

      assertOk(await executeAction(session, { name: 'switch_tab', args: { index: 0 } }));
      const back = await observe(session, OBSERVE);
      assert.equal(back.url, `${site.url}/agent/tabs`);
      const scripted = assertOk(
        await executeAction(session, { name: 'click', args: { index: indexOf(back, byText('Open with script')) } }),
      );
      assert.equal(scripted.newTab, true);
      assert.equal(session.currentPage().url(), `${site.url}/agent/tab-target?via=script`);
      assert.equal(session.activeTabIndex(), 2);

      const missingTab = await executeAction(session, { name: 'switch_tab', args: { index: 7 } });
      assert.equal(missingTab.ok, false);
    });
  });

  it('clicks a script-rendered button and sees the revealed text', async () => {
    await withSession(async (session) => {
      assertOk(await executeAction(session, { name: 'navigate', args: { url: `${site.url}/agent/spa` } }));
      const before = await observe(session, OBSERVE);
      assert.ok(!before.text.includes(AGENT_SPA_REVEALED));
      const clicked = assertOk(
        await executeAction(session, { name: 'click', args: { index: indexOf(before, byText('Show details')) } }),
      );
      assert.equal(clicked.navigated, false);
      const after = await observe(session, OBSERVE);
      assert.ok(after.text.includes(AGENT_SPA_REVEALED));
    });
  });

  it('reports bad actions as failures instead of throwing', async () => {
    await withSession(async (session) => {
      assertOk(await executeAction(session, { name: 'navigate', args: { url: `${site.url}/agent/list?page=1` } }));
      await observe(session, OBSERVE);
      const cases: Array<[string, Record<string, unknown>, RegExp]> = [
        ['click', { index: 99 }, /no element \[99\]/],
        ['click', { index: 'x' }, /"index" must be an integer/],
        ['navigate', { url: 'file:///etc/passwd' }, /only http and https/],
        ['navigate', { url: `${site.privateUrl}/internal` }, /blocked by the network policy/],
        ['press_key', { key: 'NoSuchKey' }, /Unknown key/],
        ['go_back', {}, /previous page|now at/],
        ['fly', {}, /unknown action "fly"/],
        ['done', { success: true }, /answered by the agent loop/],
      ];
      for (const [name, args, expected] of cases) {
        const result = await executeAction(session, { name, args });
        assert.match(result.message, expected, `${name}: ${result.message}`);
        if (name !== 'go_back') assert.equal(result.ok, false, `${name} should fail`);
      }
      assert.equal(site.privateHits(), 0);

      const scrolled = assertOk(await executeAction(session, { name: 'scroll', args: { direction: 'down' } }));
      assert.match(scrolled.message, /^scrolled down 1 page/);
      assertOk(await executeAction(session, { name: 'wait', args: { seconds: 0.1 } }));
      assert.equal((await executeAction(session, { name: 'screenshot', args: {} })).screenshotRequested, true);
    });
  });

  it('offers the screenshot tool only in auto vision mode', () => {
    const names = (vision: 'auto' | 'visual' | 'text_only') =>
      toolsFor({ vision }).map((definition) => definition.function.name);
    assert.ok(!names('text_only').includes('screenshot'));
    assert.ok(!names('visual').includes('screenshot'));
    assert.ok(names('auto').includes('screenshot'));
    assert.deepEqual(
      names('auto'),
      BROWSER_TOOLS.map((definition) => definition.function.name),
    );
    for (const name of [
      'navigate',
      'click',
      'type',
      'select_option',
      'press_key',
      'scroll',
      'go_back',
      'wait',
      'switch_tab',
      'open_tab',
      'extract',
      'done',
    ]) {
      assert.ok(names('text_only').includes(name as never), name);
    }
    for (const definition of BROWSER_TOOLS) {
      assert.equal(definition.type, 'function');
      assert.equal((definition.function.parameters as { type: string }).type, 'object');
    }
  });

  it('restores a checkpoint in a new context with the login cookie and URL', async () => {
    const checkpoint: SessionCheckpoint = await withSession(async (session) => {
      assertOk(await executeAction(session, { name: 'navigate', args: { url: `${site.url}/agent/login` } }));
      const login = await observe(session, OBSERVE);
      assertOk(
        await executeAction(session, {
          name: 'type',
          args: { index: indexOf(login, byName('username')), text: AGENT_LOGIN.username },
        }),
      );
      assertOk(
        await executeAction(session, {
          name: 'type',
          args: { index: indexOf(login, byName('password')), text: '<secret>password</secret>', submit: true },
        }),
      );
      assert.equal(session.currentPage().url(), `${site.url}/agent/account`);
      await session.currentPage().evaluate(() => localStorage.setItem('agent-pref', 'compact'));
      return session.checkpoint();
    });
    assert.equal(checkpoint.url, `${site.url}/agent/account`);
    assert.ok(
      checkpoint.storageState.cookies.some((cookie) => cookie.name === 'agent_session' && cookie.value === 'ok'),
    );
    const portable = JSON.parse(JSON.stringify(checkpoint)) as SessionCheckpoint;

    await withGuardedContext(contextOptionsFromCheckpoint(portable), async (context) => {
      const session = await BrowserSession.restore(context, portable, { sensitiveData: SECRETS });
      const observation = await observe(session, OBSERVE);
      assert.equal(observation.url, `${site.url}/agent/account`);
      assert.ok(observation.text.includes('Welcome back, alice'), observation.rendered);
      assert.equal(await session.currentPage().evaluate(() => localStorage.getItem('agent-pref')), 'compact');
    });

    await withGuardedContext({}, async (context) => {
      const session = await BrowserSession.restore(context, portable, { sensitiveData: SECRETS });
      const observation = await observe(session, OBSERVE);
      assert.ok(observation.text.includes('Welcome back, alice'), observation.rendered);
      assert.equal(await session.currentPage().evaluate(() => localStorage.getItem('agent-pref')), 'compact');
    });
  });

  it('throws once the context is closed', async () => {
    let session: BrowserSession | undefined;
    await withSession(async (opened) => {
      session = opened;
    });
    await assert.rejects(
      executeAction(session!, { name: 'navigate', args: { url: `${site.url}/agent/list` } }),
      /has been closed/,
    );
  });
});

describe('agent sensitive data', () => {
  it('matches domain patterns by host, ignoring scheme and port', () => {
    assert.ok(hostMatchesDomainPattern('example.com', '*.example.com'));
    assert.ok(hostMatchesDomainPattern('a.b.example.com', '*.example.com'));
    assert.ok(!hostMatchesDomainPattern('badexample.com', '*.example.com'));
    assert.ok(hostMatchesDomainPattern('example.com', 'example.com'));
    assert.ok(!hostMatchesDomainPattern('www.example.com', 'example.com'));
    assert.ok(hostMatchesDomainPattern('127.0.0.1', '127.0.0.1'));
    assert.ok(hostMatchesDomainPattern('example.com', 'https://example.com:8443/login'));
    assert.ok(!hostMatchesDomainPattern('localhost', '127.0.0.1'));
    assert.ok(hostMatchesDomainPattern('anything.test', '*'));
  });

  it('resolves placeholders only on matching pages and masks values everywhere', () => {
    const items: SensitiveItem[] = [
      { id: 'pw', value: 'p@ss word$&', domain_pattern: '*.example.com' },
      { id: 'token', value: 'tok-123' },
    ];
    assert.deepEqual(resolvePlaceholders('<secret>pw</secret>!', items, 'https://login.example.com:8443/x'), {
      text: 'p@ss word$&!',
      secretIds: ['pw'],
    });
    assert.deepEqual(resolvePlaceholders('<secret>token</secret>', items, 'http://anywhere.test/'), {
      text: 'tok-123',
      secretIds: ['token'],
    });
    assert.deepEqual(resolvePlaceholders('plain', items, 'about:blank'), { text: 'plain', secretIds: [] });
    for (const [text, url, pattern] of [
      ['<secret>pw</secret>', 'https://evil.test/', /<secret>pw<\/secret> may not be used on evil\.test/],
      [
        '<secret>nope</secret>',
        'https://www.example.com/',
        /Unknown secret placeholder <secret>nope<\/secret>; available secret ids: pw, token/,
      ],
      ['<secret>token</secret>', 'about:blank', /only be typed into a web page/],
    ] as const) {
      const resolution = resolvePlaceholders(text, items, url);
      assert.ok('error' in resolution && pattern.test(resolution.error), JSON.stringify(resolution));
      assert.ok(!JSON.stringify(resolution).includes('p@ss'));
    }
    assert.equal(
      maskSecrets('a p@ss word$& b p%40ss%20word%24%26 c p%40ss+word%24%26 d tok-123', items),
      'a <secret>pw</secret> b <secret>pw</secret> c <secret>pw</secret> d <secret>token</secret>',
    );
  });
});
