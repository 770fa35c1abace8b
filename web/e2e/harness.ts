// Starts what the browser test needs: a real `freshet up` on a free loopback port with a temp
// data dir, optionally a Vite preview server in front of it (until the Go server mounts the
// UI), a loopback Kubernetes cluster (hack/devcluster) and a git repository for the GitOps
// part when the cluster's binaries are built, and headless Debian chromium through
// playwright-core. Every wait is bounded.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Locator } from 'playwright-core';

export const webDir = resolve(import.meta.dirname, '..');
export const repoRoot = resolve(webDir, '..');
export const distDir = join(repoRoot, 'internal/webui/dist');
export const artifacts = join(repoRoot, '.artifacts');
export const screenshotDir = join(artifacts, 'screenshots');
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ADMIN_EMAIL = 'admin@freshet.local';
export const ADMIN_PASSWORD = 'e2e-admin-password-1';

export function log(...args: unknown[]): void {
  console.log('[e2e]', ...args);
}

/** The freshet binary: FRESHET_BIN, or one built now from this checkout. */
export function freshetBinary(tmp: string): string {
  if (process.env.FRESHET_BIN) return resolve(process.env.FRESHET_BIN);
  const out = join(tmp, 'freshet');
  const t = Date.now();
  const res = spawnSync('go', ['build', '-o', out, './cmd/freshet'], { cwd: repoRoot, stdio: 'inherit', timeout: 600_000 });
  if (res.status !== 0) throw new Error(`go build failed (status ${res.status}, ${res.error ?? ''})`);
  log(`built ${out} in ${((Date.now() - t) / 1000).toFixed(1)}s`);
  return out;
}

export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.unref();
    s.on('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

async function waitFor(url: string, timeoutMs: number, proc?: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    if (proc && proc.exitCode !== null) throw new Error(`process exited with ${proc.exitCode} before ${url} answered`);
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(2000) });
      if (r.ok) return;
      last = `status ${r.status}`;
    } catch (e) {
      last = String(e);
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`${url} not ready after ${timeoutMs}ms: ${last}`);
}

export interface Running {
  url: string;
  stop: () => Promise<void>;
}

function stopper(proc: ChildProcess, cleanup?: () => void): () => Promise<void> {
  return async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise<void>((r) => proc.once('exit', () => r()));
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    }
    cleanup?.();
  };
}

/**
 * Starts `freshet up` with a new data dir; the first admin gets ADMIN_PASSWORD. With a
 * kubeconfig, its runtime `local` deploys applications to that cluster.
 */
export async function startFreshet(bin: string, opts: { kubeconfig?: string } = {}): Promise<Running> {
  const dataDir = mkdtempSync(join(tmpdir(), 'freshet-e2e-data-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const args = ['up', '--data-dir', dataDir, '--listen', `127.0.0.1:${port}`];
  if (opts.kubeconfig) args.push('--kubeconfig', opts.kubeconfig);
  const proc = spawn(bin, args, {
    env: { ...process.env, FRESHET_ADMIN_PASSWORD: ADMIN_PASSWORD, FRESHET_WEBUI_DEV: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout!.on('data', (d) => (output += d));
  proc.stderr!.on('data', (d) => (output += d));
  try {
    await waitFor(`${url}/readyz`, 60_000, proc);
  } catch (e) {
    proc.kill('SIGKILL');
    throw new Error(`${e}\n--- freshet output ---\n${output}`);
  }
  log(`freshet up at ${url} (data ${dataDir})`);
  return { url, stop: stopper(proc, () => rmSync(dataDir, { recursive: true, force: true })) };
}

/** Does the Go server itself serve the UI (webui.Handler mounted)? */
export async function serverServesUI(url: string): Promise<boolean> {
  const r = await fetch(`${url}/`, { redirect: 'manual' });
  const body = r.status === 200 ? await r.text() : '';
  return body.includes('content="freshet-ui"');
}

/** A Vite preview server for the built UI that proxies the API to the Go server. */
export async function startPreview(apiURL: string): Promise<Running> {
  if (!existsSync(join(distDir, 'index.html'))) throw new Error(`the UI is not built (${distDir}/index.html missing): run make web`);
  const port = await freePort();
  const vite = join(webDir, 'node_modules/vite/bin/vite.js');
  const proc = spawn(process.execPath, [vite, 'preview', '--port', String(port), '--strictPort', '--host', '127.0.0.1'], {
    cwd: webDir,
    env: { ...process.env, FRESHET_API: apiURL },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout!.on('data', (d) => (output += d));
  proc.stderr!.on('data', (d) => (output += d));
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor(`${url}/healthz`, 30_000, proc);
  } catch (e) {
    proc.kill('SIGKILL');
    throw new Error(`${e}\n--- vite preview output ---\n${output}`);
  }
  log(`vite preview at ${url} -> ${apiURL}`);
  return { url, stop: stopper(proc) };
}

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (make web-test does)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
  });
}

export function tempDir(): string {
  mkdirSync(artifacts, { recursive: true });
  return mkdtempSync(join(tmpdir(), 'freshet-e2e-'));
}

/** Runs fn over items with at most `n` at once. */
export async function pool<T>(items: T[], n: number, fn: (t: T) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (i < items.length) await fn(items[i++]);
    }),
  );
}

