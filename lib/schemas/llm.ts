import { DEFAULT_PRICE_TABLE } from '../billing/pricing';

/** Shared descriptions of `llm_provider` / `llm_model` for every request schema that takes them. */
export const LLM_PROVIDER_DESCRIPTION =
  '"service": the platform-managed model endpoint, billed from the wallet at the price table rates. "router": a third-party model router with the account\'s own key (set by the operator); its tokens cost the wallet nothing.';

export const LLM_MODEL_DESCRIPTION =
  `With llm_provider "service", one of the models in the operator's price table (otherwise 400 model_not_supported, listing the accepted models); ` +
  `the built-in table: ${DEFAULT_PRICE_TABLE.models.join(', ')} (operators can extend or narrow it with LLM_MODEL_PRICES). ` +
  'With llm_provider "router", any model id the router knows.';
