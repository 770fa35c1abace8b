package workflows

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
)

// Artifact is Argo Workflows' artifact: an input (Path is where it goes in the container; From
// or a location says where it comes from) or an output (Path is what is stored; the location
// defaults to the artifact repository).
type Artifact struct {
	Name           string           `json:"name"`
	Path           string           `json:"path,omitempty"`
	Mode           *int32           `json:"mode,omitempty"`
	From           string           `json:"from,omitempty"`
	FromExpression string           `json:"fromExpression,omitempty"`
	Optional       bool             `json:"optional,omitempty"`
	Archive        *ArchiveStrategy `json:"archive,omitempty"`
	GlobalName     string           `json:"globalName,omitempty"`
	ArtifactGC     *ArtifactGC      `json:"artifactGC,omitempty"`
	// Deleted is set in a node's outputs once artifactGC deleted the object.
	Deleted bool `json:"deleted,omitempty"`
	ArtifactLocation

	// Recognised, not built yet: refused by name.
	SubPath     string `json:"subPath,omitempty"`
	RecurseMode bool   `json:"recurseMode,omitempty"`
	ArchiveLogs *bool  `json:"archiveLogs,omitempty"`
}

// ArtifactLocation is where an artifact is: at most one of its fields is set.
type ArtifactLocation struct {
	S3   *S3Artifact   `json:"s3,omitempty"`
	Git  *GitArtifact  `json:"git,omitempty"`
	HTTP *HTTPArtifact `json:"http,omitempty"`
	Raw  *RawArtifact  `json:"raw,omitempty"`

	// Recognised, not built yet: refused by name.
	Artifactory json.RawMessage `json:"artifactory,omitempty"`
	HDFS        json.RawMessage `json:"hdfs,omitempty"`
	OSS         json.RawMessage `json:"oss,omitempty"`
	GCS         json.RawMessage `json:"gcs,omitempty"`
	Azure       json.RawMessage `json:"azure,omitempty"`
}

// HasLocation reports whether a location is given.
func (l ArtifactLocation) HasLocation() bool {
	return l.S3 != nil || l.Git != nil || l.HTTP != nil || l.Raw != nil
}

// S3Bucket is an S3-compatible bucket and how to reach it.
type S3Bucket struct {
	Endpoint        string                    `json:"endpoint,omitempty"`
	Bucket          string                    `json:"bucket,omitempty"`
	Region          string                    `json:"region,omitempty"`
	Insecure        *bool                     `json:"insecure,omitempty"`
	AccessKeySecret *corev1.SecretKeySelector `json:"accessKeySecret,omitempty"`
	SecretKeySecret *corev1.SecretKeySelector `json:"secretKeySecret,omitempty"`

	// Accepted and ignored: the bucket must exist.
	CreateBucketIfNotPresent json.RawMessage `json:"createBucketIfNotPresent,omitempty"`
	// Recognised, not built yet: refused by name.
	RoleARN            string          `json:"roleARN,omitempty"`
	UseSDKCreds        bool            `json:"useSDKCreds,omitempty"`
	EncryptionOptions  json.RawMessage `json:"encryptionOptions,omitempty"`
	CASecret           json.RawMessage `json:"caSecret,omitempty"`
	SessionTokenSecret json.RawMessage `json:"sessionTokenSecret,omitempty"`
}

// S3Artifact is an object in a bucket.
type S3Artifact struct {
	S3Bucket `json:",inline"`
	Key      string `json:"key,omitempty"`
}

// GitArtifact is a git repository checked out at a revision (inputs only).
type GitArtifact struct {
	Repo              string                    `json:"repo"`
	Revision          string                    `json:"revision,omitempty"`
	Depth             *uint64                   `json:"depth,omitempty"`
	UsernameSecret    *corev1.SecretKeySelector `json:"usernameSecret,omitempty"`
	PasswordSecret    *corev1.SecretKeySelector `json:"passwordSecret,omitempty"`
	DisableSubmodules bool                      `json:"disableSubmodules,omitempty"`

	// Recognised, not built yet: refused by name.
	SSHPrivateKeySecret   json.RawMessage `json:"sshPrivateKeySecret,omitempty"`
	Fetch                 []string        `json:"fetch,omitempty"`
	InsecureIgnoreHostKey bool            `json:"insecureIgnoreHostKey,omitempty"`
	SingleBranch          bool            `json:"singleBranch,omitempty"`
	Branch                string          `json:"branch,omitempty"`
}

