// No packet leaves this file: documents are given inline.
import assert from 'node:assert/strict';

import { loadOpenApiDocument } from '../../lib/tools/openapi/document';
import { OpenApiDocumentError, readOpenApiDocument } from '../../lib/tools/openapi/reader';
import { ToolSourceError } from '../../lib/tools/errors';
import type { StreamingFetch } from '../../lib/net/streaming-fetch';

const noNetwork: StreamingFetch = async () => {
  throw new Error('no document is fetched in this test');
};

type Reading = { ok: true; document: Record<string, unknown> } | { ok: false; code: string };

/** How market submission and validation read the text (the fingerprinted, stored document). */
function atValidation(specText: string): Reading {
  try {
    return { ok: true, document: readOpenApiDocument({ specText }) };
  } catch (error) {
    if (error instanceof OpenApiDocumentError) return { ok: false, code: error.reason };
    throw error;
  }
}

/** How the tool runtime reads the same text when it discovers or calls the source. */
async function atCallTime(specText: string): Promise<Reading> {
  try {
    return { ok: true, document: (await loadOpenApiDocument({ specText }, noNetwork, 1_000)).doc };
  } catch (error) {
    if (error instanceof ToolSourceError)
      return { ok: false, code: error.code === 'source_too_large' ? 'too_large' : 'invalid' };
    throw error;
  }
}

const INFO = '"info": {"title": "Weather", "version": "1.0.0"}';

describe('one OpenAPI document reader: a document reads the same at validation and at call time', () => {
  const cases: Array<[string, string, 'ok' | 'invalid']> = [
    ['JSON text', `{"openapi": "3.0.3", ${INFO}, "paths": {}}`, 'ok'],
    ['YAML text', 'openapi: 3.0.3\ninfo:\n  title: Weather\n  version: 1.0.0\npaths: {}\n', 'ok'],
    // Was refused by the tool runtime ("not valid JSON") while the market read it as YAML.
    [
      'YAML in flow style (starts with a brace)',
      '{openapi: 3.0.3, info: {title: Weather, version: 1.0.0}, paths: {}}',
      'ok',
    ],
    // Was read by the tool runtime (the last "openapi" wins) while the market refused it.
    ['JSON text with a duplicate key', `{"openapi": "3.0.3", ${INFO}, "paths": {}, "openapi": "3.1.0"}`, 'invalid'],
    [
      'JSON text with a duplicate key in a nested object',
      `{"openapi": "3.0.3", "info": {"title": "A", "version": "1", "title": "B"}, "paths": {}}`,
      'invalid',
    ],
    // Was read by the tool runtime (Infinity) while the market refused it as not plain JSON data.
    [
      'YAML with a non-finite number',
      'openapi: 3.0.3\ninfo:\n  title: Weather\n  version: 1.0.0\n  x-limit: .inf\npaths: {}\n',
      'invalid',
    ],
    ['text that is not a document', '- a\n- b\n', 'invalid'],
    ['empty text', '   \n', 'invalid'],
  ];

  for (const [what, text, expected] of cases) {
    it(`${what}: ${expected === 'ok' ? 'the same document' : 'refused'} at both`, async () => {
      const validation = atValidation(text);
      const call = await atCallTime(text);
      assert.deepEqual(call, validation);
      assert.equal(validation.ok ? 'ok' : validation.code, expected);
    });
  }

  it('keys that only differ by escaping are the same key', () => {
    assert.throws(
      () => readOpenApiDocument({ specText: `{"openapi": "3.0.3", "x-a": 1, "x-\\u0061": 2}` }),
      /Map keys must be unique/,
    );
    assert.deepEqual(readOpenApiDocument({ specText: `{"a": {"k": 1}, "b": {"k": 2}, "c": [{"k": 1}, {"k": 2}]}` }), {
      a: { k: 1 },
      b: { k: 2 },
      c: [{ k: 1 }, { k: 2 }],
    });
  });

  it('reads an object, its JSON text and its YAML text as the same document', () => {
    const document = { openapi: '3.0.3', info: { title: 'Weather', version: '1.0.0' }, paths: {} };
    const fromJson = readOpenApiDocument({ specText: JSON.stringify(document) });
    const fromYaml = readOpenApiDocument({
      specText: 'openapi: 3.0.3\ninfo: {title: Weather, version: 1.0.0}\npaths: {}\n',
    });
    assert.deepEqual(readOpenApiDocument({ spec: document }), document);
    assert.deepEqual(fromJson, document);
    assert.deepEqual(fromYaml, document);
  });
});
