import type { Migration, MigrationProvider } from 'kysely';
import * as foundation from './0001_foundation';
import * as agentRuntime from './0002_agent_runtime';
import * as socialAutomations from './0003_social_automations';
import * as skillsDirectory from './0004_skills_directory';
import * as moneyHolds from './0005_money_holds';
import * as market from './0007_market';
import * as marketRuns from './0008_market_runs';
import * as customAgents from './0009_custom_agents';
import * as hostedMcp from './0010_hosted_mcp';
import * as agentMarket from './0011_agent_market';
import * as marketRunOpening from './0012_market_run_opening';
import * as jobAdmission from './0013_job_admission';
import * as usageCharge from './0014_usage_charge';
import * as marketCallPath from './0015_market_call_path';
import * as marketRunLeases from './0016_market_run_leases';
import * as marketCallContinuations from './0019_market_call_continuations';
import * as agentToolImages from './0020_agent_tool_images';
import * as webSessions from './0021_web_sessions';
import * as oauth from './0022_oauth';
import * as marketCredentials from './0023_market_credentials';
import * as marketRunWindow from './0024_market_run_window';
import * as oneStatementCharge from './0025_one_statement_charge';
import * as oauthClients from './0026_oauth_clients';
import * as twoStatementCall from './0027_two_statement_call';
import * as credentialBudgets from './0028_credential_budgets';
import * as oauthHardening from './0029_oauth_hardening';
import * as apiKeyBudgets from './0030_api_key_budgets';

const migrations: Record<string, Migration> = {
  '0001_foundation': foundation,
  '0002_agent_runtime': agentRuntime,
  '0003_social_automations': socialAutomations,
  '0004_skills_directory': skillsDirectory,
  '0005_money_holds': moneyHolds,
  '0007_market': market,
  '0008_market_runs': marketRuns,
  '0009_custom_agents': customAgents,
  '0010_hosted_mcp': hostedMcp,
  '0011_agent_market': agentMarket,
  '0012_market_run_opening': marketRunOpening,
  '0013_job_admission': jobAdmission,
  '0014_usage_charge': usageCharge,
  '0015_market_call_path': marketCallPath,
  '0016_market_run_leases': marketRunLeases,
  '0019_market_call_continuations': marketCallContinuations,
  '0020_agent_tool_images': agentToolImages,
  '0021_web_sessions': webSessions,
  '0022_oauth': oauth,
  '0023_market_credentials': marketCredentials,
  '0024_market_run_window': marketRunWindow,
  '0025_one_statement_charge': oneStatementCharge,
  '0026_oauth_clients': oauthClients,
  '0027_two_statement_call': twoStatementCall,
  '0028_credential_budgets': credentialBudgets,
  '0029_oauth_hardening': oauthHardening,
  '0030_api_key_budgets': apiKeyBudgets,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
