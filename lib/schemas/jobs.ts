export const JobStatus = { type: 'string', enum: ['pending', 'processing', 'completed', 'failed'] } as const;

/** ApiScrapeJob and ApiAgenticJob share this shape. */
export const JobRecord = {
  $id: 'JobRecord',
  type: 'object',
  required: ['id', 'userId', 'status', 'request', 'logs', 'createdAt', 'updatedAt'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    userId: { type: 'string', format: 'uuid' },
    status: JobStatus,
    request: { type: 'object', description: 'The accepted request, with defaults applied' },
    result: { type: ['object', 'null'], description: 'Set when the job completed' },
    error: { type: ['string', 'null'], description: 'Set when the job failed' },
    logs: {
      type: 'array',
      items: { type: 'string' },
      description: 'Progress lines, "<ISO time> <message>", appended as the run progresses',
    },
    webhookUrl: { type: ['string', 'null'] },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
} as const;

export const JobAccepted = {
  $id: 'JobAccepted',
  type: 'object',
  required: ['jobId', 'status'],
  properties: { jobId: { type: 'string', format: 'uuid' }, status: { type: 'string', enum: ['pending'] } },
} as const;

export const JobFallback = {
  $id: 'JobFallback',
  type: 'object',
  description:
    'Answer of a synchronous request whose run failed or did not finish within the wait limit; poll the status endpoint for the outcome',
  required: ['jobId', 'status', 'error'],
  properties: {
    jobId: { type: 'string', format: 'uuid' },
    status: JobStatus,
    error: { type: 'string' },
  },
} as const;
