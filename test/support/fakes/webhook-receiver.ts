import http from 'node:http';

export interface Delivery {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A loopback webhook endpoint that records deliveries and answers with the given statuses in turn (then 200). */
export async function startWebhookReceiver(answers: number[] = []) {
  const deliveries: Delivery[] = [];
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    deliveries.push({ path: req.url ?? '/', headers: req.headers, body });
    res.writeHead(answers[deliveries.length - 1] ?? 200).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    url: (path = '/hook') => `${origin}${path}`,
    deliveries,
    bodies: () => deliveries.map((d) => d.body),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
