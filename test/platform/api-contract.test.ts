import assert from 'node:assert/strict';
import { useHarness, type Harness } from '../support/stack/harness';
import { ScrapeRequest } from '../../lib/schemas/scrape';

function assertErrorBody(response: { status: number; body: any; headers: Headers }, status: number, code: string) {
  assert.equal(response.status, status, JSON.stringify(response.body));
  assert.equal(response.body.error.code, code, JSON.stringify(response.body));
  assert.equal(typeof response.body.error.message, 'string');
  assert.equal(response.body.error.requestId, response.headers.get('x-request-id'));
}

describe('API contract: authentication, errors, validation, pagination, OpenAPI', function () {
  let h: Harness;
  let apiKey: string;
  let userId: string;

  before(async function () {
    this.timeout(180_000);
    h = await useHarness();
    ({ apiKey, userId } = await h.createUser({ creditUsd: 5 }));
  });

  describe('authentication and scoping', function () {
    for (const [method, path] of [
      ['POST', '/api/v1/scrape'],
      ['GET', '/api/v1/scrape/status/7f1c9c3e-7c49-4d36-9d54-2d1a3a3f9a11'],
      ['GET', '/api/v1/logs'],
      ['GET', '/api/v1/transactions'],
    ] as const) {
      it(`${method} ${path} answers 401 without a key and with a wrong key`, async function () {
        assertErrorBody(
          await h.http(method, path, { body: method === 'POST' ? { url: 'https://example.com' } : undefined }),
          401,
          'unauthorized',
        );
        assertErrorBody(
          await h.http(method, path, {
            apiKey: 'sk_live_wrong',
            body: method === 'POST' ? { url: 'https://example.com' } : undefined,
          }),
          401,
          'unauthorized',
        );
      });
    }

    it("answers 404 for another user's job and for an unknown job", async function () {
      const accepted = await h.http('POST', '/api/v1/scrape', { apiKey, body: { url: `${h.site.url}/static` } });
      assert.equal(accepted.status, 202);
      const other = await h.createUser();
      assertErrorBody(
        await h.http('GET', `/api/v1/scrape/status/${accepted.body.jobId}`, { apiKey: other.apiKey }),
        404,
        'not_found',
      );
      assertErrorBody(
        await h.http('GET', '/api/v1/scrape/status/7f1c9c3e-7c49-4d36-9d54-2d1a3a3f9a11', { apiKey }),
        404,
        'not_found',
      );
      const own = await h.http('GET', `/api/v1/scrape/status/${accepted.body.jobId}`, { apiKey });
      assert.equal(own.status, 200);
      assert.equal(own.body.userId, userId);
      await h.db
        .insertInto('system_logs')
        .values([
          { user_id: userId, log_message: "scoping: the owner's line" },
          { user_id: other.userId, log_message: "scoping: the other's line" },
        ])
        .execute();
      const otherLogs = await h.http('GET', '/api/v1/logs?pageSize=100', { apiKey: other.apiKey });
      assert.deepEqual(
        otherLogs.body.logs.map((l: any) => [l.userId, l.logMessage]),
        [[other.userId, "scoping: the other's line"]],
      );
    });

    it('answers 400 for a job id that is not a UUID', async function () {
      const response = await h.http('GET', '/api/v1/scrape/status/not-a-uuid', { apiKey });
      assertErrorBody(response, 400, 'validation_failed');
      assert.equal(response.body.error.details[0].path, 'path.jobId');
    });
  });

  describe('POST /scrape validation', function () {
    const cases: [string, unknown, string][] = [
      ['a missing url', {}, 'body/url'],
      ['a url that is not http(s)', { url: 'ftp://example.com/file' }, 'body/url'],
      ['a url that is not a URL', { url: 'not a url' }, 'body/url'],
      ['an unknown field', { url: 'https://example.com', depth: 3 }, 'body/depth'],
      ['an unknown llm_provider', { url: 'https://example.com', llm_provider: 'openrouter' }, 'body/llm_provider'],
      ['a non-boolean async', { url: 'https://example.com', async: 'yes' }, 'body/async'],
      [
        'a three-letter country',
        { url: 'https://example.com', mobile_proxy_country: 'USA' },
        'body/mobile_proxy_country',
      ],
      [
        'an unknown structured_output type',
        { url: 'https://example.com', structured_output: [{ id: 'a', type: 'date' }] },
        'body/structured_output',
      ],
      [
        'duplicate structured_output ids',
        {
          url: 'https://example.com',
          structured_output: [
            { id: 'a', type: 'string' },
            { id: 'a', type: 'number' },
          ],
        },
        'body/structured_output',
      ],
      [
        'a JSON Schema without an object root',
        { url: 'https://example.com', structured_output: { type: 'string' } },
        'body/structured_output',
      ],
      ['cookies of the wrong type', { url: 'https://example.com', cookies: 42 }, 'body/cookies'],
      ['a cookie item without a name', { url: 'https://example.com', cookies: [{ value: 'x' }] }, 'body/cookies'],
      [
        'a webhook_url at a private literal address',
        { url: 'https://example.com', webhook_url: 'http://10.0.0.8/hook' },
        'body/webhook_url',
      ],
      ['a target at the metadata address', { url: 'http://169.254.169.254/latest/meta-data' }, 'body/url'],
      ['a body that is an array', [], 'body'],
    ];
    for (const [what, body, path] of cases) {
      it(`refuses ${what} with 400 and a detail at ${path}`, async function () {
        const response = await h.http('POST', '/api/v1/scrape', { apiKey, body });
        assertErrorBody(response, 400, 'validation_failed');
        assert.ok(
          response.body.error.details.some((d: any) => d.path.startsWith(path)),
          JSON.stringify(response.body.error.details),
        );
      });
    }

    it('refuses malformed JSON, a missing body, non-JSON and oversize bodies with 4xx', async function () {
      assertErrorBody(
        await h.http('POST', '/api/v1/scrape', {
          apiKey,
          raw: '{"url": ',
          headers: { 'content-type': 'application/json' },
        }),
        400,
        'invalid_json',
      );
      assertErrorBody(await h.http('POST', '/api/v1/scrape', { apiKey }), 400, 'validation_failed');
      assertErrorBody(
        await h.http('POST', '/api/v1/scrape', { apiKey, raw: 'url=x', headers: { 'content-type': 'text/plain' } }),
        415,
        'unsupported_media_type',
      );
      const huge = JSON.stringify({ url: 'https://example.com', system_prompt: 'x'.repeat(2 * 1024 * 1024) });
      assertErrorBody(
        await h.http('POST', '/api/v1/scrape', { apiKey, raw: huge, headers: { 'content-type': 'application/json' } }),
        413,
        'payload_too_large',
      );
    });

    it('never answers 5xx to a barrage of malformed inputs, and creates no job for them', async function () {
      const { apiKey: key, userId: uid } = await h.createUser();
      const jobsOfUser = async () =>
        (await h.db.selectFrom('jobs').select('id').where('user_id', '=', uid).execute()).map((j) => j.id).sort();
      assert.deepEqual(await jobsOfUser(), [], 'a new account has no job');
      const values = [
        null,
        true,
        0,
        -1,
        1e308,
        '',
        ' ',
        '\u0000',
        'x'.repeat(5000),
        [],
        {},
        [{}],
        { a: { b: { c: [] } } },
      ];
      const fields = Object.keys(ScrapeRequest.properties);
      let sent = 0;
      let refused = 0;
      // Some of these bodies are valid (a boolean flag set to true, an empty list): those are accepted, each with its job.
      const acceptedJobs: string[] = [];
      for (const field of fields) {
        for (const value of values) {
          const body = field === 'url' ? { url: value } : { url: 'https://example.com', [field]: value };
          const response = await h.http('POST', '/api/v1/scrape', { apiKey: key, body });
          sent++;
          assert.ok(response.status < 500, `${field}=${JSON.stringify(value).slice(0, 40)} gave ${response.status}`);
          if (response.status >= 400) {
            refused++;
            assert.ok(response.body.error.code, JSON.stringify(response.body));
          } else {
            assert.equal(
              response.status,
              202,
              `${field}=${JSON.stringify(value).slice(0, 40)}: ${JSON.stringify(response.body)}`,
            );
            acceptedJobs.push(response.body.jobId);
          }
        }
      }
      for (const raw of [
        '',
        'null',
        '"string"',
        '[1,2]',
        '{"url":',
        '\u00ff\u00fe',
        '{"url":"https://example.com"}}',
      ]) {
        const response = await h.http('POST', '/api/v1/scrape', {
          apiKey: key,
          raw,
          headers: { 'content-type': 'application/json' },
        });
        assert.ok(response.status >= 400 && response.status < 500, `${JSON.stringify(raw)} gave ${response.status}`);
      }
      for (const path of [
        '/api/v1/scrape/status/%00',
        '/api/v1/scrape/status/' + 'a'.repeat(3000),
        '/api/v1/logs?page=%ff',
        '/api/v1/nope',
      ]) {
        const response = await h.http('GET', path, { apiKey: key });
        assert.ok(response.status >= 400 && response.status < 500, `${path} gave ${response.status}`);
      }
      assert.ok(sent > 100);
      assert.ok(refused > 100, `only ${refused} of ${sent} bodies were refused`);
      // Exactly the accepted requests made jobs: not one refused request left a job behind.
      assert.deepEqual(await jobsOfUser(), acceptedJobs.sort());
    });
  });

  describe('pagination of /logs and /transactions', function () {
    for (const path of ['/api/v1/logs', '/api/v1/transactions']) {
      for (const query of [
        'page=0',
        'page=-1',
        'page=1.5',
        'page=abc',
        'pageSize=0',
        'pageSize=101',
        'pageSize=ten',
        'page=1&page=2',
        'sort=desc',
      ]) {
        it(`GET ${path}?${query} answers 400`, async function () {
          assertErrorBody(await h.http('GET', `${path}?${query}`, { apiKey }), 400, 'validation_failed');
        });
      }
    }

    it('defaults to page 1 of 10 and reports total and totalPages', async function () {
      const { apiKey: key, userId: uid } = await h.createUser();
      await h.db
        .insertInto('system_logs')
        .values(Array.from({ length: 23 }, (_, i) => ({ user_id: uid, log_message: `line ${i}` })))
        .execute();
      const first = await h.http('GET', '/api/v1/logs', { apiKey: key });
      assert.equal(first.status, 200);
      assert.deepEqual(first.body.meta, { page: 1, pageSize: 10, total: 23, totalPages: 3 });
      assert.equal(first.body.logs.length, 10);
      assert.deepEqual(Object.keys(first.body.logs[0]).sort(), ['executedAt', 'id', 'logMessage', 'userId']);
      const last = await h.http('GET', '/api/v1/logs?page=3&pageSize=10', { apiKey: key });
      assert.equal(last.body.logs.length, 3);
      const beyond = await h.http('GET', '/api/v1/logs?page=9', { apiKey: key });
      assert.equal(beyond.status, 200);
      assert.equal(beyond.body.logs.length, 0);
      const big = await h.http('GET', '/api/v1/logs?pageSize=100', { apiKey: key });
      assert.deepEqual(big.body.meta, { page: 1, pageSize: 100, total: 23, totalPages: 1 });
      const seen = new Set([...first.body.logs, ...last.body.logs].map((l: any) => l.id));
      assert.equal(seen.size, 13);
    });

    it('lists transactions with integer ids, a USD cost and the job id', async function () {
      const { apiKey: key } = await h.createUser();
      const accepted = await h.http('POST', '/api/v1/scrape', { apiKey: key, body: { url: `${h.site.url}/static` } });
      await h.waitForJob(key, `/api/v1/scrape/status/${accepted.body.jobId}`);
      const response = await h.http('GET', '/api/v1/transactions?pageSize=5', { apiKey: key });
      assert.deepEqual(response.body.meta, { page: 1, pageSize: 5, total: 1, totalPages: 1 });
      const [tx] = response.body.transactions;
      assert.equal(tx.jobId, accepted.body.jobId);
      assert.ok(Number.isInteger(tx.id));
      assert.equal(typeof tx.cost, 'number');
      assert.equal(tx.result, 'completed');
    });
  });

  describe('hostile bodies and queries: 4xx with the error body, never 5xx', function () {
    const json = { 'content-type': 'application/json' };
    const adminAuth = () => ({ authorization: `Bearer ${h.config.adminToken}` });

    it('refuses 400k nested brackets with 400, and reads no body before authenticating', async function () {
      const deep = '['.repeat(400_000) + ']'.repeat(400_000);
      const refused = await h.http('POST', '/api/v1/scrape', { apiKey, raw: deep, headers: json });
      assertErrorBody(refused, 400, 'validation_failed');
      assert.match(refused.body.error.message, /deeper than 64 levels/);
      assertErrorBody(await h.http('POST', '/api/v1/scrape', { raw: deep, headers: json }), 401, 'unauthorized');
      assertErrorBody(await h.http('POST', '/admin/users', { raw: deep, headers: json }), 401, 'unauthorized');
      assertErrorBody(
        await h.http('POST', '/admin/users', { raw: deep, headers: { ...json, ...adminAuth() } }),
        400,
        'validation_failed',
      );
    });

    it('authenticates before judging the body: anonymous malformed, oversize and non-JSON bodies are 401', async function () {
      for (const [raw, headers] of [
        ['{"url": ', json],
        ['x'.repeat(2 * 1024 * 1024), json],
        ['url=x', { 'content-type': 'text/plain' }],
      ] as const) {
        assertErrorBody(await h.http('POST', '/api/v1/agentscraper', { raw, headers }), 401, 'unauthorized');
        assertErrorBody(await h.http('POST', '/admin/users', { raw, headers }), 401, 'unauthorized');
      }
    });

    it('refuses lone UTF-16 surrogates in strings and keys with 400 naming the field, and creates nothing', async function () {
      const { apiKey: key, userId: uid } = await h.createUser();
      const cases: [string, string, string][] = [
        ['/api/v1/scrape', '{"url":"https://example.com","system_prompt":"\\ud800"}', 'body/system_prompt'],
        ['/api/v1/scrape', '{"url":"https://example.com","system_prompt":"ok \\udfff then"}', 'body/system_prompt'],
        ['/api/v1/agentscraper', '{"task":"\\udbff\\u0041"}', 'body/task'],
        ['/api/v1/scrape', '{"url":"https://example.com","cookies":{"\\ud800":"v"}}', 'body/cookies/\ufffd'],
        [
          '/api/v1/social-accounts',
          '{"platform":"forum","name":"n","credentials":{"x":["\\ud800"]}}',
          'body/credentials/x/0',
        ],
      ];
      for (const [path, raw, field] of cases) {
        const response = await h.http('POST', path, { apiKey: key, raw, headers: json });
        assertErrorBody(response, 400, 'validation_failed');
        assert.equal(response.body.error.details[0].path, field, raw);
        assert.match(response.body.error.details[0].message, /surrogate/);
      }
      const paired = await h.http('POST', '/api/v1/scrape', {
        apiKey: key,
        raw: '{"url":"https://example.com","system_prompt":"\\ud83d\\ude00"}',
        headers: json,
      });
      assert.equal(paired.status, 202, JSON.stringify(paired.body));
      const created = await h.db.selectFrom('jobs').select('id').where('user_id', '=', uid).execute();
      assert.equal(created.length, 1);
    });

    it('refuses page numbers whose offset would overflow with 400', async function () {
      for (const path of [
        '/api/v1/logs',
        '/api/v1/transactions',
        '/api/v1/automations',
        '/api/v1/skills/directory/search?q=pdf&',
      ]) {
        const sep = path.endsWith('&') ? '' : '?';
        for (const page of ['1e20', '9007199254740993', '1000001']) {
          const response = await h.http('GET', `${path}${sep}page=${page}`, { apiKey });
          assertErrorBody(response, 400, 'validation_failed');
          assert.equal(response.body.error.details[0].path, 'query.page');
        }
        const highest = await h.http('GET', `${path}${sep}page=1000000&pageSize=100`, { apiKey });
        assert.equal(highest.status, 200, JSON.stringify(highest.body));
      }
    });
  });

  describe('OpenAPI document and docs page', function () {
    it('serves OpenAPI 3.1 generated from the same schemas ajv uses', async function () {
      const response = await h.http('GET', '/api/v1/openapi.json');
      assert.equal(response.status, 200);
      assert.equal(response.body.openapi, '3.1.0');
      const served = response.body.components.schemas.ScrapeRequest;
      const { $id: _id, ...source } = ScrapeRequest as any;
      assert.deepEqual(served, JSON.parse(JSON.stringify(source)));
      assert.ok(response.body.paths['/scrape'].post.responses['429']);
      assert.ok(response.body.components.schemas.ErrorResponse);
      assert.deepEqual(response.body.components.securitySchemes.ApiKeyAuth, {
        type: 'apiKey',
        in: 'header',
        name: 'X-API-Key',
      });
    });

    it('serves a human docs page that renders the document', async function () {
      const response = await h.http('GET', '/api/v1/docs');
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type')!, /html/);
      assert.match(response.body, /openapi\.json/);
    });
  });

  describe('health', function () {
    it('answers 200 with every check ready', async function () {
      const response = await h.http('GET', '/health');
      assert.equal(response.status, 200);
      assert.deepEqual(response.body, { status: 'ok', checks: { database: true, temporal: true, workers: true } });
    });
  });
});
