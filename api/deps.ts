import type { Client } from '@temporalio/client';
import type { Db } from '../db/connect';
import type { Config } from '../lib/config';
import type { NetworkPolicy } from '../lib/net/ssrf';
import type { SocialPlatforms } from '../lib/social/platforms';

export interface Readiness {
  database: boolean;
  temporal: boolean;
  workers: boolean;
}

/** What the HTTP layer needs from the rest of the system. */
export interface ApiDeps {
  db: Db;
  temporal: Client;
  config: Config;
  policy: NetworkPolicy;
  social: SocialPlatforms;
  readiness: () => Promise<Readiness>;
}
