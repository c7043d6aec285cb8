import { frontmatterString, parseFrontmatter, type YamlValue } from './frontmatter';
import { MAX_SKILL_MD_CHARS, normalizeItem, normalizeTags, type CatalogueItem } from './item';

/**
 * The GitHub source of the skills directory: for each configured repository it reads the default
 * branch and stars (GET /repos/{owner}/{repo}), lists the folders holding a SKILL.md
 * (GET /repos/{owner}/{repo}/git/trees/{branch}?recursive=1), fetches each SKILL.md through the
 * contents API, parses its frontmatter (name, description, version or metadata.version, tags)
 * and upserts the items. When the listing was complete, items of that repository that vanished
 * upstream are removed. The API base is GITHUB_API_BASE; GITHUB_TOKEN, when set, is sent as a
 * bearer token.
 */
export interface GithubSourceOptions {
  apiBase: string;
  token: string | null;
  timeoutMs?: number;
  /** Parallel SKILL.md downloads per repository. */
  concurrency?: number;
}

export class GithubApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Licenses under which SKILL.md text may be stored and served; other skills keep only name and description. */
const CONTENT_LICENSES = new Set([
  'MIT',
  'Apache-2.0',
  'BSD-2-Clause',
  'BSD-3-Clause',
  'ISC',
  '0BSD',
  'CC0-1.0',
  'CC-BY-4.0',
  'Unlicense',
]);

/** Keyword rules for topic tags, in priority order; explicit frontmatter tags come first. */
const TAG_RULES: [string, RegExp][] = [
  ['pdf', /\bpdfs?\b/],
  ['docx', /\bdocx\b|\bword documents?\b/],
  ['xlsx', /\bxlsx\b|\bexcel\b/],
  ['pptx', /\bpptx\b|\bpowerpoint\b/],
  ['mcp', /\bmcp\b|model context protocol/],
  ['terraform', /\bterraform\b/],
  ['security', /\bsecurity\b|\bvulnerab|\baudit/],
  ['testing', /\btests?\b|\btesting\b|\bqa\b/],
  ['debugging', /\bdebug/],
  ['code-review', /code[- ]review|\breview(ing)? (the )?code\b/],
  ['git', /\bgit\b|\bcommits?\b|\bbranch(es)?\b/],
  ['github', /\bgithub\b|\bpull requests?\b|\bgh\b/],
  ['frontend', /\bfrontend\b|\bfront-end\b|\bui\b|\bcss\b|\bhtml\b/],
  ['react', /\breact\b|\bnext\.?js\b/],
  ['mobile', /\bmobile\b|\bios\b|\bandroid\b|\bexpo\b/],
  ['design', /\bdesign/],
  ['devops', /\bdeploy|\bci\b|\bci\/cd\b|\bdocker\b|\bkubernetes\b|\binfrastructure\b/],
  ['cloud', /\bcloud\b|\baws\b|\bazure\b|\bgcp\b|\bvercel\b|\bcloudflare\b/],
  ['api', /\bapis?\b|\brest\b|\bsdk\b/],
  ['agents', /\bagents?\b|\bsubagents?\b/],
  ['llm', /\bllms?\b|\bprompts?\b|\bclaude\b|\bopenai\b/],
  ['python', /\bpython\b|\bdjango\b|\bpandas\b/],
  ['typescript', /\btypescript\b|\bjavascript\b|\bnode\.?js\b/],
  ['data-analysis', /\bdata analysis\b|\banalytics?\b|\bdataframes?\b/],
  ['visualization', /\bvisuali[sz]|\bcharts?\b|\bplots?\b|\bdashboards?\b/],
  ['machine-learning', /\bmachine learning\b|\bml\b|\bneural\b|\bmodels? training\b/],
  ['documents', /\bdocuments?\b/],
  ['documentation', /\bdocumentation\b|\bdocs\b|\breadme\b/],
  ['writing', /\bwrit(e|ing)\b|\bblog\b/],
  ['planning', /\bplan(s|ning)?\b/],
  ['browser', /\bbrowsers?\b|\bplaywright\b|\bpuppeteer\b/],
  ['scraping', /\bscrap(e|ing|er)\b|\bcrawl/],
  ['automation', /\bautomat/],
  ['sql', /\bsql\b|\bpostgres|\bdatabases?\b/],
  ['video', /\bvideos?\b/],
  ['audio', /\baudio\b|\bspeech\b|\bvoice\b/],
  ['images', /\bimages?\b|\bgifs?\b|\bphotos?\b/],
  ['marketing', /\bmarketing\b|\bcampaigns?\b|\bseo\b/],
  ['finance', /\bfinanc|\binvoices?\b|\baccounting\b/],
  ['communication', /\bslack\b|\bemails?\b|\bmessag/],
  ['performance', /\bperformance\b|\boptimi[sz]/],
  ['search', /\bsearch\b/],
];

