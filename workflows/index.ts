export { scrapeWorkflow } from './scrape';
export { agentWorkflow } from './agent';
export { automationRunWorkflow } from './automation-run';
export { skillsRefreshWorkflow } from './skills-refresh';
export { discoverToolsWorkflow } from './tools-discovery';
export { marketDiscoveryWorkflow, marketValidationWorkflow } from './market-source';
export { marketRunWorkflow } from './market-run';
export { customAgentWorkflow } from './custom-agent';
