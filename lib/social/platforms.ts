import type { DnsServer } from '../net/dns';
import { networkPolicyFromConfig } from '../net/policy';
import type { NetworkPolicy } from '../net/ssrf';
import { proxyFromTemplate } from '../net/proxy';
import { validateForumCredentials, type ForumCredentials, type ForumEndpoints } from './forum';
import {
  createMicroblogClient,
  validateMicroblogCredentials,
  type MicroblogCredentials,
  type MicroblogSession,
} from './microblog';

export type SocialPlatform = 'forum' | 'microblog';

/** Where the platforms live and how to reach them (operator configuration, so their hosts are trusted). */
export interface SocialPlatformsConfig {
  forum: ForumEndpoints;
  microblogBase: string | null;
  networkAllowlist: string | undefined;
  /** DNS_SERVERS: the platforms' names are resolved the way every other guarded name is. */
  dnsServers?: readonly DnsServer[];
  proxyUrlTemplate: string | null;
}

export type PlatformCredentials = ForumCredentials | MicroblogCredentials;

export type CredentialCheck =
  { ok: true; meta: Record<string, unknown>; session: MicroblogSession | null } | { ok: false; message: string };

/** The operator's platform hosts are reachable even when they are local (tests, self-hosted fakes). */
export function platformPolicy(config: SocialPlatformsConfig): NetworkPolicy {
  const hosts = [config.forum.apiBase, config.forum.authBase, config.microblogBase]
    .filter((u): u is string => !!u)
    .map((u) => new URL(u).hostname);
  return networkPolicyFromConfig(
    { networkAllowlist: config.networkAllowlist, dnsServers: config.dnsServers ?? [] },
    hosts,
  );
}

export function createSocialPlatforms(config: SocialPlatformsConfig) {
  const policy = platformPolicy(config);
  const microblogTransport = (creds: MicroblogCredentials) => {
    if (!creds.proxy_country) return { policy, proxy: null };
    const proxy = proxyFromTemplate(config.proxyUrlTemplate ?? undefined, creds.proxy_country);
    if (!proxy)
      throw new Error('proxy_country was given but this service has no proxy configured (operator: set PROXY_URL)');
    return { policy, proxy };
  };
  return {
    policy,
    proxyFor: (country: string) => proxyFromTemplate(config.proxyUrlTemplate ?? undefined, country),
    forum: config.forum,
    microblogBase: config.microblogBase,
    microblogTransport,

    /** Checks credentials against the upstream platform; nothing is stored by the caller unless this says ok. */
    async validate(platform: SocialPlatform, credentials: PlatformCredentials): Promise<CredentialCheck> {
      try {
        if (platform === 'forum') {
          const result = await validateForumCredentials(config.forum, credentials as ForumCredentials, { policy });
          return result.ok ? { ok: true, meta: result.meta, session: null } : result;
        }
        if (!config.microblogBase)
          return {
            ok: false,
            message: 'The microblog platform is not configured on this service (operator: set MICROBLOG_BASE)',
          };
        const creds = credentials as MicroblogCredentials;
        const result = await validateMicroblogCredentials(config.microblogBase, creds, microblogTransport(creds));
        return result.ok ? { ok: true, meta: { ...result.meta }, session: result.session } : result;
      } catch (err) {
        return { ok: false, message: `Could not validate the credentials: ${(err as Error).message}` };
      }
    },

    /** Best effort: ends the upstream microblog session of a deleted account. */
    async disconnectMicroblog(credentials: MicroblogCredentials, session: MicroblogSession): Promise<boolean> {
      if (!config.microblogBase) return false;
      try {
        await createMicroblogClient(config.microblogBase, session, microblogTransport(credentials)).disconnect();
        return true;
      } catch {
        return false;
      }
    },
  };
}

export type SocialPlatforms = ReturnType<typeof createSocialPlatforms>;

export function socialPlatformsFromConfig(config: {
  social: { forumApiBase: string; forumAuthBase: string; microblogBase: string | null };
  networkAllowlist: string | undefined;
  dnsServers?: readonly DnsServer[];
  proxyUrlTemplate: string | null;
}): SocialPlatforms {
  return createSocialPlatforms({
    forum: { apiBase: config.social.forumApiBase, authBase: config.social.forumAuthBase },
    microblogBase: config.social.microblogBase,
    networkAllowlist: config.networkAllowlist,
    dnsServers: config.dnsServers,
    proxyUrlTemplate: config.proxyUrlTemplate,
  });
}
