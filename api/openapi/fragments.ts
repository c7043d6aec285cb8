/** Builders of OpenAPI fragments (schema refs, JSON bodies and responses, path and query parameters) shared by the parts of the OpenAPI document. */

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const json = (schema: unknown, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});
export const error = (description: string) => json(ref('ErrorResponse'), description);
export const body = (name: string) => ({ required: true, content: { 'application/json': { schema: ref(name) } } });
export const uuidPath = (name: string) => ({
  name,
  in: 'path',
  required: true,
  schema: { type: 'string', format: 'uuid' },
});
export const unauthorized = error('Missing or invalid API key');

/** Every property of a query schema as an optional query parameter, its schema taken as it is. */
export const optionalQuery = (schema: { properties: Record<string, Record<string, unknown>> }) =>
  Object.entries(schema.properties).map(([name, s]) => ({
    name,
    in: 'query',
    required: false,
    schema: s,
    description: s.description,
  }));
