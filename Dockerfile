# One image for both production processes: `npm run api` (default) and `npm run worker`.
# They need external Postgres (DATABASE_URL) and Temporal (TEMPORAL_ADDRESS); see docker-compose.yml.
FROM node:24-bookworm-slim

# Debian's Chromium for rendering (playwright-core drives it; no Playwright browser download) and
# Xvfb for headed browser sessions; its headless shell for headless contexts (a third of the CPU). Fonts so pages render text; CA certificates for HTTPS.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      chromium chromium-headless-shell xvfb fonts-liberation ca-certificates \
 && rm -rf /var/lib/apt/lists/*

ENV NODE_ENV=production \
    CHROMIUM_PATH=/usr/bin/chromium \
    CHROMIUM_HEADLESS_PATH=/usr/bin/chromium-headless-shell \
    PORT=3000 \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false

WORKDIR /app

# Dependencies first, so source changes reuse this layer. The service runs TypeScript through
# tsx, which is a regular dependency, so a production install is all it needs.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit && npm cache clean --force

# Source stays owned by root (read-only for the service); tsx caches under /tmp.
COPY . .

# The workflows bundled once at build time: every worker loads this file instead of bundling at start.
RUN npx tsx scripts/bundle-workflows.ts dist/workflow-bundle.js
ENV WORKFLOW_BUNDLE_PATH=/app/dist/workflow-bundle.js

# The node image's unprivileged user (uid 1000, home /home/node for npm's logs).
USER node

EXPOSE 3000
CMD ["npm", "run", "api"]
