import path from 'node:path';
import type { SkillsQuery } from '../../scripts/skills-sample-queries';

export type { SkillsQuery };

/**
 * The catalogue the skills tests import: 34 hand-written skills in the import format (6 owners,
 * 31 with a SKILL.md), kept in this tree so the tests need nothing outside the clone. The
 * relevance check over the real 385-skill sample is an evaluation instead: `npm run eval:skills`.
 */
export const SKILLS_CATALOGUE_PATH = path.resolve(__dirname, 'fixtures', 'skills-catalogue.jsonl');
export const SKILLS_CATALOGUE_COUNT = 34;
export const SKILLS_CATALOGUE_WITH_SKILL_MD = 31;

const NW = (skill: string) => `northwind-ai/document-skills/skills/${skill}`;
const HB = (skill: string) => `harbor-devops/infra-skills/${skill}`;
const LT = (skill: string) => `lumen-tools/engineering-skills/skills/${skill}`;
const OF = (skill: string) => `openfield-lab/science-skills/skills/${skill}`;
const QW = (skill: string) => `quillworks/creative-skills/skills/${skill}`;
const VP = (skill: string) => `vectorpath/web-skills/skills/${skill}`;

export const CATALOGUE_IDS = {
  pdfToolkit: NW('pdf-toolkit'),
  providerAcceptanceTests: HB('terraform/skills/provider-acceptance-tests'),
  propertyBasedTesting: LT('property-based-testing'),
  matplotlib: OF('matplotlib-charts'),
};

/** Keyword queries over the catalogue, each with the skills that must appear in the top 5 of plain search. */
export const CATALOGUE_QUERIES: SkillsQuery[] = [
  { q: 'pdf', mustInTop5: [NW('pdf-toolkit')] },
  { q: 'terraform test', mustInTop5: [HB('terraform/skills/terraform-test-runner')] },
  { q: 'code review', mustInTop5: [LT('code-review-checklist'), LT('responding-to-review')] },
  { q: 'root cause debugging', mustInTop5: [LT('root-cause-debugging')] },
  { q: 'git worktrees', mustInTop5: [LT('git-worktree-manager')] },
  { q: 'mcp server', mustInTop5: [VP('mcp-server-builder')] },
  { q: 'xlsx spreadsheet', mustInTop5: [NW('spreadsheet-wrangler')] },
  { q: 'semgrep rule', mustInTop5: [VP('semgrep-rule-writer')] },
  { q: 'matplotlib', mustInTop5: [OF('matplotlib-charts')] },
  { q: 'scikit learn', mustInTop5: [OF('scikit-learn-models')] },
  { q: 'react performance', mustInTop5: [VP('react-performance')] },
  { q: 'slack gif', mustInTop5: [QW('gif-maker')] },
  { q: 'kubernetes crashloop', mustInTop5: [HB('kubernetes/skills/pod-crashloop-debugger')] },
  { q: 'helm chart', mustInTop5: [HB('kubernetes/skills/helm-chart-doctor')] },
  { q: 'invoice', mustInTop5: [NW('invoice-extractor')] },
  { q: 'packer ami', mustInTop5: [HB('packer/skills/machine-image-builder')] },
  { q: 'changelog from git commits', mustInTop5: [LT('changelog-writer')] },
  { q: 'rdkit molecules', mustInTop5: [OF('molecule-toolkit')] },
  { q: 'nextflow pipeline', mustInTop5: [OF('nextflow-pipelines')] },
  { q: 'brand guidelines', mustInTop5: [QW('brand-voice')] },
  { q: 'deploy to vercel', mustInTop5: [VP('deploy-preview')] },
  { q: 'meeting notes', mustInTop5: [QW('meeting-notes')] },
  { q: 'smart contract vulnerabilities', mustInTop5: [VP('smart-contract-audit')] },
  { q: 'property based testing', mustInTop5: [LT('property-based-testing')] },
];

/** Searches as typed: the last word is incomplete (prefix match). */
export const CATALOGUE_PREFIX_QUERIES: SkillsQuery[] = [
  { q: 'matplot', mustInTop5: [OF('matplotlib-charts')] },
  { q: 'terraform sty', mustInTop5: [HB('terraform/skills/terraform-style-check')] },
  { q: 'helm cha', mustInTop5: [HB('kubernetes/skills/helm-chart-doctor')] },
];

/** Small typos in names (trigram similarity). */
export const CATALOGUE_TYPO_QUERIES: SkillsQuery[] = [
  { q: 'matplotlb', mustInTop5: [OF('matplotlib-charts')] },
  { q: 'brainstroming', mustInTop5: [QW('brainstorming-partner')] },
  { q: 'nextflw', mustInTop5: [OF('nextflow-pipelines')] },
  { q: 'semgerp rule', mustInTop5: [VP('semgrep-rule-writer')] },
];