export function deriveTags(explicit: YamlValue | undefined, text: string): string[] {
  const given = Array.isArray(explicit)
    ? explicit.filter((t): t is string => typeof t === 'string')
    : typeof explicit === 'string'
      ? explicit.split(',')
      : [];
  const tags = normalizeTags(given);
  const haystack = text.toLowerCase();
  for (const [tag, pattern] of TAG_RULES) {
    if (tags.length >= 5) break;
    if (!tags.includes(tag) && pattern.test(haystack)) tags.push(tag);
  }
  return tags.slice(0, 5);
}

interface RepoInfo {
  name: string;
  owner: { login: string };
  html_url?: string;
  default_branch: string;
  stargazers_count?: number;
  license?: { spdx_id?: string | null } | null;
}

interface TreeResponse {
  truncated?: boolean;
  tree: { path: string; type: string }[];
}

interface ContentResponse {
  content?: string;
  encoding?: string;
  download_url?: string | null;
}

function client(options: GithubSourceOptions) {
  const base = options.apiBase.replace(/\/+$/, '');
  const headers: Record<string, string> = {
    accept: 'application/vnd.github+json',
    'x-github-api-version': '2022-11-28',
    'user-agent': 'scrape-platform-skills-directory',
  };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  const request = async (url: string, accept?: string): Promise<Response> => {
    const response = await fetch(url, {
      headers: accept ? { ...headers, accept } : headers,
      signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
      redirect: 'follow',
    });
    if (!response.ok) {
      const detail = (await response.text().catch(() => '')).slice(0, 200);
      throw new GithubApiError(
        response.status,
        `GitHub API ${response.status} for ${new URL(url).pathname}${detail ? `: ${detail}` : ''}`,
      );
    }
    return response;
  };
  return {
    json: async <T>(path: string): Promise<T> => (await request(`${base}${path}`)).json() as Promise<T>,
    raw: async (url: string): Promise<string> => (await request(url, 'application/vnd.github.raw')).text(),
  };
}

const encodePath = (path: string) => path.split('/').map(encodeURIComponent).join('/');

async function mapLimited<T, R>(values: readonly T[], limit: number, fn: (value: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(values.length);
  let next = 0;
  const worker = async () => {
    while (next < values.length) {
      const index = next++;
      results[index] = await fn(values[index]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, values.length) }, worker));
  return results;
}

