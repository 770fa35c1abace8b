// Typed calls of the products API: environments and the Environments view of a product
// (docs/products.md, api/openapi.yaml).
import { request } from './client';
import type { Page } from './types';

const v1 = '/api/v1';
const seg = encodeURIComponent;

export interface EnvironmentTarget {
  runtime?: string;
  cluster?: string;
  namespace?: string;
}

export interface Environment {
  name: string;
  kind: string;
  order: number;
  targets: EnvironmentTarget[];
  createdAt: string;
  updatedAt: string;
}

/** The body of POST /environments and PUT /environments/{name} (the path names it). */
export interface EnvironmentRequest {
  name: string;
  kind: string;
  order: number;
  targets: EnvironmentTarget[];
}

/** The body of POST /products and PUT /products/{name} (the path names it). */
export interface ProductRequest {
  name: string;
  patterns?: string[];
}

export interface Product {
  name: string;
  patterns: string[];
  defined: boolean;
  applications: number;
  createdAt?: string;
}

export interface ImageCommit {
  sha?: string;
  branch?: string;
  repoUrl?: string;
  message?: string;
  author?: string;
  time?: string;
}

export interface ImageIssue {
  key: string;
  tracker?: string;
  kind?: string;
  title?: string;
  state?: string;
  url?: string;
  error?: string;
}

export interface ProductImage {
  registry?: string;
  repository: string;
  tags?: string[];
  digest: string;
  commits: ImageCommit[];
  issues: ImageIssue[];
}

export interface ProductApplication {
  runtime: string;
  name: string;
  cluster: string;
  namespace: string;
  health: string;
  sync: string;
  revision: string;
  images: ProductImage[];
  deployedAt?: string;
}

export interface ProductEnvironment {
  environment: Environment;
  applications: ProductApplication[];
}

export interface ProductImageChange {
  repository: string;
  from: string;
  to: string;
  fromTags?: string[];
  toTags?: string[];
}

export interface ProductPromotion {
  from: string;
  to: string;
  fromRevisions: string[];
  toRevisions: string[];
  images: ProductImageChange[];
  commits: ImageCommit[];
  issues: ImageIssue[];
}

export interface ProductView {
  product: Product;
  environments: ProductEnvironment[];
  promotions: ProductPromotion[];
  unplaced: ProductApplication[];
}

export const environments = {
  list: (signal?: AbortSignal) => request<Page<Environment>>(`${v1}/environments`, { signal }),
  create: (body: EnvironmentRequest) => request<Environment>(`${v1}/environments`, { method: 'POST', body }),
  update: (body: EnvironmentRequest) => request<Environment>(`${v1}/environments/${seg(body.name)}`, { method: 'PUT', body }),
  remove: (name: string) => request<void>(`${v1}/environments/${seg(name)}`, { method: 'DELETE' }),
};

export const products = {
  list: (signal?: AbortSignal) => request<Page<Product>>(`${v1}/products`, { signal }),
  get: (name: string, signal?: AbortSignal) => request<ProductView>(`${v1}/products/${seg(name)}`, { signal }),
  create: (body: ProductRequest) => request<Product>(`${v1}/products`, { method: 'POST', body }),
  update: (body: ProductRequest) => request<Product>(`${v1}/products/${seg(body.name)}`, { method: 'PUT', body }),
  remove: (name: string) => request<void>(`${v1}/products/${seg(name)}`, { method: 'DELETE' }),
};

/** A digest shortened to its first 12 hex digits ("" stays ""). */
export function shortDigest(d: string): string {
  const i = d.indexOf(':');
  return i >= 0 && d.length - i - 1 > 12 ? d.slice(i + 1, i + 13) : d;
}
