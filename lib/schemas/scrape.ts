import type { FromSchema } from 'json-schema-to-ts';
import { cookiesJsonSchema } from '../page/cookies';
import { httpUrl } from './common';
import { LLM_MODEL_DESCRIPTION, LLM_PROVIDER_DESCRIPTION } from './llm';

export const StructuredOutputField = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'type'],
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 64, description: 'Key of the field in the result data' },
    type: {
      type: 'string',
      description: 'string, number, integer, boolean, object, or an array form such as string[]',
    },
    description: { type: 'string', maxLength: 1000, description: 'Optional hint for the model' },
  },
} as const;

export const ScrapeRequest = {
  $id: 'ScrapeRequest',
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: {
    url: { ...httpUrl, description: 'Page to scrape (http or https); checked by the SSRF guard at every hop' },
    llm_provider: {
      type: 'string',
      enum: ['service', 'router'],
      default: 'service',
      description: LLM_PROVIDER_DESCRIPTION,
    },
    llm_model: {
      type: 'string',
      minLength: 1,
      maxLength: 200,
      default: 'gpt-4o-mini',
      description: LLM_MODEL_DESCRIPTION,
    },
    webhook_url: {
      ...httpUrl,
      description: 'Receives the finished job record (see the Webhooks section of the description)',
    },
    cookies: cookiesJsonSchema,
    structured_output: {
      description:
        'A field list ([{id, type}]) or a JSON Schema with an object root. Omitted: data is {summary: string, key_points: string[]}',
      oneOf: [
        { type: 'array', minItems: 1, maxItems: 100, items: StructuredOutputField },
        { type: 'object', required: ['type'], properties: { type: { const: 'object' } } },
      ],
    },
    system_prompt: { type: 'string', maxLength: 20000 },
    captcha_solver_enabled: { type: 'boolean', default: false },
    mobile_proxy_enabled: { type: 'boolean', default: false },
    mobile_proxy_country: { type: 'string', pattern: '^[A-Za-z]{2}$', default: 'US' },
    async: { type: 'boolean', default: true },
  },
} as const;

/** A body ScrapeRequest accepts, as ajv leaves it (a property with a default is always there). */
export type ScrapeRequestBody = FromSchema<typeof ScrapeRequest>;

export const ScrapeResult = {
  $id: 'ScrapeResult',
  type: 'object',
  description:
    "The result object of a completed scrape (the job record's result, and the 200 body of a synchronous scrape)",
  required: ['url', 'finalUrl', 'renderedWith', 'metadata', 'markdown', 'data', 'usage'],
  properties: {
    url: { type: 'string' },
    finalUrl: { type: 'string', description: 'After redirects' },
    statusCode: { type: 'integer' },
    renderedWith: {
      type: 'string',
      enum: ['http', 'browser'],
      description: 'http when the page needed no script, browser when Chromium rendered it',
    },
    metadata: {
      type: 'object',
      properties: {
        title: { type: ['string', 'null'] },
        description: { type: ['string', 'null'] },
        language: { type: ['string', 'null'] },
        links: {
          type: 'array',
          items: { type: 'object', properties: { url: { type: 'string' }, text: { type: 'string' } } },
        },
      },
    },
    markdown: { type: 'string' },
    data: { description: 'The extraction, shaped by structured_output' },
    usage: {
      type: 'object',
      properties: {
        llmModel: { type: 'string' },
        promptTokens: { type: 'integer' },
        completionTokens: { type: 'integer' },
        browserSeconds: { type: 'number' },
        costUsd: { type: 'number' },
      },
    },
  },
} as const;
