// Package rollouts is the runtime's Argo Rollouts role: a controller that runs Argo Rollouts'
// own YAML (argoproj.io/v1alpha1 Rollout; the AnalysisTemplate, ClusterAnalysisTemplate,
// AnalysisRun and Experiment kinds are installed so their YAML applies) with no Argo install.
//
// It installs the CRDs (EnsureCRDs, at start; `freshet runtime install` applies CRDs too),
// watches Rollouts and the ReplicaSets they own, and reconciles each Rollout: one ReplicaSet per
// revision, named and labelled with the rollouts-pod-template-hash of its pod template;
// revisionHistoryLimit, minReadySeconds, progressDeadlineSeconds (and progressDeadlineAbort),
// paused, restartAt; the canary strategy (setWeight, pause and analysis steps — AnalysisRuns of
// web metrics judged with expr-lang — maxSurge and
// maxUnavailable, the weight as the share of replicas, canaryService/stableService selectors)
// and the blue-green strategy (activeService, previewService, autoPromotionEnabled,
// autoPromotionSeconds, previewReplicaCount, scaleDownDelaySeconds, abortScaleDownDelaySeconds).
// Promote, Abort, Retry and Pause are the operations `kubectl argo rollouts` offers.
//
// The status is written as Argo Rollouts writes it — phase and message (Calculate), conditions
// with Argo's reasons, currentPodHash, stableRS, currentStepIndex, pauseConditions,
// blueGreen.activeSelector — so `kubectl get rollout`, the Argo Rollouts plugin and Argo CD's
// health check read it the same.
//
// Each reconcile is a pure decision (compute: the Rollout, its ReplicaSets and the time in, a
// plan out) carried out by the controller, which then writes the status once. A spec that does
// not validate is a permanent error: the InvalidSpec condition names the field, and nothing is
// changed in the cluster. API errors are temporary and retried with backoff and jitter. Traffic
// routers, other metric providers, experiment weights and services and workloadRef kinds are
// refused by name until they are built. Experiments (standalone or made by a canary experiment
// step) are reconciled by the same controller and work queue.
package rollouts
