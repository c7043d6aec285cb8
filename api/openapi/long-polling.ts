/** `?wait=N` on every job-status route: long polling (api/routes/job-status.ts). */
export const longPollWait = {
  name: 'wait',
  in: 'query',
  required: false,
  schema: { type: 'integer', minimum: 0, maximum: 30, default: 0 },
  description:
    'Long polling: hold the request up to this many seconds until the job is completed or failed, then answer as usual (at once when it already is). 0 or absent answers at once; above 30 is a 400.',
  'x-long-polling': {
    maxSeconds: 30,
    answersWhen: 'the job reaches a terminal status (completed or failed) or the wait elapses, whichever is first',
    response:
      'the same job record a plain read gives at that moment (status may still be pending or processing after a timeout)',
    note: 'A server may answer early when too many requests already wait in one process; clients simply poll again.',
  },
};
