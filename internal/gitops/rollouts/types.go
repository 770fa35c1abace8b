package rollouts

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The API group and version of Argo Rollouts' kinds, and the labels and annotations Argo Rollouts
// puts on the objects it manages (the same names, so tools written for Argo Rollouts read them).
const (
	Group   = "argoproj.io"
	Version = "v1alpha1"

	// PodTemplateHashLabel on a ReplicaSet, its selector and its pods names the revision's
	// pod-template hash; Services are pointed at a revision through it.
	PodTemplateHashLabel = "rollouts-pod-template-hash"
	// RevisionAnnotation on a ReplicaSet (and the Rollout) is the revision number.
	RevisionAnnotation = "rollout.argoproj.io/revision"
	// ScaleDownDeadlineAnnotation on a ReplicaSet is when it is to be scaled to zero (RFC 3339).
	ScaleDownDeadlineAnnotation = "argo-rollouts.argoproj.io/scale-down-deadline"
	// ManagedByAnnotation on a Service names the Rollout that switches its selector.
	ManagedByAnnotation = "argo-rollouts.argoproj.io/managed-by-rollouts"
)

// Defaults, as Argo Rollouts has them.
const (
	DefaultReplicas                   = int32(1)
	DefaultRevisionHistoryLimit       = int32(10)
	DefaultProgressDeadlineSeconds    = int32(600)
	DefaultScaleDownDelaySeconds      = int32(30)
	DefaultAbortScaleDownDelaySeconds = int32(30)
	defaultMaxSurge                   = "25%"
	defaultMaxUnavailable             = "25%"
)

// Rollout is Argo Rollouts' Rollout: the fields this controller reads and writes. Fields it does
// not know are kept in the object (the CRD preserves them) and left alone.
type Rollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              RolloutSpec   `json:"spec"`
	Status            RolloutStatus `json:"status,omitempty"`
}

// RolloutSpec is the desired state.
type RolloutSpec struct {
	Replicas                *int32                 `json:"replicas,omitempty"`
	Selector                *metav1.LabelSelector  `json:"selector,omitempty"`
	Template                corev1.PodTemplateSpec `json:"template"`
	WorkloadRef             *ObjectRef             `json:"workloadRef,omitempty"`
	MinReadySeconds         int32                  `json:"minReadySeconds,omitempty"`
	Strategy                Strategy               `json:"strategy"`
	RevisionHistoryLimit    *int32                 `json:"revisionHistoryLimit,omitempty"`
	Paused                  bool                   `json:"paused,omitempty"`
	ProgressDeadlineSeconds *int32                 `json:"progressDeadlineSeconds,omitempty"`
	ProgressDeadlineAbort   bool                   `json:"progressDeadlineAbort,omitempty"`
	RestartAt               *metav1.Time           `json:"restartAt,omitempty"`
}

// ObjectRef points at the workload whose pod template a Rollout uses (spec.workloadRef: an
// apps/v1 Deployment).
type ObjectRef struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name,omitempty"`
	ScaleDown  string `json:"scaleDown,omitempty"`
}

// Strategy holds exactly one of Canary and BlueGreen.
type Strategy struct {
	Canary    *CanaryStrategy    `json:"canary,omitempty"`
	BlueGreen *BlueGreenStrategy `json:"blueGreen,omitempty"`
}

