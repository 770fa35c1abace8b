package app

// The types below mirror Argo CD's argoproj.io/v1alpha1 Application and AppProject, field for
// field, with the same JSON names, so YAML written for Argo CD decodes unchanged. Fields Argo CD
// has that Freshet does not implement are recognised by the decoder (see recognised in
// decode.go) and reported as unsupported or ignored instead of "unknown".

// Group, version and kinds accepted.
const (
	APIVersion     = "argoproj.io/v1alpha1"
	KindApp        = "Application"
	KindAppProject = "AppProject"
	DefaultProject = "default"
)

// ObjectMeta is the part of Kubernetes metadata an Application or AppProject uses.
// Server-populated fields (uid, resourceVersion, creationTimestamp, managedFields, ...) are
// accepted and ignored, so `kubectl get -o yaml` output decodes.
type ObjectMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Finalizers  []string          `json:"finalizers,omitempty"`
}

// Application is an Argo CD Application.
type Application struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   ObjectMeta      `json:"metadata"`
	Spec       ApplicationSpec `json:"spec"`

	// Warnings lists recognised fields that are accepted but have no effect in Freshet
	// (kustomize.version, helm.passCredentials, ...), for the app's conditions.
	Warnings []string `json:"-"`
}

// ApplicationSpec is spec of an Application.
type ApplicationSpec struct {
	Source               *Source                     `json:"source,omitempty"`
	Sources              []Source                    `json:"sources,omitempty"`
	Destination          Destination                 `json:"destination"`
	Project              string                      `json:"project"`
	SyncPolicy           *SyncPolicy                 `json:"syncPolicy,omitempty"`
	IgnoreDifferences    []ResourceIgnoreDifferences `json:"ignoreDifferences,omitempty"`
	Info                 []Info                      `json:"info,omitempty"`
	RevisionHistoryLimit *int64                      `json:"revisionHistoryLimit,omitempty"`
}

// Source is where an application's manifests come from.
type Source struct {
	RepoURL        string           `json:"repoURL"`
	Path           string           `json:"path,omitempty"`
	TargetRevision string           `json:"targetRevision,omitempty"`
	Chart          string           `json:"chart,omitempty"`
	Ref            string           `json:"ref,omitempty"`
	Name           string           `json:"name,omitempty"`
	Helm           *HelmSource      `json:"helm,omitempty"`
	Kustomize      *KustomizeSource `json:"kustomize,omitempty"`
	Directory      *DirectorySource `json:"directory,omitempty"`
}

// SourceType is how a source is rendered.
type SourceType string

// Source types.
const (
	SourceTypeDirectory SourceType = "Directory"
	SourceTypeKustomize SourceType = "Kustomize"
	SourceTypeHelm      SourceType = "Helm"
)

// ExplicitType returns the type the source's options ask for ("" when none is set, in which
// case the renderer detects it from the files, as Argo CD does).
func (s *Source) ExplicitType() SourceType {
	switch {
	case s.Helm != nil:
		return SourceTypeHelm
	case s.Kustomize != nil:
		return SourceTypeKustomize
	case s.Directory != nil:
		return SourceTypeDirectory
	}
	return ""
}

// HelmSource holds Helm options.
type HelmSource struct {
	ValueFiles              []string            `json:"valueFiles,omitempty"`
	Values                  string              `json:"values,omitempty"`
	ValuesObject            map[string]any      `json:"valuesObject,omitempty"`
	Parameters              []HelmParameter     `json:"parameters,omitempty"`
	FileParameters          []HelmFileParameter `json:"fileParameters,omitempty"`
	ReleaseName             string              `json:"releaseName,omitempty"`
	PassCredentials         bool                `json:"passCredentials,omitempty"`
	IgnoreMissingValueFiles bool                `json:"ignoreMissingValueFiles,omitempty"`
	SkipCrds                bool                `json:"skipCrds,omitempty"`
	SkipSchemaValidation    bool                `json:"skipSchemaValidation,omitempty"`
	SkipTests               bool                `json:"skipTests,omitempty"`
	Version                 string              `json:"version,omitempty"`
	Namespace               string              `json:"namespace,omitempty"`
	KubeVersion             string              `json:"kubeVersion,omitempty"`
	APIVersions             []string            `json:"apiVersions,omitempty"`
}

