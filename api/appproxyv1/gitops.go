package appproxyv1

import "time"

// Git Source kinds.
const (
	GitSourceAPIVersion = "freshet.dev/v1"
	GitSourceKind       = "GitSource"
)

// GitSource is a directory of Applications (and AppProjects) in another repository that a
// runtime loads as if they were in its installation repository (app-of-apps); it lives there
// as git-sources/<name>.yaml.
type GitSource struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   GitSourceMetadata `json:"metadata"`
	Spec       GitSourceSpec     `json:"spec"`
}

// NewGitSource returns a Git Source with its kind set.
func NewGitSource(name string, spec GitSourceSpec) GitSource {
	return GitSource{APIVersion: GitSourceAPIVersion, Kind: GitSourceKind, Metadata: GitSourceMetadata{Name: name}, Spec: spec}
}

// GitSourceMetadata names a Git Source.
type GitSourceMetadata struct {
	Name string `json:"name"`
}

// GitSourceSpec says where a Git Source's applications are.
type GitSourceSpec struct {
	RepoURL        string `json:"repoURL"`
	Path           string `json:"path,omitempty"`
	TargetRevision string `json:"targetRevision,omitempty"`
	// Include and Exclude are globs over file paths relative to Path.
	Include string `json:"include,omitempty"`
	Exclude string `json:"exclude,omitempty"`
	// Destination is given to the source's applications that name none.
	Destination AppDestination `json:"destination,omitzero"`
}

// ProviderRepo is a repository a git provider lists (GET git/repositories).
type ProviderRepo struct {
	Name          string    `json:"name"`
	FullName      string    `json:"fullName"`
	CloneURL      string    `json:"cloneUrl"`
	SSHURL        string    `json:"sshUrl,omitempty"`
	DefaultBranch string    `json:"defaultBranch,omitempty"`
	Private       bool      `json:"private"`
	UpdatedAt     time.Time `json:"updatedAt,omitzero"`
}

// Cluster is a cluster a runtime deploys to: its own ("in-cluster") or a managed one. Its
// credentials stay in the runtime.
type Cluster struct {
	Name   string            `json:"name"`
	Server string            `json:"server"`
	Labels map[string]string `json:"labels,omitempty"` // for ApplicationSet clusters generators
}

// ClusterCredential hands a managed cluster's access to a runtime (POST clusters, admins). The
// control plane only passes it through its tunnel; it never stores it.
type ClusterCredential struct {
	Name   string `json:"name"`
	Server string `json:"server"` // the cluster's https:// API server URL
	CAData []byte `json:"caData,omitempty"`
	Token  string `json:"token"`
	// Labels are the cluster's labels, which ApplicationSet clusters generators select by.
	Labels map[string]string `json:"labels,omitempty"`
}

// AddedCluster is what a runtime answers to POST clusters.
type AddedCluster struct {
	Name    string `json:"name"`
	Server  string `json:"server"`
	Version string `json:"version"` // the cluster's Kubernetes version, as the runtime reached it
}