// CanaryStrategy shifts a share of the replicas to the new revision step by step.
type CanaryStrategy struct {
	CanaryService  string              `json:"canaryService,omitempty"`
	StableService  string              `json:"stableService,omitempty"`
	Steps          []CanaryStep        `json:"steps,omitempty"`
	TrafficRouting *TrafficRouting     `json:"trafficRouting,omitempty"`
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	MaxSurge       *intstr.IntOrString `json:"maxSurge,omitempty"`
	// AbortScaleDownDelaySeconds applies with traffic routing only (as in Argo Rollouts).
	AbortScaleDownDelaySeconds *int32 `json:"abortScaleDownDelaySeconds,omitempty"`
	// ScaleDownDelaySeconds (traffic routing only, 30 by default): the previous stable
	// revision keeps its pods that long after promotion, while routers catch up.
	ScaleDownDelaySeconds *int32 `json:"scaleDownDelaySeconds,omitempty"`
	DynamicStableScale    bool   `json:"dynamicStableScale,omitempty"`
	// Analysis is background analysis: it runs from startingStep until the update completes.
	Analysis *RolloutAnalysis `json:"analysis,omitempty"`
}

// TrafficRouting splits traffic between canaryService and stableService by weight. This
// controller writes NGINX Ingress canary annotations and Gateway API HTTPRoute backendRef
// weights; the other routers Argo Rollouts knows are recognised and refused by name.
type TrafficRouting struct {
	Nginx   *NginxTrafficRouting       `json:"nginx,omitempty"`
	Plugins map[string]json.RawMessage `json:"plugins,omitempty"`
	// Recognised, not built: a Rollout naming one is refused rather than run without its split.
	Istio            map[string]any `json:"istio,omitempty"`
	SMI              map[string]any `json:"smi,omitempty"`
	ALB              map[string]any `json:"alb,omitempty"`
	Ambassador       map[string]any `json:"ambassador,omitempty"`
	AppMesh          map[string]any `json:"appMesh,omitempty"`
	Traefik          map[string]any `json:"traefik,omitempty"`
	Apisix           map[string]any `json:"apisix,omitempty"`
	ManagedRoutes    []any          `json:"managedRoutes,omitempty"`
	MaxTrafficWeight *int32         `json:"maxTrafficWeight,omitempty"`
}

// NginxTrafficRouting is trafficRouting.nginx: the canary Ingress is a copy of each stable
// Ingress pointing at the canary Service, with the NGINX canary annotations.
type NginxTrafficRouting struct {
	AnnotationPrefix             string            `json:"annotationPrefix,omitempty"`
	StableIngress                string            `json:"stableIngress,omitempty"`
	StableIngresses              []string          `json:"stableIngresses,omitempty"`
	AdditionalIngressAnnotations map[string]string `json:"additionalIngressAnnotations,omitempty"`
	CanaryIngressAnnotations     map[string]string `json:"canaryIngressAnnotations,omitempty"`
}

// GatewayAPIPlugin is the plugin name Argo Rollouts' Gateway API traffic router registers under
// (trafficRouting.plugins["argoproj-labs/gatewayAPI"]).
const GatewayAPIPlugin = "argoproj-labs/gatewayAPI"

// GatewayAPIRouting is that plugin's configuration: the HTTPRoutes whose backendRefs to the
// canary and stable Services get the weights.
type GatewayAPIRouting struct {
	HTTPRoute  string           `json:"httpRoute,omitempty"`
	HTTPRoutes []GatewayAPIHTTP `json:"httpRoutes,omitempty"`
	Namespace  string           `json:"namespace,omitempty"`
	// Recognised, not built.
	GRPCRoute         string          `json:"grpcRoute,omitempty"`
	TCPRoute          string          `json:"tcpRoute,omitempty"`
	TLSRoute          string          `json:"tlsRoute,omitempty"`
	GRPCRoutes        []any           `json:"grpcRoutes,omitempty"`
	TCPRoutes         []any           `json:"tcpRoutes,omitempty"`
	TLSRoutes         []any           `json:"tlsRoutes,omitempty"`
	HTTPRouteSelector json.RawMessage `json:"httpRouteSelector,omitempty"`
}

// GatewayAPIHTTP names one HTTPRoute.
type GatewayAPIHTTP struct {
	Name            string `json:"name"`
	UseHeaderRoutes bool   `json:"useHeaderRoutes,omitempty"`
}

