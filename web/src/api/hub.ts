// Typed calls of the template Hub API: the catalogue of WorkflowTemplates, a template's
// version, "use this template", and the account's hub sources (docs/hub.md, api/openapi.yaml).
import { request } from './client';
import type { Page } from './types';

const v1 = '/api/v1/hub';
const seg = encodeURIComponent;

export interface HubParameter {
  name: string;
  description: string;
  default: string;
  required: boolean;
  enum: string[];
}

export interface HubEntry {
  name: string;
  description: string;
  inputs: HubParameter[];
  outputs: HubParameter[];
}

export interface HubTemplate {
  name: string;
  description: string;
  categories: string[];
  tags: string[];
  source: string;
  latestVersion: string;
  versions: string[];
}

export interface HubTemplateDetail extends HubTemplate {
  version: string;
  license: string;
  owner: string;
  entrypoint: string;
  parameters: HubParameter[];
  templates: HubEntry[];
  readme: string;
  manifest: string;
  file: string;
}

export interface HubSource {
  name: string;
  url: string;
  revision: string;
  path: string;
  createdAt: string;
  commit: string;
  templates: number;
  errors: string[];
}

export interface HubCatalogue {
  items: HubTemplate[];
  sources: HubSource[];
}

export interface HubSourceRequest {
  name: string;
  url: string;
  revision?: string;
  path?: string;
}

export interface HubUseRequest {
  version?: string;
  runtime: string;
  gitSource: string;
  name?: string;
  dir?: string;
  namespace?: string;
  upsert?: boolean;
}

export interface HubUseResult {
  template: string;
  version: string;
  source: string;
  runtime: string;
  gitSource: string;
  name: string;
  repoURL: string;
  branch: string;
  file: string;
  commit: string;
  application: string;
  applicationCreated: boolean;
  namespace: string;
}

export const hub = {
  list: (signal?: AbortSignal) => request<HubCatalogue>(`${v1}/templates`, { signal }),
  get: (name: string, version?: string, signal?: AbortSignal) =>
    request<HubTemplateDetail>(`${v1}/templates/${seg(name)}${version ? `?version=${seg(version)}` : ''}`, { signal }),
  use: (name: string, body: HubUseRequest) => request<HubUseResult>(`${v1}/templates/${seg(name)}/use`, { method: 'POST', body }),
  sources: (signal?: AbortSignal) => request<Page<HubSource>>(`${v1}/sources`, { signal }),
};
