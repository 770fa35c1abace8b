// A Vite plugin that prints what a browser downloads before Home can render: the entry chunk
// and everything it imports statically, gzipped, and the CSS. Lazy chunks are listed apart.
import { gzipSync } from 'node:zlib';
import type { Plugin } from 'vite';

type Chunk = { type: 'chunk'; fileName: string; code: string; isEntry: boolean; imports: string[] };
type Asset = { type: 'asset'; fileName: string; source: string | Uint8Array };

export function gz(s: string | Uint8Array): number {
  return gzipSync(typeof s === 'string' ? Buffer.from(s) : s, { level: 9 }).length;
}

export function kib(n: number): string {
  return (n / 1024).toFixed(1) + ' KiB';
}

export function sizeReport(): Plugin {
  return {
    name: 'freshet-size-report',
    apply: 'build',
    writeBundle(_options, bundle) {
      const files = bundle as unknown as Record<string, Chunk | Asset>;
      const first = new Set<string>();
      const visit = (name: string) => {
        if (first.has(name)) return;
        const c = files[name];
        if (!c || c.type !== 'chunk') return;
        first.add(name);
        c.imports.forEach(visit);
      };
      Object.values(files).forEach((f) => f.type === 'chunk' && f.isEntry && visit(f.fileName));
      let js = 0;
      let raw = 0;
      let lazy = 0;
      const lines: string[] = [];
      for (const f of Object.values(files)) {
        if (f.type !== 'chunk') continue;
        const size = gz(f.code);
        if (first.has(f.fileName)) {
          js += size;
          raw += f.code.length;
        } else {
          lazy += size;
        }
        lines.push(`  ${first.has(f.fileName) ? 'first-load' : 'lazy      '}  ${kib(size).padStart(9)}  ${f.fileName}`);
      }
      let css = 0;
      for (const f of Object.values(files)) {
        if (f.type === 'asset' && f.fileName.endsWith('.css')) css += gz(f.source);
      }
      lines.sort();
      console.log('\nfreshet web UI bundle (gzip -9):');
      console.log(lines.join('\n'));
      console.log(`first-load JS: ${kib(js)} gzipped (${kib(raw)} minified); CSS: ${kib(css)} gzipped; lazy page chunks: ${kib(lazy)} gzipped\n`);
    },
  };
}
