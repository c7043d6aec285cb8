/** JSON Schemas shown as people read them: a table of fields (nested objects as dotted names). */

type Schema = Record<string, unknown>;

export interface SchemaField {
  name: string;
  type: string;
  required: boolean;
  description: string;
  /** Enum values, format, bounds, default: what else constrains the value. */
  details: string[];
}

const isObject = (value: unknown): value is Schema => !!value && typeof value === 'object' && !Array.isArray(value);

function typeOf(schema: Schema): string {
  if (Array.isArray(schema.type)) return schema.type.join(' or ');
  if (schema.type === 'array') {
    const items = isObject(schema.items) ? typeOf(schema.items) : 'any';
    return `array of ${items}`;
  }
  if (typeof schema.type === 'string') return schema.type;
  for (const key of ['oneOf', 'anyOf'] as const) {
    if (Array.isArray(schema[key])) return (schema[key] as unknown[]).filter(isObject).map(typeOf).join(' or ');
  }
  if (schema.enum) return 'one of the values';
  if (schema.const !== undefined) return 'constant';
  if (isObject(schema.properties)) return 'object';
  return 'any';
}

function detailsOf(schema: Schema): string[] {
  const details: string[] = [];
  if (Array.isArray(schema.enum)) details.push(`one of: ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`);
  if (schema.const !== undefined) details.push(`always ${JSON.stringify(schema.const)}`);
  if (typeof schema.format === 'string') details.push(`format ${schema.format}`);
  if (typeof schema.pattern === 'string') details.push(`pattern ${schema.pattern}`);
  for (const [key, label] of [
    ['minimum', 'at least'],
    ['maximum', 'at most'],
    ['exclusiveMinimum', 'more than'],
    ['exclusiveMaximum', 'less than'],
    ['minLength', 'at least N characters'],
    ['maxLength', 'at most N characters'],
    ['minItems', 'at least N items'],
    ['maxItems', 'at most N items'],
  ] as const) {
    const value = schema[key];
    if (typeof value === 'number')
      details.push(label.includes('N') ? label.replace('N', String(value)) : `${label} ${value}`);
  }
  if (schema.default !== undefined) details.push(`default ${JSON.stringify(schema.default)}`);
  if (schema.writeOnly === true || schema.format === 'password') details.push('secret');
  return details;
}

/** The fields of an object schema, depth-first, nested objects (and arrays of objects) as dotted names. */
export function schemaFields(schema: unknown, prefix = '', depth = 0): SchemaField[] {
  if (!isObject(schema) || !isObject(schema.properties) || depth > 6) return [];
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  const fields: SchemaField[] = [];
  for (const [name, raw] of Object.entries(schema.properties)) {
    const property = isObject(raw) ? raw : {};
    const path = prefix ? `${prefix}.${name}` : name;
    fields.push({
      name: path,
      type: typeOf(property),
      required: required.has(name),
      description:
        typeof property.description === 'string'
          ? property.description
          : typeof property.title === 'string'
            ? property.title
            : '',
      details: detailsOf(property),
    });
    const nested = property.type === 'array' && isObject(property.items) ? property.items : property;
    fields.push(...schemaFields(nested, property.type === 'array' ? `${path}[]` : path, depth + 1));
  }
  return fields;
}

export function SchemaTable(props: { schema: unknown; caption: string; empty?: string }) {
  const fields = schemaFields(props.schema);
  if (fields.length === 0) return <p class="meta">{props.empty ?? 'No fields.'}</p>;
  return (
    <table>
      <caption>{props.caption}</caption>
      <thead>
        <tr>
          <th scope="col">Field</th>
          <th scope="col">Type</th>
          <th scope="col">Required</th>
          <th scope="col">Description</th>
        </tr>
      </thead>
      <tbody>
        {fields.map((field) => (
          <tr>
            <th scope="row">
              <code>{field.name}</code>
            </th>
            <td>{field.type}</td>
            <td>{field.required ? 'yes' : 'no'}</td>
            <td>
              {field.description}
              {field.details.length > 0 && (
                <span class="meta">{`${field.description ? ' — ' : ''}${field.details.join('; ')}`}</span>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A JSON value, pretty-printed (focusable: a long one scrolls). */
export function JsonBlock(props: { value: unknown }) {
  return (
    <pre tabindex={0}>
      <code>{JSON.stringify(props.value, null, 2)}</code>
    </pre>
  );
}
