import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback fake of the parts of the GitHub REST API the skills directory reads:
 *   GET /repos/{owner}/{repo}                              (default_branch, stargazers_count, license)
 *   GET /repos/{owner}/{repo}/git/trees/{branch}?recursive=1
 *   GET /repos/{owner}/{repo}/contents/{path}?ref={branch} (base64 content)
 * Repositories live in memory and can be changed between refreshes.
 */
export interface FakeRepo {
  defaultBranch?: string;
  stars?: number;
  license?: string | null;
  /** path -> file text */
  files: Record<string, string>;
  /** Serve the tree as truncated (GitHub does so for very large repositories). */
  truncated?: boolean;
}

export interface FakeGithubRequest {
  method: string;
  path: string;
  authorization: string | undefined;
}

export interface FakeGithub {
  /** The API base, e.g. http://127.0.0.1:PORT/api/v3 (a path prefix, like GitHub Enterprise). */
  apiBase: string;
  requests: FakeGithubRequest[];
  setRepo(fullName: string, repo: FakeRepo): void;
  removeRepo(fullName: string): void;
  close(): Promise<void>;
}

const PREFIX = '/api/v3';

export async function startFakeGithub(options: { requireToken?: string } = {}): Promise<FakeGithub> {
  const repos = new Map<string, FakeRepo>();
  const requests: FakeGithubRequest[] = [];

  const send = (response: http.ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    response.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
    });
    response.end(text);
  };
  const notFound = (response: http.ServerResponse) =>
    send(response, 404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' });

  const server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    requests.push({
      method: request.method ?? 'GET',
      path: url.pathname + url.search,
      authorization: request.headers.authorization,
    });
    if (options.requireToken && request.headers.authorization !== `Bearer ${options.requireToken}`) {
      send(response, 401, { message: 'Bad credentials' });
      return;
    }
    if (request.method !== 'GET' || !url.pathname.startsWith(`${PREFIX}/repos/`)) return notFound(response);
    const parts = url.pathname.slice(`${PREFIX}/repos/`.length).split('/').map(decodeURIComponent);
    const [owner, name, kind, ...rest] = parts;
    const fullName = `${owner}/${name}`;
    const repo = repos.get(fullName);
    if (!repo) return notFound(response);
    const branch = repo.defaultBranch ?? 'main';
    if (kind === undefined) {
      send(response, 200, {
        name,
        full_name: fullName,
        owner: { login: owner },
        html_url: `https://github.com/${fullName}`,
        default_branch: branch,
        stargazers_count: repo.stars ?? 0,
        license: repo.license ? { spdx_id: repo.license, key: repo.license.toLowerCase() } : null,
      });
      return;
    }
    if (kind === 'git' && rest[0] === 'trees') {
      if (rest.slice(1).join('/') !== branch) return notFound(response);
      const dirs = new Set<string>();
      for (const path of Object.keys(repo.files)) {
        const segments = path.split('/');
        for (let i = 1; i < segments.length; i++) dirs.add(segments.slice(0, i).join('/'));
      }
      const tree = [
        ...[...dirs].map((path) => ({ path, mode: '040000', type: 'tree', sha: 'd'.repeat(40) })),
        ...Object.entries(repo.files).map(([path, text]) => ({
          path,
          mode: '100644',
          type: 'blob',
          sha: 'f'.repeat(40),
          size: Buffer.byteLength(text),
        })),
      ].sort((a, b) => a.path.localeCompare(b.path));
      send(response, 200, { sha: 'a'.repeat(40), url: url.toString(), tree, truncated: !!repo.truncated });
      return;
    }
    if (kind === 'contents') {
      const path = rest.join('/');
      const ref = url.searchParams.get('ref');
      const text = repo.files[path];
      if (text === undefined || (ref !== null && ref !== branch)) return notFound(response);
      const base64 = Buffer.from(text, 'utf8').toString('base64').replace(/.{60}/g, '$&\n');
      send(response, 200, {
        type: 'file',
        encoding: 'base64',
        path,
        name: path.split('/').pop(),
        content: base64,
        download_url: null,
      });
      return;
    }
    notFound(response);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    apiBase: `http://127.0.0.1:${port}${PREFIX}`,
    requests,
    setRepo: (fullName, repo) => repos.set(fullName, repo),
    removeRepo: (fullName) => repos.delete(fullName),
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
