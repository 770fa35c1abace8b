// Package spec parses, lints and compiles pipelines written in the codefresh.yml dialect into a
// validated plan ([Pipeline]) that a runner executes without looking at the YAML again.
//
// The package does no I/O: it takes bytes and returns values. [Parse] returns the plan or every
// problem found, each naming its line, the field path (steps.build.retry.maxAttempts), the value
// and what would be valid. [Lint] returns the same problems plus warnings, with columns, for an
// editor. The compiled plan is JSON-serialisable; decoding it back recompiles branch patterns
// and condition expressions, so a runner can receive the plan over the wire.
//
// Execution-time helpers live here too, because they belong to the dialect rather than to any
// runner: [InterpolateShell] turns ${{VAR}} references in shell commands into environment
// variables the shell reads as data, [Interpolate] expands them in other fields,
// [BuiltinVariables] lists the CF_* variables a runner must provide, [When.Evaluate] decides
// whether a step runs, [Retry.Delays] gives the retry schedule, and [ParseExports] reads the
// file that cf_export writes.
//
// docs/pipelines-spec.md is the user-facing reference of the dialect; keep it true when the
// behaviour here changes.
package spec
