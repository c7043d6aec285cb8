import { PaginationMeta } from './common';

export const SystemLog = {
  $id: 'SystemLog',
  type: 'object',
  required: ['id', 'logMessage', 'executedAt'],
  properties: {
    id: { type: 'integer' },
    userId: { type: ['string', 'null'], format: 'uuid' },
    logMessage: { type: 'string' },
    executedAt: { type: 'string', format: 'date-time' },
  },
} as const;

export const AgentTransaction = {
  $id: 'AgentTransaction',
  type: 'object',
  required: ['id', 'userId', 'agentName', 'cost', 'executedAt'],
  properties: {
    id: { type: 'integer' },
    jobId: { type: ['string', 'null'], format: 'uuid' },
    userId: { type: 'string', format: 'uuid' },
    agentName: { type: 'string', description: 'Which runtime incurred the usage, e.g. "scrape"' },
    result: { type: ['string', 'null'], description: '"completed" or "failed" for job usage' },
    payload: {
      type: ['object', 'null'],
      description:
        'Usage breakdown: LLM calls and tokens by model, browser seconds, captcha solves, proxy requests, each with its cost',
    },
    cost: {
      type: 'number',
      description: 'USD charged to the wallet for this usage (ledger amounts are integer micro-USD)',
    },
    executedAt: { type: 'string', format: 'date-time' },
  },
} as const;

export const LogsResponse = {
  $id: 'LogsResponse',
  type: 'object',
  required: ['logs', 'meta'],
  properties: { logs: { type: 'array', items: { $ref: 'SystemLog' } }, meta: { $ref: 'PaginationMeta' } },
} as const;

export const TransactionsResponse = {
  $id: 'TransactionsResponse',
  type: 'object',
  required: ['transactions', 'meta'],
  properties: {
    transactions: { type: 'array', items: { $ref: 'AgentTransaction' } },
    meta: { $ref: 'PaginationMeta' },
  },
} as const;

export const logSchemas = [SystemLog, AgentTransaction, LogsResponse, TransactionsResponse, PaginationMeta];
