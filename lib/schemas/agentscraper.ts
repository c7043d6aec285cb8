import type { FieldSpec } from '../llm/structured-output';
import { httpUrl, proxyCountry, proxyCountryWhenEnabled } from './common';
import { LLM_MODEL_DESCRIPTION, LLM_PROVIDER_DESCRIPTION } from './llm';

export const AgentStructuredOutputField = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'type'],
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 64 },
    type: {
      type: 'string',
      description: 'string, number, integer, boolean, object, or an array form such as string[]',
    },
    description: { type: 'string', maxLength: 1000 },
  },
} as const;

export const SensitiveDataItem = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'value'],
  properties: {
    id: {
      type: 'string',
      pattern: '^[A-Za-z0-9_.-]{1,64}$',
      description: 'Placeholder name; the model writes <secret>id</secret>',
    },
    value: {
      type: 'string',
      minLength: 1,
      maxLength: 4096,
      description: 'Never shown to the model, logs, results or screenshots',
    },
    domain_pattern: {
      type: 'string',
      minLength: 1,
      maxLength: 253,
      pattern: '^(\\*\\.)?[A-Za-z0-9.-]+$',
      description:
        'Host glob where the value may be typed: "example.com" exactly, "*.example.com" for it and its subdomains',
    },
  },
} as const;

export const AgenticScraperRequest = {
  $id: 'AgenticScraperRequest',
  type: 'object',
  additionalProperties: false,
  required: ['task'],
  properties: {
    task: { type: 'string', minLength: 1, maxLength: 20000 },
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
      default: 'router/auto',
      description: LLM_MODEL_DESCRIPTION,
    },
    headless: {
      type: 'boolean',
      default: false,
      description: 'false runs a headed Chromium (under a virtual display on servers)',
    },
    vision_mode: { type: 'string', enum: ['auto', 'visual', 'text_only'], default: 'auto' },
    vision_detail_level: { type: 'string', enum: ['auto', 'low', 'high'], default: 'auto' },
    optimization_mode: { type: 'string', enum: ['balanced', 'speed', 'consistency'], default: 'balanced' },
    max_actions_per_step: { type: 'integer', minimum: 1, maximum: 20, default: 5 },
    follow_up_tasks: { type: 'array', maxItems: 20, items: { type: 'string', minLength: 1, maxLength: 20000 } },
    cookies: {
      description: 'Set before the first navigation: a Cookie header string or an object of name → value',
      oneOf: [
        { type: 'string', minLength: 1, maxLength: 16384 },
        { type: 'object', additionalProperties: { type: 'string' } },
      ],
    },
    sensitive_data: { type: 'array', maxItems: 50, items: SensitiveDataItem },
    structured_output: { type: 'array', minItems: 1, maxItems: 100, items: AgentStructuredOutputField },
    webhook_url: httpUrl,
    captcha_solver_enabled: { type: 'boolean', default: false },
    proxy_enabled: { type: 'boolean', default: false },
    proxy_country: proxyCountry,
  },
  ...proxyCountryWhenEnabled,
} as const;

export interface SensitiveItem {
  id: string;
  value: string;
  domain_pattern?: string;
}

export interface AgenticScraperRequestBody {
  task: string;
  llm_provider: 'service' | 'router';
  llm_model: string;
  headless: boolean;
  vision_mode: 'auto' | 'visual' | 'text_only';
  vision_detail_level: 'auto' | 'low' | 'high';
  optimization_mode: 'balanced' | 'speed' | 'consistency';
  max_actions_per_step: number;
  follow_up_tasks?: string[];
  cookies?: string | Record<string, string>;
  sensitive_data?: SensitiveItem[];
  /** Validated by validateStructuredOutputSpec before the job is admitted. */
  structured_output?: FieldSpec[];
  webhook_url?: string;
  captcha_solver_enabled: boolean;
  proxy_enabled: boolean;
  proxy_country?: string;
}

export const AgentResult = {
  $id: 'AgentResult',
  type: 'object',
  description: 'The result of a browser-agent job (also kept, partially filled, when the job failed)',
  required: ['answer', 'data', 'tasks', 'steps', 'summary'],
  properties: {
    answer: { type: ['string', 'null'], description: 'Final answer of the last task' },
    data: { description: 'Structured output of the last task when structured_output was given, else null' },
    tasks: {
      type: 'array',
      description: 'The main task then each follow-up task, in order',
      items: {
        type: 'object',
        properties: {
          task: { type: 'string' },
          success: { type: 'boolean' },
          answer: { type: ['string', 'null'] },
          data: {},
          steps: { type: 'integer' },
        },
      },
    },
    steps: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          task: { type: 'integer' },
          step: { type: 'integer' },
          url: { type: 'string' },
          goal: { type: ['string', 'null'] },
          actions: {
            type: 'array',
            items: { type: 'object', properties: { name: { type: 'string' }, args: { type: 'object' } } },
          },
          outcomes: {
            type: 'array',
            items: {
              type: 'object',
              properties: { action: { type: 'string' }, ok: { type: 'boolean' }, message: { type: 'string' } },
            },
          },
        },
      },
    },
    summary: {
      type: 'object',
      properties: {
        steps: { type: 'integer' },
        llmCalls: { type: 'integer' },
        promptTokens: { type: 'integer' },
        completionTokens: { type: 'integer' },
        browserSeconds: { type: 'number' },
        costUsd: { type: 'number' },
      },
    },
  },
} as const;
