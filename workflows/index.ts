export { scrapeWorkflow } from './scrape';
export { agentWorkflow } from './agent';
export { automationRunWorkflow } from './automation-run';
export { skillsRefreshWorkflow } from './skills-refresh';
export { marketDiscoveryWorkflow, marketValidationWorkflow } from './market-source';