// ─── Loopback Kubernetes and a git repository, for the applications pages ───

/** A running cluster for `freshet up --kubeconfig`. */
export interface Kube {
  kubeconfig: string;
  stop: () => Promise<void>;
}

const DEVCLUSTER_NAME = 'webui-e2e';
/** The devcluster tool's exit code for "binaries not built" (hack/devcluster/main.go). */
const DEVCLUSTER_NO_BINARIES = 3;

function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeout?: number } = {}) {
  const r = spawnSync(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, encoding: 'utf8', timeout: opts.timeout ?? 120_000 });
  return { status: r.status, stdout: r.stdout ?? '', stderr: (r.stderr ?? '') + (r.error ? String(r.error) : '') };
}

/**
 * A loopback Kubernetes cluster, as the Go tests get one (internal/testenv/kube): the one of
 * FRESHET_TEST_KUBECONFIG, or a devcluster instance started now (stopped by `stop`, and by the
 * devcluster watchdog should this process die first). Without the devcluster binaries it
 * answers why it skips, unless FRESHET_TEST_KUBE=1 (CI) forbids skipping; FRESHET_E2E_KUBE=0
 * skips on purpose.
 */
export function startKube(tmp: string): Kube | { skip: string } {
  if (process.env.FRESHET_E2E_KUBE === '0') return { skip: 'FRESHET_E2E_KUBE=0' };
  if (process.env.FRESHET_TEST_KUBECONFIG) return { kubeconfig: process.env.FRESHET_TEST_KUBECONFIG, stop: async () => {} };
  let tool = process.env.FRESHET_DEVCLUSTER_TOOL ?? '';
  if (!tool) {
    tool = join(tmp, 'devcluster');
    const b = run('go', ['build', '-o', tool, '.'], { cwd: join(repoRoot, 'hack/devcluster'), env: { ...process.env, GOWORK: 'off', GOFLAGS: '-buildvcs=false' } });
    if (b.status !== 0) throw new Error(`build the devcluster tool: ${b.stderr}`);
  }
  const env = { ...process.env, FRESHET_DEVCLUSTER_STATE: join(tmp, 'devcluster-state') };
  const t = Date.now();
  const up = run(tool, ['up', '--name', DEVCLUSTER_NAME, '--json', '--down-when-exits', String(process.pid)], { env, timeout: 240_000 });
  const down = async () => {
    const d = run(tool, ['down', '--name', DEVCLUSTER_NAME, '--purge'], { env, timeout: 60_000 });
    if (d.status !== 0) log('devcluster down:', d.stderr.trim());
  };
  if (up.status === DEVCLUSTER_NO_BINARIES) {
    // The tool says which binaries are missing and how to build them (make devcluster-build).
    const why = `${up.stderr.trim().split('\n').pop() || 'the devcluster binaries are not built: make devcluster-build'} (or point FRESHET_TEST_KUBECONFIG at a cluster)`;
    if (process.env.FRESHET_TEST_KUBE === '1') throw new Error(`${why} (FRESHET_TEST_KUBE=1 forbids skipping)`);
    return { skip: why };
  }
  if (up.status !== 0) {
    void down();
    throw new Error(`devcluster up failed (status ${up.status}): ${up.stderr}`);
  }
  const kubeconfig = (JSON.parse(up.stdout) as { kubeconfig: string }).kubeconfig;
  log(`devcluster ${DEVCLUSTER_NAME} up in ${((Date.now() - t) / 1000).toFixed(1)}s (${kubeconfig})`);
  return { kubeconfig, stop: down };
}

/** A git repository the runtime can read (file://), with a working copy to commit to. */
export interface GitRepo {
  url: string;
  /** Writes the files (path → content), commits them and pushes to the repository. */
  commit: (files: Record<string, string>, message: string) => string;
}