// CanaryStep is one step; exactly one field is set.
type CanaryStep struct {
	SetWeight      *int32                 `json:"setWeight,omitempty"`
	Pause          *RolloutPause          `json:"pause,omitempty"`
	SetCanaryScale *SetCanaryScale        `json:"setCanaryScale,omitempty"`
	Analysis       *RolloutAnalysis       `json:"analysis,omitempty"`
	Experiment     *RolloutExperimentStep `json:"experiment,omitempty"`
	SetHeaderRoute map[string]any         `json:"setHeaderRoute,omitempty"`
	SetMirrorRoute map[string]any         `json:"setMirrorRoute,omitempty"`
	Plugin         map[string]any         `json:"plugin,omitempty"`
}

// RolloutPause pauses for Duration (seconds as a number, or "30s", "5m", "1h"), or until
// promoted when Duration is absent.
type RolloutPause struct {
	Duration *intstr.IntOrString `json:"duration,omitempty"`
}

// SetCanaryScale sets the canary's scale apart from the traffic weight (trafficRouting only, as
// in Argo Rollouts).
type SetCanaryScale struct {
	Weight             *int32 `json:"weight,omitempty"`
	Replicas           *int32 `json:"replicas,omitempty"`
	MatchTrafficWeight bool   `json:"matchTrafficWeight,omitempty"`
}

// BlueGreenStrategy runs the new revision beside the active one and switches the active
// Service's selector at promotion.
type BlueGreenStrategy struct {
	ActiveService              string              `json:"activeService"`
	PreviewService             string              `json:"previewService,omitempty"`
	PreviewReplicaCount        *int32              `json:"previewReplicaCount,omitempty"`
	AutoPromotionEnabled       *bool               `json:"autoPromotionEnabled,omitempty"`
	AutoPromotionSeconds       int32               `json:"autoPromotionSeconds,omitempty"`
	MaxUnavailable             *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	ScaleDownDelaySeconds      *int32              `json:"scaleDownDelaySeconds,omitempty"`
	AbortScaleDownDelaySeconds *int32              `json:"abortScaleDownDelaySeconds,omitempty"`
	PrePromotionAnalysis       *RolloutAnalysis    `json:"prePromotionAnalysis,omitempty"`
	PostPromotionAnalysis      *RolloutAnalysis    `json:"postPromotionAnalysis,omitempty"`
}

// Phase is the status.phase Argo Rollouts writes.
type Phase string

// The phases.
const (
	PhaseHealthy     Phase = "Healthy"
	PhaseDegraded    Phase = "Degraded"
	PhaseProgressing Phase = "Progressing"
	PhasePaused      Phase = "Paused"
)

// PauseReason says why a Rollout is paused.
type PauseReason string

// The pause reasons this controller sets.
const (
	PauseReasonCanaryPauseStep PauseReason = "CanaryPauseStep"
	PauseReasonBlueGreenPause  PauseReason = "BlueGreenPause"
	PauseReasonInconclusive    PauseReason = "InconclusiveAnalysisRun"
)

// PauseCondition is one reason the Rollout is paused, and since when.
type PauseCondition struct {
	Reason    PauseReason `json:"reason"`
	StartTime metav1.Time `json:"startTime"`
}

// ConditionType is the type of a status condition.
type ConditionType string

// The condition types.
const (
	ConditionInvalidSpec    ConditionType = "InvalidSpec"
	ConditionAvailable      ConditionType = "Available"
	ConditionProgressing    ConditionType = "Progressing"
	ConditionReplicaFailure ConditionType = "ReplicaFailure"
	ConditionPaused         ConditionType = "Paused"
	ConditionCompleted      ConditionType = "Completed"
	ConditionHealthy        ConditionType = "Healthy"
)

