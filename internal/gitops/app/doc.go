// Package app decodes and checks Argo CD Applications and AppProjects
// (argoproj.io/v1alpha1), accepted as users wrote them for Argo CD.
//
// DecodeApplication, DecodeAppProject and DecodeAll read YAML strictly: an unknown field, a
// value of the wrong type or an invalid value is an *Error naming the field path
// ("spec.source.helm.parameters[0].name"), the line, the value and what would be valid. Argo CD
// fields Freshet recognises but does not implement (config management plugins, commit
// signature keys, ...) are errors that unwrap to
// ErrUnsupported; recognised fields that are harmless to ignore (status, server-populated
// metadata, kustomize.version, ...) become Warnings on the decoded object.
//
// AppProject.Permits enforces a project's sourceRepos and destinations allow-lists (globs,
// "!" to deny) and PermitsResource its resource white- and blacklists, with Argo CD's
// semantics; SyncWindowsAllow evaluates its sync windows for an application at a time;
// NewDefaultProject is the built-in "default" project that allows everything.
package app
