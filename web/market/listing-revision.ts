import type { McpSubmission } from '../../db/repos/market-mcp';
import type { StoredValidation } from '../../db/repos/market-validations';
import type { EventVerificationView } from '../../api/services/market/listing';
import { microsToUsd } from '../../lib/money';

/**
 * The listing wizard's form values prefilled from the live listing a revision revises, as the form
 * would send them: name, description, pricing, each tool the new validation found (listed, named and
 * priced as live; a tool the live listing lacks starts unlisted), the verified events' titles and
 * prices, and the consumer parameters of its requiredUserParamsSchema.
 */
export function revisionValues(
  listing: McpSubmission,
  validation: StoredValidation,
  verification: EventVerificationView | null,
): URLSearchParams {
  const values = new URLSearchParams({ name: listing.name, description: listing.description ?? '' });
  const events = verification?.complete ? verification.eventNames : [];
  const strategy = listing.monetizationStrategy;
  // Per-event pricing needs verified events; until then the form offers the other two.
  values.set('monetizationStrategy', strategy === 'provider_event' && !events.length ? 'tool_call_fixed' : strategy);

  const tools = new Map(listing.tools.map((t) => [t.toolName, t]));
  validation.discovery.tools.forEach((tool, i) => {
    const live = tools.get(tool.name);
    values.set(`tool.${i}.name`, tool.name);
    if (live?.isEnabled) values.set(`tool.${i}.listed`, 'on');
    values.set(`tool.${i}.displayName`, live?.displayName ?? tool.name);
    values.set(`tool.${i}.price`, live?.clientPriceMicros != null ? String(microsToUsd(live.clientPriceMicros)) : '');
  });

  const priced = new Map(listing.pricingEvents.map((e) => [e.eventName, e]));
  events.forEach((event, i) => {
    const live = priced.get(event);
    values.set(`event.${i}.name`, event);
    values.set(`event.${i}.title`, live?.title ?? '');
    values.set(`event.${i}.price`, live ? String(microsToUsd(live.unitPriceMicros)) : '');
  });

  const schema = listing.requiredUserParamsSchema as {
    properties?: Record<string, { description?: unknown; enum?: unknown; writeOnly?: unknown }>;
    required?: unknown;
  };
  const required = Array.isArray(schema.required) ? schema.required : [];
  Object.entries(schema.properties ?? {}).forEach(([name, property], i) => {
    values.set(`uparam.${i}.name`, name);
    values.set(`uparam.${i}.description`, typeof property.description === 'string' ? property.description : '');
    values.set(`uparam.${i}.choices`, Array.isArray(property.enum) ? property.enum.join(', ') : '');
    if (property.writeOnly === true) values.set(`uparam.${i}.secret`, 'on');
    if (required.includes(name)) values.set(`uparam.${i}.required`, 'on');
  });
  return values;
}
