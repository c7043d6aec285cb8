import assert from 'node:assert/strict';
import fc from 'fast-check';
import { stringify as toYaml } from 'yaml';
import { canonicalJson } from '../../lib/market/canonical-json';
import { canonicalSourceForm, normaliseSourceUrl, sourceFingerprint, toolListHash } from '../../lib/market/fingerprint';
import { readOpenApiDocument } from '../../lib/tools/openapi/reader';

const TOOLS = [
  {
    name: 'get_weather',
    description: 'Current weather for a city',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
  {
    name: 'forecast',
    description: 'Five day forecast',
    inputSchema: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } },
  },
];

const DOCUMENT = {
  openapi: '3.1.0',
  info: { title: 'Weather', version: '1.0.0' },
  servers: [{ url: 'https://api.weather.example' }],
  paths: {
    '/weather': {
      get: {
        operationId: 'get_weather',
        parameters: [{ name: 'city', in: 'query', required: true, schema: { type: 'string' } }],
        responses: { 200: { description: 'ok' } },
      },
    },
  },
};

/** Rebuilds an object with its keys in reverse order, recursively. */
function reverseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reverseKeys);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .reverse()
        .map(([k, v]) => [k, reverseKeys(v)]),
    );
  return value;
}

describe('source fingerprint', function () {
  const remote = { type: 'remote_mcp' as const, url: 'https://mcp.weather.example/mcp' };

  it('is 64 lowercase hex characters and the same for the same source every time', function () {
    const first = sourceFingerprint(remote, TOOLS);
    assert.match(first, /^[0-9a-f]{64}$/);
    assert.equal(sourceFingerprint(remote, TOOLS), first);
    assert.equal(sourceFingerprint(remote, [...TOOLS].reverse()), first, 'tool order does not matter');
    assert.equal(sourceFingerprint(remote, reverseKeys(TOOLS) as typeof TOOLS), first, 'key order does not matter');
  });

  it('documents its canonical form: sorted keys, normalised URL and tools sorted by name', function () {
    assert.equal(
      canonicalSourceForm({ type: 'remote_mcp', url: 'HTTPS://MCP.Example.com:443/mcp#x' }, [
        { name: 'b' },
        { name: 'a', description: 'A', inputSchema: { type: 'object' } },
      ]),
      '{"source":{"url":"https://mcp.example.com/mcp"},"tools":[{"description":"A","inputSchema":{"type":"object"},"name":"a"},{"description":null,"inputSchema":null,"name":"b"}],"type":"remote_mcp","version":1}',
    );
  });

  it('normalises equivalent URLs to one and keeps different ones apart', function () {
    const same = [
      'https://mcp.weather.example/mcp',
      'HTTPS://MCP.WEATHER.EXAMPLE/mcp',
      'https://mcp.weather.example:443/mcp',
      'https://mcp.weather.example/a/../mcp',
      'https://mcp.weather.example/mcp#frag',
      'https://mcp.weather.example/mcp?',
    ];
    const fingerprints = new Set(same.map((url) => sourceFingerprint({ type: 'remote_mcp', url }, TOOLS)));
    assert.equal(fingerprints.size, 1);
    assert.equal(normaliseSourceUrl('https://münchen.example/mcp'), 'https://xn--mnchen-3ya.example/mcp');
    const different = [
      'https://mcp.weather.example/mcp/',
      'https://mcp.weather.example/MCP',
      'https://mcp.weather.example:8443/mcp',
      'http://mcp.weather.example/mcp',
      'https://mcp.weather.example/mcp?v=2',
      'https://other.example/mcp',
    ];
    for (const url of different)
      assert.notEqual(sourceFingerprint({ type: 'remote_mcp', url }, TOOLS), sourceFingerprint(remote, TOOLS), url);
  });

  it('changes with any change to a tool: name, description, schema, one tool more or less', function () {
    const base = sourceFingerprint(remote, TOOLS);
    const variants = [
      [{ ...TOOLS[0], name: 'get_weather2' }, TOOLS[1]],
      [{ ...TOOLS[0], description: 'Current weather for a city.' }, TOOLS[1]],
      [{ ...TOOLS[0], description: null }, TOOLS[1]],
      [{ ...TOOLS[0], inputSchema: { ...TOOLS[0].inputSchema, required: [] } }, TOOLS[1]],
      [
        {
          ...TOOLS[0],
          inputSchema: { ...TOOLS[0].inputSchema, properties: { city: { type: 'string', description: 'City' } } },
        },
        TOOLS[1],
      ],
      [TOOLS[0]],
      [...TOOLS, { name: 'alerts' }],
    ];
    const seen = new Set([base]);
    for (const tools of variants) seen.add(sourceFingerprint(remote, tools as typeof TOOLS));
    assert.equal(seen.size, variants.length + 1);
  });

  it('gives the same OpenAPI document the same fingerprint as an object, JSON text and YAML text', function () {
    const fromObject = readOpenApiDocument({ spec: DOCUMENT });
    const fromJson = readOpenApiDocument({ specText: JSON.stringify(DOCUMENT, null, 2) });
    const fromYaml = readOpenApiDocument({ specText: toYaml(reverseKeys(DOCUMENT)) });
    const prints = [fromObject, fromJson, fromYaml].map((document) =>
      sourceFingerprint({ type: 'openapi', document, baseUrl: null }, TOOLS),
    );
    assert.equal(new Set(prints).size, 1);
    // YAML written by hand: flow style, comments, unquoted keys, a numeric status key.
    const handWritten = `# weather API
openapi: "3.1.0"
info: {title: Weather, version: "1.0.0"}
servers:
  - url: https://api.weather.example
paths:
  /weather:
    get:
      operationId: get_weather
      parameters: [{name: city, in: query, required: true, schema: {type: string}}]
      responses:
        200: {description: ok}
`;
    assert.equal(
      sourceFingerprint(
        { type: 'openapi', document: readOpenApiDocument({ specText: handWritten }), baseUrl: null },
        TOOLS,
      ),
      prints[0],
    );
  });

  it('changes with the OpenAPI document and its base URL', function () {
    const base = sourceFingerprint({ type: 'openapi', document: DOCUMENT, baseUrl: null }, TOOLS);
    const changed = { ...DOCUMENT, info: { ...DOCUMENT.info, version: '1.0.1' } };
    assert.notEqual(sourceFingerprint({ type: 'openapi', document: changed, baseUrl: null }, TOOLS), base);
    assert.notEqual(
      sourceFingerprint({ type: 'openapi', document: DOCUMENT, baseUrl: 'https://eu.weather.example' }, TOOLS),
      base,
    );
    assert.notEqual(sourceFingerprint({ type: 'remote_mcp', url: 'https://api.weather.example' }, TOOLS), base);
  });

  it('refuses OpenAPI text that is neither JSON nor YAML, or not an object, or has duplicate keys', function () {
    assert.throws(() => readOpenApiDocument({ specText: '{"openapi": ' }), /neither valid JSON nor valid YAML/);
    assert.throws(() => readOpenApiDocument({ specText: '- a\n- b\n' }), /must be an object/);
    assert.throws(
      () => readOpenApiDocument({ specText: 'openapi: 3.1.0\nopenapi: 3.0.0\n' }),
      /neither valid JSON nor valid YAML/,
    );
  });

  it('canonical JSON ignores key order at any depth (property)', function () {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        assert.equal(canonicalJson(reverseKeys(value)), canonicalJson(value));
        assert.deepEqual(JSON.parse(canonicalJson(value)), JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 300 },
    );
  });

  it('hashes an approved tool list independently of order', function () {
    assert.equal(toolListHash(TOOLS), toolListHash([...TOOLS].reverse()));
    assert.notEqual(toolListHash(TOOLS), toolListHash([TOOLS[0]]));
  });
});
