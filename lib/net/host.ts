/** URL.hostname keeps an IPv6 literal in brackets (`[::1]`); sockets, DNS and address checks want it bare (`::1`). */
export function unbracketHost(host: string): string {
  return host.length >= 2 && host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** The form a host takes inside a URL or a `host:port` authority: IPv6 literals bracketed, everything else as is. */
export function bracketHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}
