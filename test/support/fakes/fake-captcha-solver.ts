import http from 'node:http';

/** A loopback captcha solver speaking the 2captcha-style API: POST /in.php, GET /res.php?action=get. */
export interface FakeCaptchaSolver {
  url: string;
  apiKey: string;
  tasks: { method: string; siteKey: string; pageUrl: string }[];
  tokenFor(siteKey: string): string;
  close(): Promise<void>;
}

export async function startFakeCaptchaSolver(apiKey = 'captcha-test-key'): Promise<FakeCaptchaSolver> {
  const tasks: FakeCaptchaSolver['tasks'] = [];
  const polls = new Map<string, number>();
  const tokenFor = (siteKey: string) => `solved-${siteKey}`;
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://solver');
    const reply = (body: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'POST' && url.pathname === '/in.php') {
      let raw = '';
      for await (const chunk of req) raw += chunk;
      const form = new URLSearchParams(raw);
      if (form.get('key') !== apiKey) return reply({ status: 0, request: 'ERROR_WRONG_USER_KEY' });
      const siteKey = form.get('googlekey') ?? form.get('sitekey') ?? '';
      const id = String(tasks.push({ method: form.get('method') ?? '', siteKey, pageUrl: form.get('pageurl') ?? '' }));
      polls.set(id, 0);
      return reply({ status: 1, request: id });
    }
    if (req.method === 'GET' && url.pathname === '/res.php') {
      const id = url.searchParams.get('id') ?? '';
      const task = tasks[Number(id) - 1];
      if (url.searchParams.get('key') !== apiKey || !task)
        return reply({ status: 0, request: 'ERROR_WRONG_CAPTCHA_ID' });
      const seen = (polls.get(id) ?? 0) + 1;
      polls.set(id, seen);
      return reply(
        seen < 2 ? { status: 0, request: 'CAPCHA_NOT_READY' } : { status: 1, request: tokenFor(task.siteKey) },
      );
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    apiKey,
    tasks,
    tokenFor,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
