import * as eventVerifications from '../../../db/repos/market-event-verifications';
import * as agents from '../../../db/repos/market-agents';
import * as icons from '../../../db/repos/market-icons';
import * as mcp from '../../../db/repos/market-mcp';
import * as submissions from '../../../db/repos/market-submissions';
import * as toolCalls from '../../../db/repos/market-tool-calls';
import * as validations from '../../../db/repos/market-validations';
import * as providerRevenue from '../../../db/repos/provider-revenue';
import * as users from '../../../db/repos/users';

/**
 * The market's reads (and the few plain writes) that its entry points — the routes of api/routes/market/,
 * the hosted endpoint api/mcp/market.ts and the pages of web/market/ — present as the repositories return
 * them, with no rule in between: the entry points call these, never db/repos, so every market rule that
 * appears later has one place to go (this folder).
 */

/** A live approved tool entry (the catalog's entry page, try a tool, GET /mcp-market/entries/{id}). */
export const findPublicMcpEntry: typeof mcp.findPublicMcpEntry = (...args) => mcp.findPublicMcpEntry(...args);
/** A live approved agent (the catalog's agent page, an order). */
export const findPublicAgent: typeof agents.findPublicAgent = (...args) => agents.findPublicAgent(...args);
/** The caller's own tool submission, and several with their details. */
export const findMcpSubmission: typeof mcp.findMcpSubmission = (...args) => mcp.findMcpSubmission(...args);
export const findMcpSubmissions: typeof mcp.findMcpSubmissions = (...args) => mcp.findMcpSubmissions(...args);
/** A submission's provider configuration, unsealed (masked before it is shown). */
export const unsealStaticConfig: typeof mcp.unsealStaticConfig = (...args) => mcp.unsealStaticConfig(...args);
/** The caller's submissions of one market, newest first. */
export const listOwnSubmissions: typeof submissions.listOwnSubmissions = (...args) =>
  submissions.listOwnSubmissions(...args);
/** DELETE /submissions/{id}: the caller's draft. */
export const deleteSubmission: typeof submissions.deleteSubmission = (...args) => submissions.deleteSubmission(...args);
/** A validation run of the caller's, and the reports of several. */
export const findValidation: typeof validations.findValidation = (...args) => validations.findValidation(...args);
export const findValidationReports: typeof validations.findValidationReports = (...args) =>
  validations.findValidationReports(...args);
/** An event verification of the caller's. */
export const findEventVerification: typeof eventVerifications.findEventVerification = (...args) =>
  eventVerifications.findEventVerification(...args);
/** An uploaded listing icon: stored, and read back. */
export const insertIcon: typeof icons.insertIcon = (...args) => icons.insertIcon(...args);
export const readIcon: typeof icons.readIcon = (...args) => icons.readIcon(...args);
/** The account of a live API key (the hosted endpoint's and the catalog's API-key callers). */
export const findApiKeyOwner: typeof toolCalls.findApiKeyOwner = (...args) => toolCalls.findApiKeyOwner(...args);
/** The owners' e-mail addresses (shown to the review queue and on listings). */
export const findEmails: typeof users.findEmails = (...args) => users.findEmails(...args);
/** The provider console's revenue views. */
export const listProviderRevenue: typeof toolCalls.listProviderRevenue = (...args) =>
  toolCalls.listProviderRevenue(...args);
export const revenuePerDay: typeof providerRevenue.revenuePerDay = (...args) => providerRevenue.revenuePerDay(...args);
export const revenuePerListing: typeof providerRevenue.revenuePerListing = (...args) =>
  providerRevenue.revenuePerListing(...args);
export const revenuePerEvent: typeof providerRevenue.revenuePerEvent = (...args) =>
  providerRevenue.revenuePerEvent(...args);

/** The catalogue's orders, as the pages offer them. */
export { CATALOGUE_SORTS } from '../../../db/repos/market-listings';
