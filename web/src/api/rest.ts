// Typed calls of the REST API (api/openapi.yaml). Pages import these, never fetch.
import { request } from './client';
import type {
  APIKey,
  Build,
  Account,
  AccountMembership,
  AuditEvent,
  AuditFilter,
  CreateAPIKeyRequest,
  CreateAccountRequest,
  CreateUserRequest,
  CreatedAPIKey,
  CreatedUser,
  Invitation,
  ListOptions,
  LoginRequest,
  LoginResponse,
  Me,
  Page,
  RegisterRuntimeRequest,
  RegisteredRuntime,
  Role,
  Runtime,
  SwitchAccountRequest,
  UpdateUserRequest,
  User,
} from './types';

const v1 = '/api/v1';
const seg = encodeURIComponent;

export const auth = {
  login: (email: string, password: string, account?: string) =>
    request<LoginResponse>(`${v1}/auth/login`, {
      method: 'POST',
      body: (account ? { email, password, account } : { email, password }) satisfies LoginRequest,
      quiet401: true,
    }),
  logout: () => request<void>(`${v1}/auth/logout`, { method: 'POST', quiet401: true }),
  switchAccount: (account: string) => request<Me>(`${v1}/auth/switch-account`, { method: 'POST', body: { account } satisfies SwitchAccountRequest }),
  /** The caller; quiet, because a 401 here just means "not logged in yet". */
  me: (signal?: AbortSignal) => request<Me>(`${v1}/me`, { signal, quiet401: true }),
};

export const accounts = {
  current: (signal?: AbortSignal) => request<Account>(`${v1}/account`, { signal }),
  create: (name: string) => request<Account>(`${v1}/accounts`, { method: 'POST', body: { name } satisfies CreateAccountRequest }),
};

export const users = {
  list: (o: ListOptions = {}, signal?: AbortSignal) => request<Page<User>>(`${v1}/users`, { query: { limit: o.limit, after: o.after }, signal }),
  get: (id: string, signal?: AbortSignal) => request<User>(`${v1}/users/${seg(id)}`, { signal }),
  create: (body: CreateUserRequest) => request<CreatedUser>(`${v1}/users`, { method: 'POST', body }),
  setRole: (id: string, role: Role) => request<User>(`${v1}/users/${seg(id)}`, { method: 'PATCH', body: { role } satisfies UpdateUserRequest }),
  remove: (id: string) => request<void>(`${v1}/users/${seg(id)}`, { method: 'DELETE' }),
};

/** The caller's invitations to other accounts; answered from a login session only. */
export const invitations = {
  list: (signal?: AbortSignal) => request<{ items: Invitation[] }>(`${v1}/invitations`, { signal }),
  accept: (id: string) => request<AccountMembership>(`${v1}/invitations/${seg(id)}/accept`, { method: 'POST' }),
  decline: (id: string) => request<void>(`${v1}/invitations/${seg(id)}/decline`, { method: 'POST' }),
};

export const apiKeys = {
  list: (o: ListOptions = {}, signal?: AbortSignal) => request<Page<APIKey>>(`${v1}/apikeys`, { query: { limit: o.limit, after: o.after }, signal }),
  create: (body: CreateAPIKeyRequest) => request<CreatedAPIKey>(`${v1}/apikeys`, { method: 'POST', body }),
  revoke: (id: string) => request<void>(`${v1}/apikeys/${seg(id)}`, { method: 'DELETE' }),
};

export const audit = {
  list: (f: AuditFilter & ListOptions = {}, signal?: AbortSignal) =>
    request<Page<AuditEvent>>(`${v1}/audit`, {
      query: {
        limit: f.limit,
        after: f.after,
        actor: f.actor,
        action: f.action,
        resourceType: f.resourceType,
        resourceId: f.resourceId,
        result: f.result,
        since: f.since,
        until: f.until,
      },
      signal,
    }),
};

/** The newest builds, for Home (the rest of the CI API is in ci.ts, loaded with its pages). */
export const recentBuilds = (limit: number, signal?: AbortSignal) => request<Page<Build>>(`${v1}/builds`, { query: { limit }, signal });

/** GitOps runtimes (docs/runtimes.md). Here, not in a page chunk, because Home shows them too. */
export const runtimes = {
  list: (signal?: AbortSignal) => request<{ items: Runtime[] }>(`${v1}/runtimes`, { signal }),
  get: (ref: string, signal?: AbortSignal) => request<Runtime>(`${v1}/runtimes/${seg(ref)}`, { signal }),
  register: (body: RegisterRuntimeRequest) => request<RegisteredRuntime>(`${v1}/runtimes`, { method: 'POST', body }),
  createHosted: (name?: string) => request<Runtime>(`${v1}/runtimes/hosted`, { method: 'POST', body: name ? { name } : {} }),
  rotateToken: (ref: string) => request<RegisteredRuntime>(`${v1}/runtimes/${seg(ref)}/token`, { method: 'POST' }),
  remove: (ref: string) => request<void>(`${v1}/runtimes/${seg(ref)}`, { method: 'DELETE' }),
};
