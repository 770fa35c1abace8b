// Package api holds Freshet's API contracts: the OpenAPI 3 spec of the REST API and the GraphQL
// schema, embedded so the server serves exactly what it implements. The protocols are its
// packages (runnerv1, runtimev1, appproxyv1); testdata/wire holds the golden JSON of every wire
// type of the REST API and the app-proxy, which wire_test.go writes and the web UI's types are
// checked against.
package api

import _ "embed"

// OpenAPI is api/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte

// GraphQLSchema is api/graphql/schema.graphql.
//
//go:embed graphql/schema.graphql
var GraphQLSchema string
