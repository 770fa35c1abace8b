package appset

import (
	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// The types mirror Argo CD's ApplicationSet field for field, with the same JSON names.

// ApplicationSet is an Argo CD ApplicationSet.
type ApplicationSet struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   app.ObjectMeta `json:"metadata"`
	Spec       Spec           `json:"spec"`
	Status     any            `json:"status,omitempty"` // runtime state; ignored

	// Warnings lists accepted fields without effect.
	Warnings []string `json:"-"`
}

// Spec is an ApplicationSet's spec.
type Spec struct {
	GoTemplate        bool        `json:"goTemplate,omitempty"`
	GoTemplateOptions []string    `json:"goTemplateOptions,omitempty"`
	Generators        []Generator `json:"generators"`
	Template          Template    `json:"template"`
	TemplatePatch     string      `json:"templatePatch,omitempty"`
	SyncPolicy        *SyncPolicy `json:"syncPolicy,omitempty"`
	Strategy          *Strategy   `json:"strategy,omitempty"`
	// Recognised, not implemented.
	PreservedFields              any `json:"preservedFields,omitempty"`
	IgnoreApplicationDifferences any `json:"ignoreApplicationDifferences,omitempty"`
}

// Template is the Application every parameter set renders: its string fields are templated
// one by one (as in Argo CD, only strings can be).
type Template struct {
	Metadata TemplateMeta        `json:"metadata"`
	Spec     app.ApplicationSpec `json:"spec"`
}

// TemplateMeta is a template's metadata.
type TemplateMeta struct {
	Name        string            `json:"name,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Finalizers  []string          `json:"finalizers,omitempty"`
}

// SyncPolicy is what the controller may do to the applications it generates.
type SyncPolicy struct {
	PreserveResourcesOnDeletion bool   `json:"preserveResourcesOnDeletion,omitempty"`
	ApplicationsSync            string `json:"applicationsSync,omitempty"`
}

// applicationsSync policies.
const (
	PolicySync         = "sync"
	PolicyCreateOnly   = "create-only"
	PolicyCreateUpdate = "create-update"
	PolicyCreateDelete = "create-delete"
)

// Strategy is how generated applications are synced.
type Strategy struct {
	Type          string       `json:"type,omitempty"` // AllAtOnce (default) or RollingSync
	RollingSync   *RollingSync `json:"rollingSync,omitempty"`
	DeletionOrder string       `json:"deletionOrder,omitempty"`
}

// Strategy types.
const (
	StrategyAllAtOnce   = "AllAtOnce"
	StrategyRollingSync = "RollingSync"
)

// RollingSync syncs applications step by step.
type RollingSync struct {
	Steps []Step `json:"steps"`
}

// Step selects applications by label; at most MaxUpdate of them sync at once.
type Step struct {
	MatchExpressions []Requirement `json:"matchExpressions"`
	// MaxUpdate is an integer or a percentage ("25%"); nil is 100%.
	MaxUpdate any `json:"maxUpdate,omitempty"`
}

// Requirement is a label selector requirement (In, NotIn, Exists, DoesNotExist).
type Requirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// LabelSelector is a Kubernetes label selector.
type LabelSelector struct {
	MatchLabels      map[string]string `json:"matchLabels,omitempty"`
	MatchExpressions []Requirement     `json:"matchExpressions,omitempty"`
}

// Generator is one of the generators. Those Freshet does not implement are recognised.
type Generator struct {
	List     *ListGenerator    `json:"list,omitempty"`
	Clusters *ClusterGenerator `json:"clusters,omitempty"`
	Git      *GitGenerator     `json:"git,omitempty"`
	Matrix   *CombineGenerator `json:"matrix,omitempty"`
	Merge    *CombineGenerator `json:"merge,omitempty"`
	Selector *LabelSelector    `json:"selector,omitempty"`

	SCMProvider             any `json:"scmProvider,omitempty"`
	PullRequest             any `json:"pullRequest,omitempty"`
	ClusterDecisionResource any `json:"clusterDecisionResource,omitempty"`
	Plugin                  any `json:"plugin,omitempty"`
}

// ListGenerator yields its elements.
type ListGenerator struct {
	Elements     []any     `json:"elements,omitempty"`
	ElementsYaml string    `json:"elementsYaml,omitempty"`
	Template     *Template `json:"template,omitempty"`
}

// ClusterGenerator yields the runtime's registered clusters that match the selector.
type ClusterGenerator struct {
	Selector LabelSelector     `json:"selector,omitzero"`
	Values   map[string]string `json:"values,omitempty"`
	Template *Template         `json:"template,omitempty"`
	FlatList bool              `json:"flatList,omitempty"`
}

// GitGenerator yields directories or files of a repository.
type GitGenerator struct {
	RepoURL             string            `json:"repoURL"`
	Revision            string            `json:"revision,omitempty"`
	Directories         []PathEntry       `json:"directories,omitempty"`
	Files               []PathEntry       `json:"files,omitempty"`
	PathParamPrefix     string            `json:"pathParamPrefix,omitempty"`
	Values              map[string]string `json:"values,omitempty"`
	RequeueAfterSeconds *int64            `json:"requeueAfterSeconds,omitempty"`
	Template            *Template         `json:"template,omitempty"`
}

// PathEntry is a path glob, included or excluded.
type PathEntry struct {
	Path    string `json:"path"`
	Exclude bool   `json:"exclude,omitempty"`
}

// CombineGenerator is a matrix (cartesian product) or a merge (by mergeKeys) of generators.
type CombineGenerator struct {
	Generators []Generator `json:"generators"`
	MergeKeys  []string    `json:"mergeKeys,omitempty"`
	Template   *Template   `json:"template,omitempty"`
}
