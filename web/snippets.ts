/**
 * Connect snippets of a tool-market entry, built from the entry's hosted MCP address. Clients that
 * follow the MCP authorization spec (Claude Code, VS Code, Cursor) get the address alone and sign in
 * with OAuth; the others (and curl, and mcp-remote) get an `Authorization` header with the placeholder
 * the reader replaces with their credential (or API key, for an entry without parameters). Shell commands
 * quote every value for a POSIX shell (web/shell.ts). The market tests read them back from the page (the shell
 * commands parsed by bash itself) and connect a real client: through OAuth, or with the header.
 */

import { shellWord } from './shell';

export const CREDENTIAL_PLACEHOLDER = '<credential>';

export interface ConnectTarget {
  /** The server's name in the client: the entry's slug. */
  name: string;
  /** The hosted endpoint: {MCP_PUBLIC_URL or the API origin}/mcp/{entryId}. */
  url: string;
}

const authorization = (credential: string) => `Bearer ${credential}`;

/** A header argument of a command (`"Name: value"`), quoted for a POSIX shell (web/shell.ts). */
const headerWord = (name: string, value: string) => shellWord(`${name}: ${value}`);

/**
 * Claude Code, signing in with OAuth: `claude mcp add --transport http <name> <url>`, then `/mcp` →
 * Authenticate opens the browser (the MCP authorization spec; nothing secret in the command).
 */
export function claudeCodeCommand(target: ConnectTarget): string {
  return `claude mcp add --transport http ${shellWord(target.name)} ${shellWord(target.url)}`;
}

/** Claude Code with a bearer credential instead (headless machines, CI): the same command with the header. */
export function claudeCodeHeaderCommand(target: ConnectTarget): string {
  return `${claudeCodeCommand(target)} --header ${headerWord('Authorization', authorization(CREDENTIAL_PLACEHOLDER))}`;
}

/** VS Code's .vscode/mcp.json: the server's type and address only; VS Code asks the person to sign in (OAuth). */
export function vsCodeConfig(target: ConnectTarget): string {
  return JSON.stringify({ servers: { [target.name]: { type: 'http', url: target.url } } }, null, 2);
}

/** Cursor's configuration of the server (what its install link carries, base64-encoded): the address; Cursor signs in with OAuth. */
export function cursorServerConfig(target: ConnectTarget): { url: string } {
  return { url: target.url };
}

/** Cursor's one-click install link: cursor://anysphere.cursor-deeplink/mcp/install?name=…&config=<base64 JSON>. */
export function cursorInstallLink(target: ConnectTarget): string {
  const config = Buffer.from(JSON.stringify(cursorServerConfig(target)), 'utf8').toString('base64');
  return `cursor://anysphere.cursor-deeplink/mcp/install?name=${encodeURIComponent(target.name)}&config=${encodeURIComponent(config)}`;
}

/**
 * A client without OAuth support: the common `mcpServers` shape (Claude Desktop, Windsurf, most agent
 * frameworks) with the address and an `Authorization` header carrying a credential.
 */
export function headerConfig(target: ConnectTarget): string {
  return JSON.stringify(
    {
      mcpServers: {
        [target.name]: {
          type: 'http',
          url: target.url,
          headers: { Authorization: authorization(CREDENTIAL_PLACEHOLDER) },
        },
      },
    },
    null,
    2,
  );
}

/** For clients that only start stdio servers: mcp-remote bridges stdio to the hosted endpoint. */
export function mcpRemoteCommand(target: ConnectTarget): string {
  return `npx mcp-remote ${shellWord(target.url)} --header ${headerWord('Authorization', authorization(CREDENTIAL_PLACEHOLDER))}`;
}

/** The first request any MCP client sends, by hand: an initialize on the 2025-06-18 revision. */
export const CURL_INITIALIZE_BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '1.0.0' } },
});

export function curlCommand(target: ConnectTarget): string {
  return [
    `curl -sS ${shellWord(target.url)} \\`,
    `  -H ${headerWord('Authorization', authorization(CREDENTIAL_PLACEHOLDER))} \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  -H 'Accept: application/json, text/event-stream' \\`,
    `  -d ${shellWord(CURL_INITIALIZE_BODY)}`,
  ].join('\n');
}
