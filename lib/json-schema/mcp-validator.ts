import type { jsonSchemaValidator, JsonSchemaType, JsonSchemaValidator } from '@modelcontextprotocol/client';
import { compileUntrustedSchema } from './untrusted';

/**
 * The MCP client's validator of tool output schemas (`outputSchema`, written by whoever runs the
 * server): the platform's untrusted-schema validator instead of the SDK's default ajv, so a
 * server's patterns run in linear time and its `$id`s stay its own. MCP schemas without `$schema`
 * are 2020-12. A schema that cannot be used throws; the SDK then refuses calls of that tool.
 */
export const mcpOutputSchemaValidator: jsonSchemaValidator = {
  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    const validate = compileUntrustedSchema(schema, { defaultDialect: '2020-12' });
    return (input: unknown) => {
      if (validate(input)) return { valid: true, data: input as T, errorMessage: undefined };
      const errorMessage = (validate.errors ?? [])
        .map((e) => `${e.instancePath || '(root)'} ${e.message ?? `fails "${e.keyword}"`}`)
        .join('; ');
      return { valid: false, data: undefined, errorMessage: errorMessage || 'does not match the output schema' };
    };
  },
};
