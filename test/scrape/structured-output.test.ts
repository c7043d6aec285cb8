import assert from 'node:assert/strict';
import {
  DEFAULT_SCRAPE_OUTPUT,
  DEFAULT_SCRAPE_OUTPUT_SCHEMA,
  FIELD_TYPES,
  StructuredOutputSpecError,
  compileSchemaValidator,
  fieldListToJsonSchema,
  isStrictCompatible,
  jsonSchemaForRequest,
  validateStructuredOutputSpec,
} from '../../lib/llm/structured-output';
import { microsToUsd, usdToMicros } from '../../lib/money';

describe('structured output specs', () => {
  describe('fieldListToJsonSchema', () => {
    it('maps every field type to a required property of a closed object', () => {
      const schema = fieldListToJsonSchema([
        { id: 'title', type: 'string', description: 'Page title' },
        { id: 'price', type: 'number' },
        { id: 'stock', type: 'integer' },
        { id: 'on_sale', type: 'boolean' },
        { id: 'tags', type: 'string[]' },
        { id: 'ratings', type: 'integer[]' },
      ]);
      assert.deepEqual(schema, {
        type: 'object',
        properties: {
          title: { type: 'string', description: 'Page title' },
          price: { type: 'number' },
          stock: { type: 'integer' },
          on_sale: { type: 'boolean' },
          tags: { type: 'array', items: { type: 'string' } },
          ratings: { type: 'array', items: { type: 'integer' } },
        },
        required: ['title', 'price', 'stock', 'on_sale', 'tags', 'ratings'],
        additionalProperties: false,
      });
      assert.equal(isStrictCompatible(schema), true);
    });

    it('makes object fields open objects, which rules out strict mode', () => {
      const schema = fieldListToJsonSchema([
        { id: 'specs', type: 'object' },
        { id: 'variants', type: 'object[]' },
      ]);
      assert.deepEqual(schema.properties, {
        specs: { type: 'object', additionalProperties: true },
        variants: { type: 'array', items: { type: 'object', additionalProperties: true } },
      });
      assert.equal(isStrictCompatible(schema), false);
      assert.equal(jsonSchemaForRequest([{ id: 'specs', type: 'object' }]).strict, false);
    });

    it('knows all ten field types', () => {
      assert.deepEqual([...FIELD_TYPES].sort(), [
        'boolean',
        'boolean[]',
        'integer',
        'integer[]',
        'number',
        'number[]',
        'object',
        'object[]',
        'string',
        'string[]',
      ]);
    });
  });

  describe('validateStructuredOutputSpec', () => {
    it('accepts a valid field list, a valid JSON Schema and an absent spec', () => {
      assert.deepEqual(validateStructuredOutputSpec([{ id: 'title', type: 'string' }]), []);
      assert.deepEqual(validateStructuredOutputSpec({ type: 'object', properties: { a: { type: 'string' } } }), []);
      assert.deepEqual(validateStructuredOutputSpec(undefined), []);
    });

    it('rejects an empty field list', () => {
      assert.match(validateStructuredOutputSpec([]).join('\n'), /empty/);
    });

    it('reports unknown types, invalid ids, duplicate ids and bad descriptions with their position', () => {
      const problems = validateStructuredOutputSpec([
        { id: 'title', type: 'date' },
        { id: '1st', type: 'string' },
        { id: 'has space', type: 'string' },
        { id: 'x'.repeat(65), type: 'string' },
        { id: 'title', type: 'string' },
        { type: 'string' },
        { id: 'notes', type: 'string', description: 42 },
        'price',
      ]);
      assert.equal(problems.length, 8, problems.join('\n'));
      assert.match(problems[0], /structured_output\[0\]\.type "date" is not supported; use one of string, number/);
      assert.match(problems[1], /structured_output\[1\]\.id "1st" is invalid/);
      assert.match(problems[2], /structured_output\[2\]\.id "has space" is invalid/);
      assert.match(problems[3], /structured_output\[3\]\.id "x+" is invalid/);
      assert.match(problems[4], /structured_output\[4\]\.id "title" is used by more than one field/);
      assert.match(problems[5], /structured_output\[5\]\.id is missing/);
      assert.match(problems[6], /structured_output\[6\]\.description must be a string/);
      assert.match(problems[7], /structured_output\[7\] must be an object/);
    });

    it('accepts the longest allowed id and underscore-led ids', () => {
      assert.deepEqual(validateStructuredOutputSpec([{ id: `_${'a'.repeat(63)}`, type: 'string' }]), []);
    });

    it('rejects JSON Schemas without a root object type or that ajv cannot compile', () => {
      assert.match(
        validateStructuredOutputSpec({ type: 'array', items: { type: 'string' } })[0],
        /"type": "object" at the root/,
      );
      assert.match(
        validateStructuredOutputSpec({ name: 'x', schema: { type: 'object' } })[0],
        /not a \{name, schema\} wrapper/,
      );
      assert.match(
        validateStructuredOutputSpec({ type: 'object', properties: { a: { type: 'strin' } } })[0],
        /not a valid JSON Schema/,
      );
      assert.match(
        validateStructuredOutputSpec({ type: 'object', properties: { a: { $ref: '#/$defs/missing' } } })[0],
        /not a valid JSON Schema/,
      );
    });

    it('rejects values that are neither lists nor objects', () => {
      assert.match(validateStructuredOutputSpec('title,price')[0], /list of fields or a JSON Schema object/);
      assert.match(validateStructuredOutputSpec(7)[0], /list of fields or a JSON Schema object/);
    });
  });

  describe('jsonSchemaForRequest', () => {
    it('uses the default scrape output when structured_output is omitted', () => {
      const output = jsonSchemaForRequest(undefined);
      assert.equal(output.name, DEFAULT_SCRAPE_OUTPUT.name);
      assert.equal(output.strict, true);
      assert.deepEqual(output.schema, DEFAULT_SCRAPE_OUTPUT_SCHEMA);
      assert.notEqual(output.schema, DEFAULT_SCRAPE_OUTPUT_SCHEMA);
      assert.equal(isStrictCompatible(DEFAULT_SCRAPE_OUTPUT_SCHEMA), true);
      const validate = compileSchemaValidator(DEFAULT_SCRAPE_OUTPUT_SCHEMA);
      assert.deepEqual(validate({ summary: 'A page.', key_points: ['one'] }), []);
      assert.notDeepEqual(validate({ summary: 'A page.' }), []);
    });

    it('turns a field list into a strict schema named "extraction"', () => {
      const output = jsonSchemaForRequest([{ id: 'title', type: 'string' }]);
      assert.equal(output.name, 'extraction');
      assert.equal(output.strict, true);
      assert.deepEqual(output.schema.required, ['title']);
    });

    it('passes a JSON Schema through, naming it after its title and detecting strict compatibility', () => {
      const closed = {
        title: 'Product card!',
        type: 'object',
        properties: { name: { type: 'string' }, offers: { type: 'array', items: { $ref: '#/$defs/offer' } } },
        required: ['name', 'offers'],
        additionalProperties: false,
        $defs: {
          offer: {
            type: 'object',
            properties: { price: { anyOf: [{ type: 'number' }, { type: 'null' }] } },
            required: ['price'],
            additionalProperties: false,
          },
        },
      };
      const output = jsonSchemaForRequest(closed);
      assert.deepEqual(output, { name: 'Product_card', schema: closed, strict: true });
      assert.notEqual(output.schema, closed);

      const open = { type: 'object', properties: { name: { type: 'string' } } };
      assert.deepEqual(jsonSchemaForRequest(open), { name: 'extraction', schema: open, strict: false });

      const partlyRequired = { ...closed, required: ['name'] };
      assert.equal(jsonSchemaForRequest(partlyRequired).strict, false);

      const withOneOf = { ...closed, properties: { name: { oneOf: [{ type: 'string' }] } }, required: ['name'] };
      assert.equal(jsonSchemaForRequest(withOneOf).strict, false);
    });

    it('supports 2020-12 schemas and formats', () => {
      const schema = {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        properties: { email: { type: 'string', format: 'email' } },
        required: ['email'],
        additionalProperties: false,
      };
      assert.deepEqual(validateStructuredOutputSpec(schema), []);
      const validate = compileSchemaValidator(schema);
      assert.deepEqual(validate({ email: 'a@example.com' }), []);
      assert.deepEqual(validate({ email: 'nope' }), ['/email must match format "email"']);
    });

    it('throws StructuredOutputSpecError listing the problems of an invalid spec', () => {
      assert.throws(
        () => jsonSchemaForRequest([{ id: 'a', type: 'date' }]),
        (error: unknown) =>
          error instanceof StructuredOutputSpecError && error.problems.length === 1 && /"date"/.test(error.message),
      );
    });
  });
});