/** Builds the catalogue item of one SKILL.md. */
export function skillItemFromMarkdown(input: {
  owner: string;
  repo: string;
  repositoryUrl: string;
  branch: string;
  path: string;
  markdown: string;
  stars: number | null;
  repoLicense: string | null;
}): CatalogueItem {
  const folder = input.path.includes('/') ? input.path.slice(0, input.path.lastIndexOf('/')) : '';
  const { data } = parseFrontmatter(input.markdown);
  const metadata =
    data.metadata && typeof data.metadata === 'object' && !Array.isArray(data.metadata) ? data.metadata : {};
  const name = frontmatterString(data.name) ?? (folder ? folder.slice(folder.lastIndexOf('/') + 1) : input.repo);
  const description = frontmatterString(data.description);
  const declared = frontmatterString(data.license);
  const license = declared && /^[A-Za-z0-9.+-]+$/.test(declared) ? declared : input.repoLicense;
  return normalizeItem({
    provider: 'github',
    externalId: [input.owner, input.repo, folder].filter(Boolean).join('/'),
    name: name.slice(0, 200),
    description: description ? description.slice(0, 8_000) : null,
    repositoryUrl: input.repositoryUrl,
    githubOwner: input.owner,
    githubRepo: input.repo,
    sourceUrl: `${input.repositoryUrl}/blob/${encodePath(input.branch)}/${encodePath(input.path)}`,
    version: (frontmatterString(data.version) ?? frontmatterString(metadata.version))?.slice(0, 64) ?? null,
    skillMdContent: license && CONTENT_LICENSES.has(license) ? input.markdown.slice(0, MAX_SKILL_MD_CHARS) : null,
    tags: deriveTags(data.tags ?? metadata.tags, `${name} ${folder} ${description ?? ''}`),
    stars: input.stars,
    license,
  });
}

export interface RepositoryListing {
  owner: string;
  repo: string;
  branch: string;
  items: CatalogueItem[];
  /** False when GitHub truncated the tree; then nothing is deleted. */
  complete: boolean;
  /** SKILL.md files that could not be fetched (they are neither updated nor deleted). */
  failed: { path: string; error: string }[];
}

export async function listRepositorySkills(options: GithubSourceOptions, spec: string): Promise<RepositoryListing> {
  const [ownerPart, repoPart] = spec.split('/');
  const api = client(options);
  const info = await api.json<RepoInfo>(`/repos/${encodeURIComponent(ownerPart)}/${encodeURIComponent(repoPart)}`);
  const owner = info.owner?.login ?? ownerPart;
  const repo = info.name ?? repoPart;
  const branch = info.default_branch || 'main';
  const repositoryUrl = (info.html_url ?? `https://github.com/${owner}/${repo}`).replace(/\/+$/, '');
  const spdx = info.license?.spdx_id;
  const repoLicense = spdx && spdx !== 'NOASSERTION' ? spdx : null;
  const tree = await api.json<TreeResponse>(
    `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/git/trees/${encodeURIComponent(branch)}?recursive=1`,
  );
  const paths = tree.tree
    .filter((e) => e.type === 'blob' && /(^|\/)SKILL\.md$/.test(e.path))
    .map((e) => e.path)
    .sort();
  const failed: RepositoryListing['failed'] = [];
  const fetched = await mapLimited(paths, options.concurrency ?? 4, async (path) => {
    try {
      const content = await api.json<ContentResponse>(
        `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/contents/${encodePath(path)}?ref=${encodeURIComponent(branch)}`,
      );
      let markdown: string;
      if (content.encoding === 'base64' && typeof content.content === 'string' && content.content !== '') {
        markdown = Buffer.from(content.content, 'base64').toString('utf8');
      } else if (content.download_url) {
        markdown = await api.raw(content.download_url); // Files over 1 MB come without inline content.
      } else {
        throw new Error('the contents API returned no content');
      }
      return skillItemFromMarkdown({
        owner,
        repo,
        repositoryUrl,
        branch,
        path,
        markdown: markdown.replace(/\u0000/g, ''),
        stars: info.stargazers_count ?? null,
        repoLicense,
      });
    } catch (err) {
      failed.push({ path, error: err instanceof Error ? err.message : String(err) });
      return null;
    }
  });
  return {
    owner,
    repo,
    branch,
    items: fetched.filter((i): i is CatalogueItem => i !== null),
    complete: !tree.truncated,
    failed,
  };
}
