// Package charts holds Freshet's Helm charts (freshet, freshet-runtime, freshet-runner),
// embedded so that `freshet runtime install` and `freshet runner install` render the very
// charts that `helm install` installs: one source of truth for what lands in a cluster.
package charts

import "embed"

// Names of the charts in FS, each a directory at its root.
const (
	Freshet = "freshet"
	Runtime = "freshet-runtime"
	Runner  = "freshet-runner"
)

// FS holds the charts' files, each chart under its name.
//
//go:embed all:freshet all:freshet-runtime all:freshet-runner
var FS embed.FS
