/** The small part of oidc-provider 9 (ESM, untyped) this project uses. */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface OidcClient {
    clientId: string;
    clientName?: string;
    redirectUris: string[];
    metadata(): Record<string, unknown>;
    grantTypeAllowed(type: string): boolean;
  }

  export interface OidcInteraction {
    uid: string;
    prompt: { name: string; reasons: string[]; details: Record<string, unknown> };
    params: Record<string, unknown>;
    session?: { accountId?: string };
    grantId?: string;
    returnTo: string;
    /** Expiry, unix seconds. */
    exp: number;
    /** Stores the interaction again (its params included) for `ttl` more seconds. */
    save(ttl: number): Promise<string>;
  }

  export interface OidcGrant {
    addResourceScope(resource: string, scope: string): void;
    addOIDCScope(scope: string): void;
    save(): Promise<string>;
  }

  export interface OidcAccessToken {
    jti: string;
    aud?: string | string[];
    grantId: string;
    accountId: string;
    clientId: string;
    scope?: string;
    isExpired: boolean;
  }

  export class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    issuer: string;
    proxy: boolean;
    callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<OidcInteraction>;
    interactionResult(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<string>;
    on(event: string, listener: (...args: unknown[]) => void): this;
    Client: { find(id: string): Promise<OidcClient | undefined> };
    Grant: (new (init: { accountId: string; clientId: string }) => OidcGrant) & {
      find(id: string): Promise<OidcGrant | undefined>;
    };
    AccessToken: { find(value: string): Promise<OidcAccessToken | undefined> };
  }

  export interface OidcCheck {
    reason: string;
  }
  export interface OidcPrompt {
    name: string;
    checks: { add(check: OidcCheck): void };
  }
  export const interactionPolicy: {
    base(): OidcPrompt[] & { get(name: string): OidcPrompt | undefined };
    Check: (new (
      reason: string,
      description: string,
      error: string,
      check: (ctx: { oidc: { result?: { consent?: { grantId?: string } } } }) => boolean,
    ) => OidcCheck) & { REQUEST_PROMPT: boolean; NO_NEED_TO_PROMPT: boolean };
  };

  export const errors: {
    InvalidTarget: new (description?: string) => Error;
    InvalidRequest: new (description?: string, status?: number) => Error;
    InvalidGrant: new (description?: string) => Error;
  };
}
