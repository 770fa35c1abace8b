/// <reference types="vitest/config" />
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { defineConfig, type Plugin } from 'vite';
import { sizeReport } from './build/size-report.ts';

// The Go server the dev and preview servers send API calls to (see docs/webui.md).
const api = process.env.FRESHET_API ?? 'http://127.0.0.1:8080';
// Regexes, not prefixes: a plain '/api' would also take the UI's own /api-keys page, and
// /runtimes and /runtimes/NAME are UI pages while /runtimes/NAME/app-proxy/… is a runtime's API.
const proxy = Object.fromEntries(
  ['^/api(/|$)', '^/healthz$', '^/readyz$', '^/metrics$', '^/runtimes/[^/]+/app-proxy(/|$)'].map((p) => [p, { target: api, changeOrigin: false }]),
);
const outDir = resolve(import.meta.dirname, '../internal/webui/dist');

// Vite empties dist before building; keep the .gitkeep that lets `go:embed all:dist` compile
// in a fresh clone.
function keepGitkeep(): Plugin {
  return {
    name: 'freshet-keep-gitkeep',
    apply: 'build',
    closeBundle() {
      writeFileSync(resolve(outDir, '.gitkeep'), '');
    },
  };
}

export default defineConfig({
  plugins: [keepGitkeep(), sizeReport()],
  build: {
    outDir,
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
  },
  server: { host: '127.0.0.1', port: 5173, strictPort: true, proxy },
  preview: { host: '127.0.0.1', port: 4173, proxy },
  test: {
    include: ['src/**/*.test.{ts,tsx}'],
    environment: 'node',
    // The API types' check against the Go wire types is a type check (src/api/wire.test.ts):
    // npm test runs it too, not only npm run build.
    typecheck: { enabled: true, include: ['src/api/wire.test.ts'] },
  },
});
