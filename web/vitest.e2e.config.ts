import { defineConfig } from 'vitest/config';

// The browser end-to-end test: one file, run alone, with room for building and starting the
// server. See e2e/README in docs/webui.md.
export default defineConfig({
  test: {
    include: ['e2e/**/*.e2e.ts'],
    environment: 'node',
    testTimeout: 300_000,
    hookTimeout: 600_000,
    fileParallelism: false,
    reporters: ['verbose'],
  },
});
