package appproxyv1

import "time"

// Rollout is one Argo Rollouts Rollout as `GET rollouts` lists it (and `freshet rollout list -o
// json` prints it): exactly these fields.
type Rollout struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// App is the application whose manifests define the Rollout (its freshet.dev/app label),
	// empty for one applied by hand.
	App string `json:"app"`
	// Phase is status.phase: Healthy, Progressing, Paused or Degraded (empty before the
	// controller first saw it).
	Phase string `json:"phase"`
	// Strategy is canary or blueGreen.
	Strategy string `json:"strategy"`
	// Step is status.currentStepIndex (a canary's; equal to the number of steps when every step
	// is done), null for blue-green.
	Step *int32 `json:"step"`
	// StableRevision is the revision number (rollout.argoproj.io/revision) of the stable
	// ReplicaSet, CanaryRevision that of the revision being rolled out (for blue-green, the
	// preview's); null when there is none.
	StableRevision *int64 `json:"stableRevision"`
	CanaryRevision *int64 `json:"canaryRevision"`
}

// RolloutDetail is one Rollout with its steps, revisions and analysis runs
// (`GET rollouts/{namespace}/{name}` and the answer of every operation).
type RolloutDetail struct {
	Rollout
	// Message is status.message (why it is paused, degraded, ...).
	Message string `json:"message"`
	// Paused is spec.paused (a manual pause); Aborted is status.abort.
	Paused  bool `json:"paused"`
	Aborted bool `json:"aborted"`
	// Weight is the share (percent) of traffic or replicas the canary has now: the last
	// setWeight step reached (100 once fully promoted), null for blue-green.
	Weight *int32 `json:"weight"`
	// Replicas, Ready, Updated and Available are the status's counts.
	Replicas  int32 `json:"replicas"`
	Ready     int32 `json:"ready"`
	Updated   int32 `json:"updated"`
	Available int32 `json:"available"`
	// Steps are the canary's steps (none for blue-green).
	Steps []RolloutStep `json:"steps"`
	// Revisions are the Rollout's ReplicaSets, newest first.
	Revisions []RolloutRevision `json:"revisions"`
	// AnalysisRuns are the Rollout's AnalysisRuns, newest first.
	AnalysisRuns []AnalysisRun `json:"analysisRuns"`
}

// RolloutStep is one canary step.
type RolloutStep struct {
	Index int32 `json:"index"`
	// Type is setWeight, pause, analysis, setCanaryScale, experiment, setHeaderRoute,
	// setMirrorRoute or plugin.
	Type string `json:"type"`
	// Value says what the step does: "20" (setWeight), "30s" or "" (pause until promoted),
	// the analysis templates' names.
	Value string `json:"value"`
	// Status is Succeeded (behind the current step), Running (the current step), Pending, or
	// Aborted (the current step of an aborted update).
	Status string `json:"status"`
}

// RolloutRevision is one ReplicaSet of a Rollout.
type RolloutRevision struct {
	Revision        int64  `json:"revision"`
	PodTemplateHash string `json:"podTemplateHash"`
	// Role is stable, canary (the revision being rolled out; blue-green: preview), or old.
	Role      string    `json:"role"`
	Replicas  int32     `json:"replicas"`
	Ready     int32     `json:"ready"`
	Images    []string  `json:"images"`
	CreatedAt time.Time `json:"createdAt,omitzero"`
}

// AnalysisRun is an AnalysisRun of a Rollout with its metrics' measurements.
type AnalysisRun struct {
	Name string `json:"name"`
	// Phase is Pending, Running, Successful, Failed, Error or Inconclusive.
	Phase   string `json:"phase"`
	Message string `json:"message"`
	// PodTemplateHash is the revision it analyses.
	PodTemplateHash string           `json:"podTemplateHash"`
	StartedAt       time.Time        `json:"startedAt,omitzero"`
	Metrics         []AnalysisMetric `json:"metrics"`
}

// AnalysisMetric is one metric's result.
type AnalysisMetric struct {
	Name         string        `json:"name"`
	Phase        string        `json:"phase"`
	Message      string        `json:"message"`
	Count        int32         `json:"count"`
	Successful   int32         `json:"successful"`
	Failed       int32         `json:"failed"`
	Inconclusive int32         `json:"inconclusive"`
	Error        int32         `json:"error"`
	Measurements []Measurement `json:"measurements"`
}

// Measurement is one measurement of a metric.
type Measurement struct {
	Phase      string    `json:"phase"`
	Value      string    `json:"value"`
	Message    string    `json:"message"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
}

// RolloutPromoteRequest is the body of a promote: full skips every remaining step.
type RolloutPromoteRequest struct {
	Full bool `json:"full"`
}

// RolloutUndoRequest is the body of an undo: the revision whose pod template to go back to;
// 0 (or none) is the revision before the current one.
type RolloutUndoRequest struct {
	ToRevision int64 `json:"toRevision"`
}
