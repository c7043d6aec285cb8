import type { SourceParamValues } from '../tools/types';

/**
 * A market consumer's params at call time. The API checks them when they are given (credentials,
 * agents' market selections); a call checks them again, for what was stored before those checks or
 * before the entry's declaration changed: only the names the entry's requiredUserParamsSchema declares
 * are taken, each within its declared `enum`. Anything else refuses the call before anything is sent
 * (the value itself is never repeated: it may be a secret). Where a taken value may then go is the
 * tool runtime's rule (lib/tools/consumer-params.ts).
 */
export type ConfinedParams =
  { ok: true; values: SourceParamValues; choices: Record<string, string[]> } | { ok: false; message: string };

export function confineConsumerParams(schema: Record<string, unknown>, given: SourceParamValues): ConfinedParams {
  const properties = (schema?.properties && typeof schema.properties === 'object' ? schema.properties : {}) as Record<
    string,
    { enum?: unknown } | undefined
  >;
  const declared = Object.keys(properties);
  const undeclared = Object.keys(given).filter((name) => !Object.prototype.hasOwnProperty.call(properties, name));
  if (undeclared.length) {
    const list = undeclared.map((name) => JSON.stringify(name)).join(', ');
    return {
      ok: false,
      message: `${list} ${undeclared.length > 1 ? 'are not parameters' : 'is not a parameter'} of this entry (declared: ${declared.join(', ') || 'none'}): update the params of this credential or selection. Nothing was sent or charged.`,
    };
  }
  const choices: Record<string, string[]> = {};
  for (const [name, property] of Object.entries(properties)) {
    if (Array.isArray(property?.enum)) choices[name] = property.enum.map(String);
  }
  for (const [name, value] of Object.entries(given)) {
    if (choices[name] && !choices[name].includes(String(value))) {
      return {
        ok: false,
        message: `The value of ${name} is not one the entry allows (${choices[name].join(', ')}). Nothing was sent or charged.`,
      };
    }
  }
  return { ok: true, values: given, choices };
}
