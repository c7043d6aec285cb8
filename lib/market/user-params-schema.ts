import { compileUntrustedSchema, UntrustedSchemaError } from '../json-schema/untrusted';
import { MarketRuleError, ruleBroken } from './errors';
import { isReservedForConsumers } from '../tools/consumer-params';

/**
 * `requiredUserParamsSchema`: the values each consumer gives when installing an entry.
 *
 * It is a JSON Schema with `type: "object"` whose `properties` are flat values (string, number,
 * integer or boolean; at most MAX_USER_PARAMS) and whose `required` names only declared
 * properties. **Secret fields are marked `"writeOnly": true`** (JSON Schema's own keyword for values
 * that are sent but never read back): the platform seals them at rest and never shows them. A
 * property whose name has a word that means a secret (key, token, secret, password, credential,
 * auth, cookie, session, ...: apiKey, access_token, X-Auth) must carry that mark, so a secret cannot be stored in the clear by omission.
 * Like every schema the platform does not own it is compiled by lib/json-schema/untrusted.ts
 * (linear-time patterns, references only inside the schema), which also checks consumers' values.
 */
export const MAX_USER_PARAMS = 50;
const PRIMITIVE_TYPES = new Set(['string', 'number', 'integer', 'boolean']);
const SECRET_WORDS = new Set([
  'key',
  'apikey',
  'token',
  'tokens',
  'secret',
  'secrets',
  'password',
  'passwd',
  'pwd',
  'passphrase',
  'credential',
  'credentials',
  'auth',
  'authorization',
  'cookie',
  'cookies',
  'bearer',
  'session',
  'sessionid',
  'pat',
  'otp',
  'totp',
  'pin',
]);

/** Words of a name (camelCase, snake_case, kebab-case, dotted) include key, token, secret, password, auth, cookie, ... */
export function looksSecret(name: string): boolean {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  return words.some((word) => SECRET_WORDS.has(word));
}

/** The properties marked secret (`writeOnly: true`). */
export function secretParamNames(schema: Record<string, unknown> | null | undefined): string[] {
  const properties = (schema?.properties ?? {}) as Record<string, { writeOnly?: unknown }>;
  return Object.entries(properties)
    .filter(([, p]) => p && p.writeOnly === true)
    .map(([name]) => name);
}

const bad = (code: string, message: string, path = 'body/requiredUserParamsSchema') => ruleBroken(code, message, path);

/** Checks the rules above; an empty object means "no parameters". */
export function checkUserParamsSchema(schema: Record<string, unknown>): void {
  if (Object.keys(schema).length === 0) return;
  if (schema.type !== 'object')
    throw bad('invalid_params_schema', 'requiredUserParamsSchema must be a JSON Schema with type "object"');
  const properties = schema.properties ?? {};
  if (!properties || typeof properties !== 'object' || Array.isArray(properties))
    throw bad('invalid_params_schema', 'properties must be an object');
  const entries = Object.entries(properties as Record<string, unknown>);
  if (entries.length > MAX_USER_PARAMS) throw bad('invalid_params_schema', `At most ${MAX_USER_PARAMS} parameters`);
  for (const [name, property] of entries) {
    const at = `body/requiredUserParamsSchema/properties/${name}`;
    if (!/^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/.test(name))
      throw bad(
        'invalid_params_schema',
        `Parameter names are 1–64 characters of [A-Za-z0-9_.-] starting with a letter or _; "${name}" is not`,
        at,
      );
    if (
      !property ||
      typeof property !== 'object' ||
      !PRIMITIVE_TYPES.has(String((property as { type?: unknown }).type))
    ) {
      throw bad('invalid_params_schema', `Parameter "${name}" must have type string, number, integer or boolean`, at);
    }
    if (isReservedForConsumers(name)) {
      throw bad(
        'reserved_param_name',
        `Parameter "${name}" names a header only the platform sets (Host, Cookie, hop-by-hop and transport headers, x-service-charge-*): consumers can never send it`,
        at,
      );
    }
    const p = property as { writeOnly?: unknown };
    if (p.writeOnly !== undefined && typeof p.writeOnly !== 'boolean')
      throw bad('invalid_params_schema', `writeOnly of "${name}" must be a boolean`, at);
    if (looksSecret(name) && p.writeOnly !== true) {
      throw bad(
        'unmarked_secret_param',
        `Parameter "${name}" looks like a secret: mark it "writeOnly": true so it is sealed and never shown`,
        at,
      );
    }
  }
  if (schema.required !== undefined) {
    if (
      !Array.isArray(schema.required) ||
      schema.required.some((r) => typeof r !== 'string' || !(r in (properties as object)))
    ) {
      throw bad('invalid_params_schema', 'required must list declared properties');
    }
  }
  try {
    compileUntrustedSchema(schema);
  } catch (err) {
    const at = err instanceof UntrustedSchemaError ? err.at : '';
    throw bad(
      'invalid_params_schema',
      `Not a valid JSON Schema: ${(err as Error).message}`,
      `body/requiredUserParamsSchema${at}`,
    );
  }
}

/** The parameter names an entry declares (`properties` of its requiredUserParamsSchema); none for an entry without parameters. */
export function declaredParamNames(schema: Record<string, unknown> | null | undefined): string[] {
  const properties = schema?.properties;
  return properties && typeof properties === 'object' && !Array.isArray(properties) ? Object.keys(properties) : [];
}

const pointerToken = (name: string) => name.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * **Params only where declared**: the one check of a consumer's values for an entry, wherever they
 * enter (a hosted-endpoint credential, a custom agent's or an automation's market_mcps, an agent-market
 * listing's mcpSelections). Only the names the entry's requiredUserParamsSchema declares are accepted
 * (an entry without parameters accepts none), and the values must satisfy that schema. Anything else
 * is 400 `invalid_params` naming each offending key under `at` (e.g. `body/params`).
 *
 * An entry whose stored schema can no longer be compiled (approved before today's schema rules) is
 * 409 `invalid_params_schema`: nothing can be checked against it until the provider revises it.
 */
export function checkUserParams(
  schema: Record<string, unknown> | null | undefined,
  params: Record<string, unknown>,
  at: string,
): void {
  const declared = declaredParamNames(schema);
  const undeclared = Object.keys(params).filter((name) => !declared.includes(name));
  if (undeclared.length) {
    throw new MarketRuleError(
      400,
      'invalid_params',
      `Not parameters of this entry: ${undeclared.map((name) => JSON.stringify(name)).join(', ')} (it declares ${declared.length ? declared.map((name) => JSON.stringify(name)).join(', ') : 'none'})`,
      undeclared.map((name) => ({ path: `${at}/${pointerToken(name)}`, message: 'is not a parameter of this entry' })),
    );
  }
  if (declared.length === 0) return;
  let validate;
  try {
    validate = compileUntrustedSchema(schema);
  } catch (err) {
    throw new MarketRuleError(
      409,
      'invalid_params_schema',
      `The entry's requiredUserParamsSchema cannot be used (${(err as Error).message}); the provider must revise the entry`,
    );
  }
  if (validate(params)) return;
  const details = (validate.errors ?? []).map((e) => {
    const missing =
      e.keyword === 'required'
        ? `/${pointerToken(String((e.params as { missingProperty: string }).missingProperty))}`
        : '';
    return { path: `${at}${e.instancePath}${missing}`, message: e.message ?? 'is invalid' };
  });
  throw new MarketRuleError(
    400,
    'invalid_params',
    `The params do not match the entry's requiredUserParamsSchema: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`,
    details,
  );
}
