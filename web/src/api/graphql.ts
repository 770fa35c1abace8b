// GraphQL over the same session as REST (POST /api/graphql, CSRF header included by request).
import { ApiError, request } from './client';

interface GraphQLError {
  message: string;
  path?: (string | number)[];
  extensions?: { code?: string; field?: string };
}

interface GraphQLResponse<T> {
  data?: T | null;
  errors?: GraphQLError[];
}

/** Runs a query. Any error in the answer becomes an ApiError (with its code and field). */
export async function gql<T>(query: string, variables?: Record<string, unknown>, signal?: AbortSignal): Promise<T> {
  const res = await request<GraphQLResponse<T>>('/api/graphql', { method: 'POST', body: { query, variables }, signal });
  if (res?.errors?.length) {
    const e = res.errors[0];
    throw new ApiError({
      code: e.extensions?.code ?? 'internal',
      message: e.message,
      field: e.extensions?.field,
      status: 200,
    });
  }
  if (!res?.data) throw new ApiError({ code: 'bad_response', message: 'The GraphQL answer had no data.', status: 200 });
  return res.data;
}
