import type { Client } from '@temporalio/client';
import type { Db } from '../db/connect';
import type { Config } from '../lib/config';

/** What the pages need from the rest of the system (the API's dependencies satisfy it). */
export interface WebDeps {
  db: Db;
  config: Config;
  /** The Temporal client: the automations page reads each Schedule's state as GET /automations does. */
  temporal: Client;
}
