// Package appproxyv1 is the app-proxy API, version 1: the REST API and the GraphQL schema every
// runtime serves for its GitOps applications, Git Sources and clusters (docs/appproxy.md).
// Clients reach it through the control plane at /runtimes/{runtime}/app-proxy/… (or at the
// runtime's ingress).
//
// Its types are the JSON on the wire. The runtime (internal/gitops/host) maps its engine's
// values to them, the Go client (client/) decodes them (its application types are aliases of
// these), and the web UI's TypeScript types (web/src/api) are checked against the same golden
// JSON (api/testdata/wire, written by api/wire_test.go), so the three cannot drift apart.
//
// Like runtimev1 and runnerv1, this package imports nothing of Freshet's internals.
package appproxyv1

import _ "embed"

// Paths of the app-proxy on a runtime.
const (
	// Prefix is where the REST API is mounted.
	Prefix = "/app-proxy/api/v1/"
	// GraphQLPath serves GraphQLSchema (POST {"query", "variables", "operationName"}).
	GraphQLPath = "/app-proxy/api/graphql"
	// GitTokenHeader carries the caller's git provider token for GET git/repositories; the
	// runtime uses it for that call only.
	GitTokenHeader = "X-Git-Token"
)

// GraphQLSchema is the app-proxy's GraphQL API (schema.graphql). Typed fields cover what lists
// and filters need; JSON fields carry this package's types, as the REST API answers them.
//
//go:embed schema.graphql
var GraphQLSchema string

// List is a collection the REST API answers: {"items": [...]}.
type List[T any] struct {
	Items []T `json:"items"`
}
