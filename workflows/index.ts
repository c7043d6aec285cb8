export { scrapeWorkflow } from './scrape';
