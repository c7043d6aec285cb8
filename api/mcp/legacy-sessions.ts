import { randomUUID } from 'node:crypto';
import {
  McpServer,
  WebStandardStreamableHTTPServerTransport,
  type AuthInfo,
  type EventStore,
  type JSONRPCMessage,
  type McpHandlerRequestOptions,
  type McpServerFactory,
  type Server,
} from '@modelcontextprotocol/server';

/**
 * Sessions for clients of the 2025 protocol revisions on an MCP endpoint (Streamable HTTP with an
 * `Mcp-Session-Id`), in the memory of the API process. A 2025 client answers a server's request
 * (sampling, elicitation, roots) in a POST of its own, and keeps a stream open (GET) for what the
 * server sends outside a request: both reach the call waiting for them only through a session. Clients
 * of 2026-07-28 need none (every request carries its own envelope; input is asked for with
 * input-required results).
 *
 * - A session belongs to the principal that opened it (`principalOf`, from the request's
 *   authentication): a request naming another principal's session — or an unknown, ended or evicted
 *   one — is answered 404 "Session not found" (the same answer either way), so a session id alone is
 *   never enough.
 * - One server instance (from the endpoint's factory, era `legacy`) per session; its streams are
 *   resumable (`Last-Event-ID`, a bounded in-memory event store per session, a `retry` hint).
 * - Bounded: at most `maxSessions` in the process and `maxPerPrincipal` per principal; a new session
 *   beyond either ends the principal's (else the process's) least recently used idle session, and is
 *   refused (503) when every session is busy. A session no request used for `idleMs` is ended (its
 *   open streams closed); DELETE ends it at once.
 * - Several API processes: a session lives in the process that opened it, so a load balancer must
 *   route by the `Mcp-Session-Id` header (sticky sessions); a request that reaches another process
 *   gets 404 and the client starts a new session (docs/operations.md).
 */
export interface LegacySessionOptions {
  /** Who a request is (its authenticated principal); a session answers only its own principal. */
  principalOf: (authInfo: AuthInfo | undefined) => string;
  maxSessions: number;
  maxPerPrincipal: number;
  idleMs: number;
}

export interface LegacySessions {
  fetch(request: Request, options?: McpHandlerRequestOptions): Promise<Response>;
  /** The sessions open now. */
  size(): number;
  close(): Promise<void>;
}

interface Session {
  id: string;
  principal: string;
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  lastUsed: number;
  /** Requests (and their response streams) of the session still open. */
  busy: number;
}

/** Events kept per session for resumption: the latest ones, at most this many and this many bytes. */
const MAX_EVENTS = 256;
const MAX_EVENT_BYTES = 8 * 1024 * 1024;
/** What a client waits before reconnecting a stream the server closed (the SSE `retry` field). */
const RETRY_MS = 1_000;

