// Registry contexts and the images builds pushed: the client-side check of a registry's URL
// (mirroring internal/pipeline's, which stays the authority), and how pushed images are shown.
import type { BuildImage } from '../api/types';

const LABEL_RE = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const IPV4_RE = /^\d{1,3}(\.\d{1,3}){3}$/;
const PORT_RE = /^[1-9][0-9]{0,4}$/;
const PATH_RE = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;

/** What is wrong with a registry URL (host[:port] and an optional path, no scheme), if anything. */
export function registryUrlError(url: string): string | undefined {
  const v = url.trim();
  if (!v) return 'URL is required: host[:port] and an optional path, e.g. ghcr.io/acme.';
  if (v.includes('://')) return 'Leave out the scheme (https://): give host[:port] and an optional path, e.g. ghcr.io/acme.';
  if (v.length > 255) return 'URL is longer than 255 characters.';
  const slash = v.indexOf('/');
  const hostPort = slash < 0 ? v : v.slice(0, slash);
  const path = slash < 0 ? undefined : v.slice(slash + 1);
  let host = hostPort;
  let port: string | undefined;
  if (hostPort.startsWith('[')) {
    const end = hostPort.indexOf(']');
    if (end < 0 || !hostPort.slice(1, end).includes(':')) return 'Write an IPv6 address as [address] or [address]:port.';
    const rest = hostPort.slice(end + 1);
    if (rest && !rest.startsWith(':')) return 'Text follows the IPv6 address: give [address]:port.';
    if (rest) port = rest.slice(1);
    host = '';
  } else {
    const colon = hostPort.lastIndexOf(':');
    if (colon >= 0) {
      host = hostPort.slice(0, colon);
      port = hostPort.slice(colon + 1);
    }
    if (!IPV4_RE.test(host) && !host.split('.').every((l) => LABEL_RE.test(l))) return `"${host}" is not a host name or IP address.`;
  }
  if (port !== undefined && (!PORT_RE.test(port) || Number(port) > 65535)) return `Port "${port}" is not a number from 1 to 65535.`;
  if (path !== undefined) {
    const bad = path.split('/').find((c) => !PATH_RE.test(c));
    if (bad !== undefined) return `Path part "${bad}" must be lower-case letters and digits, separated by '.', '_' or '-' (no empty parts or trailing '/').`;
  }
  return undefined;
}

/** A digest as images are usually shown: the algorithm and 12 hex digits. */
export function shortDigest(d: string): string {
  const i = d.indexOf(':');
  return i < 0 || d.length - i - 1 <= 12 ? d : d.slice(0, i + 13);
}

/** Bytes in the largest binary unit that keeps the number ≥ 1, as registries count image sizes. */
export function byteSize(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

/** One row of a build's Images table: an image under one of its tags (by digest when untagged). */
export interface ImageRow {
  key: string;
  ref: string;
  image: BuildImage;
}

export function imageRows(images: readonly BuildImage[] | undefined): ImageRow[] {
  const rows: ImageRow[] = [];
  for (const im of images ?? []) {
    const tags = im.tags ?? [];
    if (tags.length === 0) rows.push({ key: `${im.id}@`, ref: `${im.repository}@${shortDigest(im.digest)}`, image: im });
    for (const t of tags) rows.push({ key: `${im.id}:${t}`, ref: `${im.repository}:${t}`, image: im });
  }
  return rows;
}