// HelmParameter is one --set (or --set-string with ForceString).
type HelmParameter struct {
	Name        string `json:"name"`
	Value       string `json:"value"`
	ForceString bool   `json:"forceString,omitempty"`
}

// HelmFileParameter is one --set-file: the value is the content of a file in the repository.
type HelmFileParameter struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// KustomizeSource holds Kustomize overrides, applied as Argo CD applies them (`kustomize edit`
// on the app's kustomization).
type KustomizeSource struct {
	NamePrefix                string             `json:"namePrefix,omitempty"`
	NameSuffix                string             `json:"nameSuffix,omitempty"`
	Images                    []string           `json:"images,omitempty"`
	CommonLabels              map[string]string  `json:"commonLabels,omitempty"`
	CommonAnnotations         map[string]string  `json:"commonAnnotations,omitempty"`
	CommonAnnotationsEnvsubst bool               `json:"commonAnnotationsEnvsubst,omitempty"`
	ForceCommonLabels         bool               `json:"forceCommonLabels,omitempty"`
	ForceCommonAnnotations    bool               `json:"forceCommonAnnotations,omitempty"`
	LabelWithoutSelector      bool               `json:"labelWithoutSelector,omitempty"`
	LabelIncludeTemplates     bool               `json:"labelIncludeTemplates,omitempty"`
	Namespace                 string             `json:"namespace,omitempty"`
	Replicas                  []KustomizeReplica `json:"replicas,omitempty"`
	Patches                   []KustomizePatch   `json:"patches,omitempty"`
	Components                []string           `json:"components,omitempty"`
	IgnoreMissingComponents   bool               `json:"ignoreMissingComponents,omitempty"`
	Version                   string             `json:"version,omitempty"`
	KubeVersion               string             `json:"kubeVersion,omitempty"`
	APIVersions               []string           `json:"apiVersions,omitempty"`
}

// KustomizeReplica overrides the replicas of a named workload. Count is an integer (Argo CD
// accepts a number or a numeric string).
type KustomizeReplica struct {
	Name  string `json:"name"`
	Count string `json:"count"`
}

// KustomizePatch is a kustomize patch (inline or from a file) with an optional target.
type KustomizePatch struct {
	Path    string             `json:"path,omitempty"`
	Patch   string             `json:"patch,omitempty"`
	Target  *KustomizeSelector `json:"target,omitempty"`
	Options map[string]bool    `json:"options,omitempty"`
}

// KustomizeSelector selects the resources a patch applies to.
type KustomizeSelector struct {
	Group              string `json:"group,omitempty"`
	Version            string `json:"version,omitempty"`
	Kind               string `json:"kind,omitempty"`
	Name               string `json:"name,omitempty"`
	Namespace          string `json:"namespace,omitempty"`
	LabelSelector      string `json:"labelSelector,omitempty"`
	AnnotationSelector string `json:"annotationSelector,omitempty"`
}

// DirectorySource holds options of a plain directory of manifests. Include and Exclude are
// globs matched against paths relative to the source path ("*" also matches "/"; "{a,b}"
// alternatives), as in Argo CD.
type DirectorySource struct {
	Recurse bool           `json:"recurse,omitempty"`
	Include string         `json:"include,omitempty"`
	Exclude string         `json:"exclude,omitempty"`
	Jsonnet *JsonnetSource `json:"jsonnet,omitempty"`
}

// JsonnetSource holds the options of the directory's .jsonnet files, as Argo CD's
// directory.jsonnet: top-level arguments, external variables and library paths (relative to
// the repository root).
type JsonnetSource struct {
	TLAs    []JsonnetVar `json:"tlas,omitempty"`
	ExtVars []JsonnetVar `json:"extVars,omitempty"`
	Libs    []string     `json:"libs,omitempty"`
}

// JsonnetVar is a top-level argument or external variable: a string Value, or Jsonnet code
// when Code is set. $ARGOCD_APP_NAME and the other build variables in Value are substituted.
type JsonnetVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Code  bool   `json:"code,omitempty"`
}

