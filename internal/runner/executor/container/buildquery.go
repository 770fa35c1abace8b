package container

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

// The engine's build API (Podman's) takes options that the Docker client library has no field
// for: cacheto (buildah's --cache-to). Build puts them in the request's context, and this hook
// adds them to the build request's query.

type buildQueryKey struct{}

// withBuildQuery returns ctx carrying extra query parameters for the build request made with it.
func withBuildQuery(ctx context.Context, q url.Values) context.Context {
	if len(q) == 0 {
		return ctx
	}
	return context.WithValue(ctx, buildQueryKey{}, q)
}

// buildQueryHook adds the extra parameters of the request's context to a build request.
func buildQueryHook(req *http.Request) error {
	extra, _ := req.Context().Value(buildQueryKey{}).(url.Values)
	if len(extra) == 0 || req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/build") {
		return nil
	}
	q := req.URL.Query()
	for k, vs := range extra {
		q[k] = vs
	}
	req.URL.RawQuery = q.Encode()
	return nil
}
