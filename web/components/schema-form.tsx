/**
 * Form fields generated from a JSON Schema's top-level properties, and the values read back from a
 * posted form: strings as text (secrets as password fields), numbers as numbers, booleans and enums
 * as choices, anything else (objects, arrays) as JSON in a text area.
 */

type Schema = Record<string, unknown>;
const isObject = (value: unknown): value is Schema => !!value && typeof value === 'object' && !Array.isArray(value);

type Kind = 'text' | 'secret' | 'number' | 'integer' | 'boolean' | 'enum' | 'json';

export interface FormField {
  name: string;
  kind: Kind;
  required: boolean;
  description: string;
  choices: string[];
}

function kindOf(property: Schema): Kind {
  if (Array.isArray(property.enum) && property.enum.every((v) => typeof v === 'string')) return 'enum';
  const type = Array.isArray(property.type) ? property.type.find((t) => t !== 'null') : property.type;
  if (type === 'string') return property.writeOnly === true || property.format === 'password' ? 'secret' : 'text';
  if (type === 'integer') return 'integer';
  if (type === 'number') return 'number';
  if (type === 'boolean') return 'boolean';
  return 'json';
}

export function formFields(schema: unknown): FormField[] {
  if (!isObject(schema) || !isObject(schema.properties)) return [];
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  return Object.entries(schema.properties).map(([name, raw]) => {
    const property = isObject(raw) ? raw : {};
    return {
      name,
      kind: kindOf(property),
      required: required.has(name),
      description:
        typeof property.description === 'string'
          ? property.description
          : typeof property.title === 'string'
            ? property.title
            : '',
      choices: Array.isArray(property.enum) ? (property.enum as string[]) : [],
    };
  });
}

/** The values of a posted form for the schema's fields (under `prefix`), or the problems with them. */
export function readFields(
  schema: unknown,
  form: URLSearchParams,
  prefix: string,
): { values: Record<string, unknown>; problems: string[] } {
  const values: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const field of formFields(schema)) {
    const raw = form.get(prefix + field.name) ?? '';
    if (raw === '') {
      if (field.required) problems.push(`${field.name} is required`);
      continue;
    }
    switch (field.kind) {
      case 'number':
      case 'integer': {
        const n = Number(raw);
        if (!Number.isFinite(n) || (field.kind === 'integer' && !Number.isInteger(n)))
          problems.push(`${field.name} is not ${field.kind === 'integer' ? 'a whole number' : 'a number'}`);
        else values[field.name] = n;
        break;
      }
      case 'boolean':
        values[field.name] = raw === 'true';
        break;
      case 'json':
        try {
          values[field.name] = JSON.parse(raw);
        } catch {
          problems.push(`${field.name} is not valid JSON`);
        }
        break;
      default:
        values[field.name] = raw;
    }
  }
  return { values, problems };
}

/** The inputs of a schema's fields; `values` are the texts to show again (secrets are never shown again). */
export function SchemaFields(props: {
  schema: unknown;
  prefix: string;
  idPrefix: string;
  values?: URLSearchParams | null;
}) {
  const fields = formFields(props.schema);
  return (
    <>
      {fields.map((field) => {
        const id = `${props.idPrefix}-${field.name.replace(/[^A-Za-z0-9_-]/g, '_')}`;
        const name = props.prefix + field.name;
        const value = field.kind === 'secret' ? '' : (props.values?.get(name) ?? '');
        const hint = field.description ? `${id}-hint` : undefined;
        const common = { id, name, required: field.required, 'aria-describedby': hint };
        return (
          <div class="field">
            <label for={id}>
              {field.name}
              {field.required ? ' (required)' : ' (optional)'}
            </label>
            {field.kind === 'enum' || field.kind === 'boolean' ? (
              <select {...common}>
                {!field.required && <option value="">(not set)</option>}
                {(field.kind === 'boolean' ? ['true', 'false'] : field.choices).map((choice) => (
                  <option value={choice} selected={choice === value}>
                    {choice}
                  </option>
                ))}
              </select>
            ) : field.kind === 'json' ? (
              <textarea {...common} rows={4}>
                {value}
              </textarea>
            ) : (
              <input
                {...common}
                type={
                  field.kind === 'secret'
                    ? 'password'
                    : field.kind === 'number' || field.kind === 'integer'
                      ? 'number'
                      : 'text'
                }
                step={field.kind === 'number' ? 'any' : undefined}
                autocomplete={field.kind === 'secret' ? 'off' : undefined}
                value={value}
              />
            )}
            {hint && (
              <p class="meta" id={hint}>
                {field.description}
                {field.kind === 'json' ? ' (JSON)' : ''}
              </p>
            )}
          </div>
        );
      })}
    </>
  );
}
