// Package hub holds the WorkflowTemplates Freshet's template Hub ships with, embedded in the
// binary: one directory per template under workflows/, one directory per version under its
// versions/ (workflowTemplate.yaml and README.md), the layout of Argo Hub's repository. The
// catalogue itself (decoding, the admin-added git repositories, "use this template") is
// internal/hub's.
package hub

import "embed"

// Root is the directory of FS that holds the templates.
const Root = "workflows"

// FS holds the templates under Root.
//
//go:embed all:workflows
var FS embed.FS