describe('money', () => {
  it('converts USD to integer micros, rounding half away from zero', () => {
    assert.equal(usdToMicros(1), 1_000_000);
    assert.equal(usdToMicros(0.15), 150_000);
    assert.equal(usdToMicros(2.5), 2_500_000);
    assert.equal(usdToMicros(0.0000005), 1);
    assert.equal(usdToMicros(0.0000004), 0);
    assert.equal(usdToMicros(1.0000005), 1_000_001);
    assert.equal(usdToMicros(-1.0000005), -1_000_001);
    assert.equal(usdToMicros(-0.0000004), 0);
    assert.equal(Object.is(usdToMicros(-0), 0), true);
    assert.equal(usdToMicros(0.1 + 0.2), 300_000);
    assert.equal(usdToMicros(1e-7), 0);
    assert.equal(usdToMicros(123456.789), 123_456_789_000);
  });

  it('rejects amounts that are not finite or too large to count', () => {
    assert.throws(() => usdToMicros(Number.NaN), Error);
    assert.throws(() => usdToMicros(Number.NEGATIVE_INFINITY), Error);
    assert.throws(() => usdToMicros(Number.POSITIVE_INFINITY), Error);
    assert.throws(() => usdToMicros(1e12), /too large/);
  });

  it('converts micros back to USD and round-trips', () => {
    assert.equal(microsToUsd(150_000), 0.15);
    assert.equal(microsToUsd(-2_500_000), -2.5);
    assert.equal(microsToUsd(1), 0.000001);
    for (const micros of [0, 1, 7, 999_999, 1_234_567_891]) assert.equal(usdToMicros(microsToUsd(micros)), micros);
    assert.throws(() => microsToUsd(1.5), /integer/);
  });
});