export function gitRepo(dir: string): GitRepo {
  const bare = join(dir, 'source.git');
  const work = join(dir, 'source');
  const git = (cwd: string, ...args: string[]) => {
    const r = run('git', ['-c', 'user.name=E2E Tester', '-c', 'user.email=e2e@example.com', '-c', 'init.defaultBranch=main', ...args], { cwd });
    if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
    return r.stdout.trim();
  };
  mkdirSync(work, { recursive: true });
  git(dir, 'init', '-q', '--bare', '-b', 'main', bare);
  git(work, 'init', '-q', '-b', 'main');
  git(work, 'remote', 'add', 'origin', bare);
  return {
    url: `file://${bare}`,
    commit(files, message) {
      for (const [path, content] of Object.entries(files)) {
        mkdirSync(join(work, path, '..'), { recursive: true });
        writeFileSync(join(work, path), content);
      }
      git(work, 'add', '-A');
      git(work, 'commit', '-q', '-m', message);
      git(work, 'push', '-q', 'origin', 'main');
      return git(work, 'rev-parse', 'HEAD');
    },
  };
}

/** Frame times of fast scrolling in a virtualised list, and the most rows it ever held. */
export interface ScrollFrames {
  frames: number;
  p50: number;
  p95: number;
  max: number;
  over50: number;
  maxRows: number;
}

/**
 * Scrolls list like a fast mouse wheel (300 px a frame) for 120 frames from the top, the
 * middle and near the end, timing each frame and counting the rows (rowSelector) in the DOM.
 */
export function scrollFrames(list: Locator, rowSelector: string): Promise<ScrollFrames> {
  return list.evaluate(async (el, sel) => {
    const frame = () => new Promise((r) => requestAnimationFrame(() => r(null)));
    const deltas: number[] = [];
    let maxRows = 0;
    for (const at of [0, 0.5, 0.9]) {
      el.scrollTop = at * (el.scrollHeight - el.clientHeight);
      await frame();
      await frame();
      let last = performance.now();
      for (let i = 0; i < 120; i++) {
        el.scrollTop += 300;
        await frame();
        const now = performance.now();
        deltas.push(now - last);
        last = now;
        maxRows = Math.max(maxRows, el.querySelectorAll(sel).length);
      }
    }
    deltas.sort((a, b) => a - b);
    const q = (p: number) => deltas[Math.min(deltas.length - 1, Math.floor(p * deltas.length))];
    return { frames: deltas.length, p50: q(0.5), p95: q(0.95), max: deltas[deltas.length - 1], over50: deltas.filter((d) => d > 50).length, maxRows };
  }, rowSelector);
}

export interface OIDCProvider extends Running {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Queues the person the provider logs in at its next authorization request. */
  queueUser: (u: { email: string; name?: string; emailVerified?: boolean; groups?: string[] }) => Promise<void>;
}

/**
 * A real OpenID Connect provider on loopback (hack/oidcprovider: mockoidc's server — discovery,
 * JWKS, the code flow with PKCE, signed ID tokens), built from this checkout.
 */
export async function startOIDCProvider(tmp: string): Promise<OIDCProvider> {
  const bin = join(tmp, 'oidcprovider');
  const res = spawnSync('go', ['build', '-o', bin, './hack/oidcprovider'], { cwd: repoRoot, stdio: 'inherit', timeout: 600_000 });
  if (res.status !== 0) throw new Error(`go build ./hack/oidcprovider failed (status ${res.status}, ${res.error ?? ''})`);
  // stdin stays open: the provider stops when it closes (or on SIGTERM).
  const proc = spawn(bin, [], { stdio: ['pipe', 'pipe', 'inherit'] });
  const first = await new Promise<string>((ok, fail) => {
    let out = '';
    const t = setTimeout(() => fail(new Error(`oidcprovider printed no line in 30s: ${out}`)), 30_000);
    proc.stdout!.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(t);
        ok(out.slice(0, nl));
      }
    });
    proc.once('exit', (code) => fail(new Error(`oidcprovider exited with ${code}: ${out}`)));
  });
  const { control: controlURL, ...info } = JSON.parse(first) as { issuer: string; clientId: string; clientSecret: string; control: string };
  const control = controlURL + '/_test/users';
  log(`OpenID provider at ${info.issuer}`);
  return {
    ...info,
    url: info.issuer,
    queueUser: async (u) => {
      const r = await fetch(control, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(u) });
      if (r.status !== 204) throw new Error(`queue user: ${r.status} ${await r.text()}`);
    },
    stop: stopper(proc),
  };
}