// HasVars reports whether the options pass any argument or variable: their values may name
// the application ($ARGOCD_APP_NAME), so the render depends on it.
func (j *JsonnetSource) HasVars() bool {
	return j != nil && len(j.TLAs)+len(j.ExtVars) > 0
}

// Destination is the cluster and namespace an application deploys to: Server (an API server
// URL) or Name (a cluster registered to the runtime), not both.
type Destination struct {
	Server    string `json:"server,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// SyncPolicy controls when and how an application syncs.
type SyncPolicy struct {
	Automated                *SyncPolicyAutomated      `json:"automated,omitempty"`
	SyncOptions              SyncOptions               `json:"syncOptions,omitempty"`
	Retry                    *RetryStrategy            `json:"retry,omitempty"`
	ManagedNamespaceMetadata *ManagedNamespaceMetadata `json:"managedNamespaceMetadata,omitempty"`
}

// SyncPolicyAutomated turns on automatic sync.
type SyncPolicyAutomated struct {
	Prune      bool  `json:"prune,omitempty"`
	SelfHeal   bool  `json:"selfHeal,omitempty"`
	AllowEmpty bool  `json:"allowEmpty,omitempty"`
	Enabled    *bool `json:"enabled,omitempty"`
}

// IsAutomated reports whether automatic sync is on (automated is set and not enabled: false).
func (p *SyncPolicy) IsAutomated() bool {
	return p != nil && p.Automated != nil && (p.Automated.Enabled == nil || *p.Automated.Enabled)
}

// RetryStrategy is how failed syncs are retried.
type RetryStrategy struct {
	Limit   int64    `json:"limit,omitempty"` // negative: no limit
	Backoff *Backoff `json:"backoff,omitempty"`
	Refresh bool     `json:"refresh,omitempty"`
}

// Backoff of sync retries. Durations are Go durations ("5s", "3m") or a number of seconds.
type Backoff struct {
	Duration    string `json:"duration,omitempty"`
	Factor      *int64 `json:"factor,omitempty"`
	MaxDuration string `json:"maxDuration,omitempty"`
}

// ManagedNamespaceMetadata is put on the namespace CreateNamespace=true creates.
type ManagedNamespaceMetadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ResourceIgnoreDifferences names parts of live objects that diff ignores.
type ResourceIgnoreDifferences struct {
	Group                 string   `json:"group,omitempty"`
	Kind                  string   `json:"kind"`
	Name                  string   `json:"name,omitempty"`
	Namespace             string   `json:"namespace,omitempty"`
	JSONPointers          []string `json:"jsonPointers,omitempty"`
	JQPathExpressions     []string `json:"jqPathExpressions,omitempty"`
	ManagedFieldsManagers []string `json:"managedFieldsManagers,omitempty"`
}

// Info is a free-form name/value shown with the application.
type Info struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// AppProject is an Argo CD AppProject: what applications in it may deploy, from where, to where.
type AppProject struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   ObjectMeta     `json:"metadata"`
	Spec       AppProjectSpec `json:"spec"`

	Warnings []string `json:"-"`
}

// AppProjectSpec is spec of an AppProject.
type AppProjectSpec struct {
	Description                string        `json:"description,omitempty"`
	SourceRepos                []string      `json:"sourceRepos,omitempty"`
	Destinations               []Destination `json:"destinations,omitempty"`
	ClusterResourceWhitelist   []GroupKind   `json:"clusterResourceWhitelist,omitempty"`
	ClusterResourceBlacklist   []GroupKind   `json:"clusterResourceBlacklist,omitempty"`
	NamespaceResourceWhitelist []GroupKind   `json:"namespaceResourceWhitelist,omitempty"`
	NamespaceResourceBlacklist []GroupKind   `json:"namespaceResourceBlacklist,omitempty"`
	SourceNamespaces           []string      `json:"sourceNamespaces,omitempty"`
	SyncWindows                []SyncWindow  `json:"syncWindows,omitempty"`
	Roles                      []ProjectRole `json:"roles,omitempty"`
	// PermitOnlyProjectScopedClusters is recognised; true is unsupported.
	PermitOnlyProjectScopedClusters bool `json:"permitOnlyProjectScopedClusters,omitempty"`
}

// GroupKind names a kind of resource; both fields are globs ("*" for any).
type GroupKind struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
}
