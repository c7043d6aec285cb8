import type { Child } from 'hono/jsx';
import { assetUrl } from './assets';

export type Section = 'market' | 'console' | null;

/**
 * The frame of every page: header (Market, Console, Docs), main and footer. `live` pages load htmx
 * and its SSE extension, `htmx` pages htmx alone (no other page runs any script; each works without it).
 */
export function Layout(props: {
  title: string;
  section: Section;
  live?: boolean;
  htmx?: boolean;
  signedInAs?: string | null;
  children: Child;
}) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${props.title} · Scrape Platform`}</title>
        <link rel="stylesheet" href={assetUrl('web.css')} />
        {/* Not deferred: a deferred htmx starts on a timer that may run before its extension has loaded,
            and then never connects the page's live stream. Parsed in order, htmx starts at DOMContentLoaded. */}
        {(props.live || props.htmx) && <script src={assetUrl('htmx.min.js')}></script>}
        {props.live && <script src={assetUrl('hx-sse.min.js')}></script>}
      </head>
      <body>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header class="site-header">
          <div class="bar">
            <a class="brand" href="/market">
              Scrape Platform
            </a>
            <nav aria-label="Main">
              <ul>
                <li>
                  <a href="/market" aria-current={props.section === 'market' ? 'page' : undefined}>
                    Market
                  </a>
                </li>
                <li>
                  <a href="/console" aria-current={props.section === 'console' ? 'page' : undefined}>
                    Console
                  </a>
                </li>
                <li>
                  <a href="/api/v1/docs">Docs</a>
                </li>
              </ul>
            </nav>
            {props.signedInAs && <span class="meta">Signed in as {props.signedInAs}</span>}
          </div>
        </header>
        <main id="main">{props.children}</main>
        <footer>
          Every page here reads the same data as the REST API (<a href="/api/v1/docs">documentation</a>).
        </footer>
      </body>
    </html>
  );
}
