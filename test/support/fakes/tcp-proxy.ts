import net from 'node:net';

/** A loopback TCP proxy in front of a service (Postgres), which a test can take down and bring back. */
export interface TcpProxy {
  port: number;
  /** host:port to give clients instead of the target's. */
  address: string;
  /** Drops every open connection (both sides) and refuses new ones until start(). */
  stop(): Promise<void>;
  /** Accepts connections again, on the same port. */
  start(): Promise<void>;
  /** Connections accepted since the proxy started (a reconnecting client raises it). */
  accepted(): number;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  let server: net.Server | null = null;
  let port = 0;

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = net.createServer((client) => {
        accepted += 1;
        const upstream = net.connect(target.port, target.host);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => {
            client.destroy();
            upstream.destroy();
          });
        }
        client.pipe(upstream);
        upstream.pipe(client);
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        port = (s.address() as net.AddressInfo).port;
        server = s;
        resolve();
      });
    });

  const stop = async () => {
    const s = server;
    server = null;
    const closed = s ? new Promise<void>((resolve) => s.close(() => resolve())) : Promise.resolve();
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    await closed;
  };

  await listen();
  return {
    port,
    address: `127.0.0.1:${port}`,
    stop,
    start: async () => {
      if (!server) await listen();
    },
    accepted: () => accepted,
    close: stop,
  };
}