// HTTPArtifact is a URL: GET for an input, PUT for an output.
type HTTPArtifact struct {
	URL     string       `json:"url"`
	Headers []HTTPHeader `json:"headers,omitempty"`

	// Recognised, not built yet: refused by name.
	Auth json.RawMessage `json:"auth,omitempty"`
}

// HTTPHeader is a header sent with an HTTP artifact's request.
type HTTPHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// RawArtifact is an input artifact's content, given in the workflow.
type RawArtifact struct {
	Data string `json:"data"`
}

// ArchiveStrategy is how an output artifact is archived: tar and gzip (the default), none, or
// zip.
type ArchiveStrategy struct {
	Tar  *TarStrategy `json:"tar,omitempty"`
	None *struct{}    `json:"none,omitempty"`
	Zip  *struct{}    `json:"zip,omitempty"`
}

// TarStrategy is tar and gzip, at CompressionLevel (gzip's -1 to 9).
type TarStrategy struct {
	CompressionLevel *int32 `json:"compressionLevel,omitempty"`
}

// ArtifactGC is when output artifacts are deleted: OnWorkflowCompletion, OnWorkflowDeletion or
// Never (the default).
type ArtifactGC struct {
	Strategy string `json:"strategy,omitempty"`

	// Accepted and ignored: the controller deletes the objects itself, no pod runs.
	PodMetadata        json.RawMessage `json:"podMetadata,omitempty"`
	ServiceAccountName string          `json:"serviceAccountName,omitempty"`
}

// WorkflowArtifactGC is spec.artifactGC.
type WorkflowArtifactGC struct {
	ArtifactGC            `json:",inline"`
	ForceFinalizerRemoval bool `json:"forceFinalizerRemoval,omitempty"`

	// Accepted and ignored (no GC pod runs).
	PodSpecPatch string `json:"podSpecPatch,omitempty"`
}

// The artifactGC strategies.
const (
	ArtifactGCOnWorkflowCompletion = "OnWorkflowCompletion"
	ArtifactGCOnWorkflowDeletion   = "OnWorkflowDeletion"
	ArtifactGCNever                = "Never"
)

// ArtifactRepository is Argo's artifact repository: where output artifacts without a location
// go. Only S3 is built.
type ArtifactRepository struct {
	S3          *S3ArtifactRepository `json:"s3,omitempty"`
	ArchiveLogs *bool                 `json:"archiveLogs,omitempty"`

	// Recognised, not built yet: refused by name.
	Artifactory json.RawMessage `json:"artifactory,omitempty"`
	HDFS        json.RawMessage `json:"hdfs,omitempty"`
	OSS         json.RawMessage `json:"oss,omitempty"`
	GCS         json.RawMessage `json:"gcs,omitempty"`
	Azure       json.RawMessage `json:"azure,omitempty"`
}

// S3ArtifactRepository is a bucket and the format of the keys stored in it.
type S3ArtifactRepository struct {
	S3Bucket  `json:",inline"`
	KeyFormat string `json:"keyFormat,omitempty"`
	// KeyPrefix is Argo's older form of KeyFormat.
	KeyPrefix string `json:"keyPrefix,omitempty"`
}

// ArtifactRepositoryRef is spec.artifactRepositoryRef: a key of a ConfigMap in the Workflow's
// namespace (the ConfigMap "artifact-repositories", and the key its annotation
// workflows.argoproj.io/default-artifact-repository names, when left out).
type ArtifactRepositoryRef struct {
	ConfigMap string `json:"configMap,omitempty"`
	Key       string `json:"key,omitempty"`
}

// ArtifactRepositoryRefStatus is the repository a Workflow resolved when it started (its
// artifacts are stored there even when the ConfigMap changes).
type ArtifactRepositoryRefStatus struct {
	ArtifactRepositoryRef `json:",inline"`
	Namespace             string              `json:"namespace,omitempty"`
	Default               bool                `json:"default,omitempty"`
	ArtifactRepository    *ArtifactRepository `json:"artifactRepository,omitempty"`
}
