/**
 * Quoting for the shell commands the pages show (connect snippets, "try a tool", test charges), which people
 * paste into a terminal: every value that is not a plain word is put in POSIX single quotes, a quote inside it
 * written `'\''`. Inside single quotes a POSIX shell (bash, zsh, dash; interactive or not) expands nothing —
 * no `$(…)`, backticks, `$VAR`, `\`, globs, nor bash's history `!` — so a provider-chosen tool name, event
 * name or argument reaches the command as one argument, exactly as written. (Double quotes would still run
 * `$(…)` and backticks; a library's mix of the two escapes `!` with a backslash that interactive bash keeps.)
 */

/**
 * Characters that mean nothing to the shell in an argument (not the first word): left bare for readability. Not
 * a leading `=` (zsh expands `=cmd` to the command's path).
 */
const PLAIN_WORD = /^[A-Za-z0-9_@%+:,./-][A-Za-z0-9_@%+=:,./-]*$/;

/** One shell word that stands for `value` exactly. */
export function shellWord(value: string): string {
  if (PLAIN_WORD.test(value)) return value;
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

const BASE64_PREFIX = '=?base64?';
const BASE64_SUFFIX = '?=';

/**
 * An MCP header value (`Mcp-Name`, `Mcp-Param-*`) as the 2026-07-28 Streamable HTTP binding (SEP-2243) writes
 * it: a value that is a plain printable-ASCII field value as it is, anything else (non-ASCII, control
 * characters, surrounding spaces, empty, or a value that looks encoded) as `=?base64?<UTF-8 in base64>?=`.
 * The same rule the SDK client applies to the headers it sends (it does not export it).
 */
export function mcpHeaderValue(value: string): string {
  const plain =
    value.length > 0 &&
    value === value.trim() &&
    !(value.startsWith(BASE64_PREFIX) && value.endsWith(BASE64_SUFFIX)) &&
    /^[\t\x20-\x7e]*$/.test(value);
  return plain ? value : `${BASE64_PREFIX}${Buffer.from(value, 'utf8').toString('base64')}${BASE64_SUFFIX}`;
}