// Condition is a status condition as Argo Rollouts writes it.
type Condition struct {
	Type               ConditionType          `json:"type"`
	Status             corev1.ConditionStatus `json:"status"`
	LastUpdateTime     metav1.Time            `json:"lastUpdateTime"`
	LastTransitionTime metav1.Time            `json:"lastTransitionTime"`
	Reason             string                 `json:"reason"`
	Message            string                 `json:"message"`
}

// RolloutStatus is what the controller writes, field for field as Argo Rollouts does.
type RolloutStatus struct {
	Abort              bool             `json:"abort,omitempty"`
	PauseConditions    []PauseCondition `json:"pauseConditions,omitempty"`
	ControllerPause    bool             `json:"controllerPause,omitempty"`
	AbortedAt          *metav1.Time     `json:"abortedAt,omitempty"`
	CurrentPodHash     string           `json:"currentPodHash,omitempty"`
	CurrentStepHash    string           `json:"currentStepHash,omitempty"`
	Replicas           int32            `json:"replicas,omitempty"`
	UpdatedReplicas    int32            `json:"updatedReplicas,omitempty"`
	ReadyReplicas      int32            `json:"readyReplicas,omitempty"`
	AvailableReplicas  int32            `json:"availableReplicas,omitempty"`
	CurrentStepIndex   *int32           `json:"currentStepIndex,omitempty"`
	CollisionCount     *int32           `json:"collisionCount,omitempty"`
	ObservedGeneration string           `json:"observedGeneration,omitempty"`
	Conditions         []Condition      `json:"conditions,omitempty"`
	Canary             CanaryStatus     `json:"canary,omitempty"`
	BlueGreen          BlueGreenStatus  `json:"blueGreen,omitempty"`
	HPAReplicas        int32            `json:"HPAReplicas,omitempty"`
	Selector           string           `json:"selector,omitempty"`
	StableRS           string           `json:"stableRS,omitempty"`
	RestartedAt        *metav1.Time     `json:"restartedAt,omitempty"`
	PromoteFull        bool             `json:"promoteFull,omitempty"`
	Phase              Phase            `json:"phase,omitempty"`
	Message            string           `json:"message,omitempty"`
}

// CanaryStatus is status.canary (weights are written with traffic routing only).
type CanaryStatus struct {
	CurrentStepAnalysisRunStatus       *RolloutAnalysisRunStatus `json:"currentStepAnalysisRunStatus,omitempty"`
	CurrentBackgroundAnalysisRunStatus *RolloutAnalysisRunStatus `json:"currentBackgroundAnalysisRunStatus,omitempty"`
	Weights                            *TrafficWeights           `json:"weights,omitempty"`
	// CurrentExperiment is the Experiment of the experiment step running now.
	CurrentExperiment string `json:"currentExperiment,omitempty"`
}

// TrafficWeights is status.canary.weights.
type TrafficWeights struct {
	Canary WeightDestination `json:"canary"`
	Stable WeightDestination `json:"stable"`
}

// WeightDestination is one side of the split.
type WeightDestination struct {
	Weight          int32  `json:"weight"`
	ServiceName     string `json:"serviceName,omitempty"`
	PodTemplateHash string `json:"podTemplateHash,omitempty"`
}

// BlueGreenStatus is status.blueGreen.
type BlueGreenStatus struct {
	PreviewSelector string `json:"previewSelector,omitempty"`
	ActiveSelector  string `json:"activeSelector,omitempty"`
	// ScaleUpPreviewCheckPoint: promotion has begun, and a preview run with
	// previewReplicaCount is being scaled to spec.replicas before the active Service switches.
	ScaleUpPreviewCheckPoint       bool                      `json:"scaleUpPreviewCheckPoint,omitempty"`
	PrePromotionAnalysisRunStatus  *RolloutAnalysisRunStatus `json:"prePromotionAnalysisRunStatus,omitempty"`
	PostPromotionAnalysisRunStatus *RolloutAnalysisRunStatus `json:"postPromotionAnalysisRunStatus,omitempty"`
}
