// Kept for the market's files (branch t35-market) until they import the new path; the lead removes it after the merge.
export { MCP_SCOPE, type OAuthServer } from './oauth/authorization-server';
