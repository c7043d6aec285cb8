import path from 'node:path';

/**
 * The real sample (385 public skills, 18 repositories) beside the clone; read in place, never
 * copied into this tree. Only the evaluation (`npm run eval:skills`) and `npm run bench:skills`
 * use it; the tests have their own catalogue (test/support/fixtures/skills-catalogue.jsonl).
 */
export const SKILLS_SAMPLE_PATH = path.resolve(__dirname, '../../shared/data/skills/skills.jsonl');

export interface SkillsQuery {
  q: string;
  /** externalIds that must all be among the top 5 of plain search. */
  mustInTop5: string[];
}

/** Keyword queries over the real sample, each with the skills expected in the top 5 (recall@5 in eval:skills and bench:skills). */
export const SKILLS_QUERIES: SkillsQuery[] = [
  { q: 'pdf', mustInTop5: ['anthropics/skills/skills/pdf'] },
  { q: 'terraform test', mustInTop5: ['hashicorp/agent-skills/terraform/code-generation/skills/terraform-test'] },
  { q: 'remotion captions', mustInTop5: ['remotion-dev/skills/skills/remotion-captions'] },
  {
    q: 'code review',
    mustInTop5: [
      'getsentry/skills/skills/code-review',
      'anthropics/knowledge-work-plugins/engineering/skills/code-review',
    ],
  },
  { q: 'systematic debugging', mustInTop5: ['obra/superpowers/skills/systematic-debugging'] },
  { q: 'git worktrees', mustInTop5: ['obra/superpowers/skills/using-git-worktrees'] },
  { q: 'mcp server', mustInTop5: ['anthropics/skills/skills/mcp-builder'] },
  { q: 'xlsx spreadsheet', mustInTop5: ['anthropics/skills/skills/xlsx'] },
  { q: 'semgrep rule', mustInTop5: ['trailofbits/skills/plugins/semgrep-rule-creator/skills/semgrep-rule-creator'] },
  { q: 'expo router', mustInTop5: ['expo/skills/plugins/expo/skills/expo-router'] },
  { q: 'matplotlib', mustInTop5: ['K-Dense-AI/claude-scientific-skills/scientific-skills/matplotlib'] },
  { q: 'scikit learn', mustInTop5: ['K-Dense-AI/claude-scientific-skills/scientific-skills/scikit-learn'] },
  { q: 'supabase postgres', mustInTop5: ['supabase/agent-skills/skills/supabase-postgres-best-practices'] },
  { q: 'react best practices', mustInTop5: ['vercel-labs/agent-skills/skills/react-best-practices'] },
  {
    q: 'slack gif',
    mustInTop5: ['anthropics/skills/skills/slack-gif-creator', 'ComposioHQ/awesome-claude-skills/slack-gif-creator'],
  },
  { q: 'uipath troubleshoot', mustInTop5: ['UiPath/skills/skills/uipath-troubleshoot'] },
  { q: 'playwright web app testing', mustInTop5: ['anthropics/skills/skills/webapp-testing'] },
  { q: 'django performance', mustInTop5: ['getsentry/skills/skills/django-perf-review'] },
  {
    q: 'smart contract vulnerabilities',
    mustInTop5: ['trailofbits/skills/plugins/building-secure-contracts/skills/algorand-vulnerability-scanner'],
  },
  { q: 'youtube download', mustInTop5: ['ComposioHQ/awesome-claude-skills/video-downloader'] },
  { q: 'invoice', mustInTop5: ['ComposioHQ/awesome-claude-skills/invoice-organizer'] },
  { q: 'packer ami', mustInTop5: ['hashicorp/agent-skills/packer/builders/skills/aws-ami-builder'] },
  {
    q: 'zoom meeting bot',
    mustInTop5: ['anthropics/knowledge-work-plugins/partner-built/zoom-plugin/skills/build-zoom-bot'],
  },
  { q: 'changelog from git commits', mustInTop5: ['ComposioHQ/awesome-claude-skills/changelog-generator'] },
  { q: 'rdkit molecules', mustInTop5: ['K-Dense-AI/claude-scientific-skills/scientific-skills/rdkit'] },
  {
    q: 'nextflow pipeline',
    mustInTop5: ['anthropics/knowledge-work-plugins/bio-research/skills/nextflow-development'],
  },
  { q: 'brand guidelines', mustInTop5: ['anthropics/skills/skills/brand-guidelines'] },
  { q: 'test driven development', mustInTop5: ['obra/superpowers/skills/test-driven-development'] },
  { q: 'deploy to vercel', mustInTop5: ['vercel-labs/agent-skills/skills/deploy-to-vercel'] },
  { q: 'notion meeting', mustInTop5: ['openai/skills/skills/.curated/notion-meeting-intelligence'] },
];

/** Searches as typed: the last word is incomplete (prefix match). */
export const PREFIX_QUERIES: SkillsQuery[] = [
  { q: 'remotion capt', mustInTop5: ['remotion-dev/skills/skills/remotion-captions'] },
  { q: 'matplot', mustInTop5: ['K-Dense-AI/claude-scientific-skills/scientific-skills/matplotlib'] },
  { q: 'terraform sty', mustInTop5: ['hashicorp/agent-skills/terraform/code-generation/skills/terraform-style-guide'] },
];

/** Small typos in names (trigram similarity). */
export const TYPO_QUERIES: SkillsQuery[] = [
  { q: 'matplotlb', mustInTop5: ['K-Dense-AI/claude-scientific-skills/scientific-skills/matplotlib'] },
  { q: 'brainstroming', mustInTop5: ['obra/superpowers/skills/brainstorming'] },
  { q: 'nextflw', mustInTop5: ['anthropics/knowledge-work-plugins/bio-research/skills/nextflow-development'] },
  { q: 'semgerp rule', mustInTop5: ['trailofbits/skills/plugins/semgrep-rule-creator/skills/semgrep-rule-creator'] },
];
