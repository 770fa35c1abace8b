// Package api holds Freshet's API contracts: the OpenAPI 3 spec of the REST API and the GraphQL
// schema, embedded so the server serves exactly what it implements.
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
