export { scrapeWorkflow } from './scrape';
export { agentWorkflow } from './agent';