export function legacySessions(
  factory: McpServerFactory,
  options: LegacySessionOptions & { maxRequestBodySize: number },
): LegacySessions {
  const sessions = new Map<string, Session>();
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const session of sessions.values())
        if (session.busy === 0 && now - session.lastUsed > options.idleMs) void end(session);
    },
    Math.max(1_000, Math.min(options.idleMs, 60_000)),
  );
  sweep.unref();

  async function end(session: Session): Promise<void> {
    if (sessions.get(session.id) === session) sessions.delete(session.id);
    await session.transport.close().catch(() => {});
  }

  /** Room for one more session of `principal`: false when every session that would have to go is busy. */
  function makeRoom(principal: string): boolean {
    const own = [...sessions.values()].filter((s) => s.principal === principal);
    if (own.length >= options.maxPerPrincipal) {
      const idle = leastRecentlyUsedIdle(own);
      if (!idle) return false;
      void end(idle);
    }
    if (sessions.size >= options.maxSessions) {
      const idle = leastRecentlyUsedIdle([...sessions.values()]);
      if (!idle) return false;
      void end(idle);
    }
    return true;
  }

  /** Counts the request (and its response stream) as a use of the session until the response ends. */
  function using(session: Session, response: Response): Response {
    session.busy++;
    session.lastUsed = Date.now();
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      session.busy--;
      session.lastUsed = Date.now();
    };
    if (!response.body) {
      finish();
      return response;
    }
    const reader = response.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done: ended, value } = await reader.read();
          if (ended) {
            finish();
            controller.close();
          } else controller.enqueue(value);
        } catch (error) {
          finish();
          controller.error(error);
        }
      },
      cancel(reason) {
        finish();
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  }

  return {
    size: () => sessions.size,

    async fetch(request, requestOptions) {
      const authInfo = requestOptions?.authInfo;
      const principal = options.principalOf(authInfo);
      const sessionId = request.headers.get('mcp-session-id');
      if (sessionId) {
        const session = sessions.get(sessionId);
        // Another principal's session is not found either: the id alone proves nothing.
        if (!session || session.principal !== principal) return jsonRpcError(404, -32001, 'Session not found');
        session.lastUsed = Date.now();
        return using(
          session,
          await session.transport.handleRequest(request, {
            ...(authInfo && { authInfo }),
            ...(requestOptions?.parsedBody !== undefined && { parsedBody: requestOptions.parsedBody }),
          }),
        );
      }
      if (request.method !== 'POST') return jsonRpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      if (!makeRoom(principal))
        return jsonRpcError(503, -32000, 'Too many open sessions: end one (DELETE) or retry later');

      const product = await factory({ era: 'legacy', ...(authInfo && { authInfo }), requestInfo: request });
      const server = product instanceof McpServer ? product.server : product;
      let session: Session | undefined;
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          session = { id, principal, transport, server, lastUsed: Date.now(), busy: 0 };
          sessions.set(id, session);
        },
        onsessionclosed: (id) => {
          if (sessions.get(id)?.transport === transport) sessions.delete(id);
        },
        eventStore: sessionEventStore(),
        retryInterval: RETRY_MS,
        maxRequestBodySize: options.maxRequestBodySize,
      });
      transport.onclose = () => {
        if (transport.sessionId && sessions.get(transport.sessionId)?.transport === transport)
          sessions.delete(transport.sessionId);
        void server.close().catch(() => {});
      };
      await server.connect(transport);
      const response = await transport.handleRequest(request, {
        ...(authInfo && { authInfo }),
        ...(requestOptions?.parsedBody !== undefined && { parsedBody: requestOptions.parsedBody }),
      });
      // Not an initialize request: refused by the transport, and no session was made for it.
      if (!transport.sessionId) {
        void transport.close();
        return response;
      }
      return session ? using(session, response) : response;
    },

    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions.values()].map((session) => end(session)));
    },
  };
}

function leastRecentlyUsedIdle(candidates: Session[]): Session | undefined {
  return candidates.filter((s) => s.busy === 0).sort((a, b) => a.lastUsed - b.lastUsed)[0];
}

function jsonRpcError(status: number, code: number, message: string): Response {
  return Response.json({ jsonrpc: '2.0', error: { code, message }, id: null }, { status });
}

/**
 * The events of one session's streams, for a client resuming a stream with Last-Event-ID: the latest
 * MAX_EVENTS (at most MAX_EVENT_BYTES), dropped with the session.
 */
function sessionEventStore(): EventStore {
  const events = new Map<string, { streamId: string; message: JSONRPCMessage; bytes: number }>();
  let bytes = 0;
  let next = 0;
  return {
    async storeEvent(streamId, message) {
      const eventId = `${streamId}_${String(++next).padStart(10, '0')}`;
      const size = JSON.stringify(message).length;
      events.set(eventId, { streamId, message, bytes: size });
      bytes += size;
      for (const [id, event] of events) {
        if (events.size <= MAX_EVENTS && bytes <= MAX_EVENT_BYTES) break;
        events.delete(id);
        bytes -= event.bytes;
      }
      return eventId;
    },
    async getStreamIdForEventId(eventId) {
      return events.get(eventId)?.streamId;
    },
    async replayEventsAfter(lastEventId, { send }) {
      const streamId = events.get(lastEventId)?.streamId;
      if (!streamId) return '';
      for (const [eventId, event] of events) {
        if (event.streamId === streamId && eventId > lastEventId) await send(eventId, event.message);
      }
      return streamId;
    },
  };
}
