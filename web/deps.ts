import type { Client } from '@temporalio/client';
import type { Db } from '../db/connect';
import type { Config } from '../lib/config';
import type { NetworkPolicy } from '../lib/net/ssrf';

/** What the pages need from the rest of the system (the API's dependencies satisfy it). */
export interface WebDeps {
  db: Db;
  config: Config;
  /** The listing wizard validates a source through the same workflow as POST /mcp-market/validate. */
  temporal: Client;
  policy: NetworkPolicy;
}
