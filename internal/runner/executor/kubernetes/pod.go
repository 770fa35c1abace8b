package kubernetes

import (
	"fmt"
	"maps"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// The containers of a step pod.
const (
	// StepContainer runs the step.
	StepContainer = "step"
	// InitContainer (helper image) creates the export file and the step's working directory in
	// the workspace before the step starts.
	InitContainer = "freshet-init"
	// ExportsContainer (helper image) is a native sidecar (an init container with restartPolicy
	// Always): the kubelet stops it once the step container has exited, and it then prints
	// exportsHeader and the export file to its log, where the executor reads it.
	ExportsContainer = "freshet-exports"
)

// Files of a step pod.
const (
	// ScriptDir is where the step container finds its script and cf_export (a read-only
	// downwardAPI volume).
	ScriptDir = "/freshet"
	// ScriptPath is the step's script, passed to its shell or entry point.
	ScriptPath = ScriptDir + "/step.sh"
	// CFExportPath is where cf_export is mounted, on the PATH of practically every image.
	CFExportPath = "/usr/local/bin/" + executor.CFExportCommand
	// maxScriptBytes bounds a step's script: it travels in an annotation, and a pod's
	// annotations are limited to 256 KiB in all.
	maxScriptBytes = 200 << 10
)

// Volumes of a step pod.
const (
	workspaceVolume = "workspace"
	scriptVolume    = "freshet"
)

// exportsHeader starts the log of ExportsContainer; what follows is the export file.
const exportsHeader = "--- freshet exports ---"

// workDirEnv tells InitContainer which working directory to create.
const workDirEnv = "FRESHET_WORKDIR"

// initScript runs in InitContainer. Files and directories are made writable by every user: the
// step's image may run as any user, and the volume is the build's alone.
const initScript = `set -e
umask 0
touch "$` + executor.VolumePathEnv + `/` + executor.ExportFile + `"
if [ -n "$` + workDirEnv + `" ]; then mkdir -p "$` + workDirEnv + `"; fi
`

// exportsScript runs in ExportsContainer: it waits for SIGTERM, which the kubelet sends once the
// step container has exited (or when the pod is deleted), then prints the export file.
const exportsScript = `trap 'echo "` + exportsHeader + `"; cat "$` + executor.VolumePathEnv + `/` + executor.ExportFile + `" 2>/dev/null; exit 0' TERM
while :; do sleep 3600 & wait $!; done
`

// helperResources are the requests and limits of the helper containers.
var helperResources = corev1.ResourceRequirements{
	Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
	Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
}

// podFor returns the pod that runs step s in ws, whose claim is pvc; workDir is the resolved
// working directory, to be created by InitContainer when inWorkspace.
func (k *Kubernetes) podFor(ws executor.Workspace, pvc *corev1.PersistentVolumeClaim, s executor.Step, workDir string, inWorkspace bool) (*corev1.Pod, error) {
	script := s.Script()
	if len(script) > maxScriptBytes {
		return nil, fmt.Errorf("%w: %w", executor.ErrInvalidStep, errdefs.Invalid("commands", "",
			fmt.Sprintf("are %d bytes; the kubernetes executor takes at most %d (put long scripts in a file in the repository)", len(script), maxScriptBytes)))
	}
	image := s.Image
	if image == "" {
		image = k.opts.DefaultImage
	}
	labels := maps.Clone(pvc.Labels)
	maps.Copy(labels, k.labels(nil, ws.BuildID))
	labels[LabelStep] = labelValue(s.Name)
	annotations := maps.Clone(k.opts.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationBuildID] = ws.BuildID
	annotations[AnnotationStepName] = s.Name
	annotations[annotationCFExport] = executor.CFExportScript
	files := []corev1.DownwardAPIVolumeFile{annotationFile(executor.CFExportCommand, annotationCFExport)}
	if script != "" {
		annotations[annotationScript] = script
		files = append(files, annotationFile(path.Base(ScriptPath), annotationScript))
	}

	volumePath := executor.EnvVar{Name: executor.VolumePathEnv, Value: ws.Path}
	env := executor.MergeEnv(nil, s.Env, volumePath)
	stepEnv := make([]corev1.EnvVar, len(env))
	for i, e := range env {
		stepEnv[i] = corev1.EnvVar{Name: e.Name, Value: escape(e.Value)}
	}
	var command []string
	for _, a := range s.Command(ScriptPath) {
		command = append(command, escape(a))
	}
	initEnv := []corev1.EnvVar{{Name: volumePath.Name, Value: escape(volumePath.Value)}}
	if inWorkspace {
		initEnv = append(initEnv, corev1.EnvVar{Name: workDirEnv, Value: escape(workDir)})
	}
	workspaceMount := corev1.VolumeMount{Name: workspaceVolume, MountPath: ws.Path}
	always := corev1.ContainerRestartPolicyAlways
	grace := k.opts.graceSeconds()
	mountToken := k.opts.ServiceAccount != ""
	enableServiceLinks := false

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "freshet-" + dnsLabel(ws.BuildID, 24) + "-" + dnsLabel(s.Name, 24) + "-",
			Namespace:    k.namespace,
			Labels:       labels,
			Annotations:  annotations,
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			ServiceAccountName:            k.opts.ServiceAccount,
			AutomountServiceAccountToken:  &mountToken,
			EnableServiceLinks:            &enableServiceLinks,
			TerminationGracePeriodSeconds: &grace,
			NodeSelector:                  maps.Clone(k.opts.NodeSelector),
			Tolerations:                   append([]corev1.Toleration(nil), k.opts.Tolerations...),
			InitContainers: []corev1.Container{{
				Name:         InitContainer,
				Image:        k.opts.HelperImage,
				Command:      []string{"sh", "-c", initScript},
				Env:          initEnv,
				VolumeMounts: []corev1.VolumeMount{workspaceMount},
				Resources:    helperResources,
			}, {
				Name:          ExportsContainer,
				Image:         k.opts.HelperImage,
				RestartPolicy: &always,
				Command:       []string{"sh", "-c", exportsScript},
				Env:           []corev1.EnvVar{{Name: volumePath.Name, Value: escape(volumePath.Value)}},
				VolumeMounts:  []corev1.VolumeMount{workspaceMount},
				Resources:     helperResources,
			}},
			Containers: []corev1.Container{{
				Name:       StepContainer,
				Image:      image,
				Command:    command,
				Env:        stepEnv,
				WorkingDir: workDir,
				VolumeMounts: []corev1.VolumeMount{
					workspaceMount,
					{Name: scriptVolume, MountPath: ScriptDir, ReadOnly: true},
					{Name: scriptVolume, MountPath: CFExportPath, SubPath: executor.CFExportCommand, ReadOnly: true},
				},
				Resources: *k.opts.Resources.DeepCopy(),
			}},
			Volumes: []corev1.Volume{
				{Name: workspaceVolume, VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ws.Handle},
				}},
				{Name: scriptVolume, VolumeSource: corev1.VolumeSource{
					DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: files},
				}},
			},
		},
	}
	for _, name := range k.opts.ImagePullSecrets {
		pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: name})
	}
	if s.Timeout > 0 {
		// A backstop for a runner that died: Run itself stops the step at its timeout, counted
		// from the container's start, while the deadline counts from the pod's.
		d := s.Timeout + k.opts.StartTimeout
		secs := int64((d + time.Second - 1) / time.Second)
		pod.Spec.ActiveDeadlineSeconds = &secs
	}
	if k.opts.AccessMode == corev1.ReadWriteOnce {
		// A ReadWriteOnce volume can be mounted by pods on one node at a time: parallel steps
		// of a build go where its other running pods are (the first goes anywhere).
		pod.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
					LabelBuild: labels[LabelBuild], LabelManagedBy: managedBy,
				}},
				TopologyKey: corev1.LabelHostname,
			}},
		}}
	}
	return pod, nil
}

// annotationFile projects annotation key of the pod as an executable file name.
func annotationFile(name, key string) corev1.DownwardAPIVolumeFile {
	mode := int32(0o555)
	return corev1.DownwardAPIVolumeFile{
		Path:     name,
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + key + "']"},
		Mode:     &mode,
	}
}

// escape protects s from the kubelet's $(VAR) expansion in env values and commands: "$$" stands
// for "$", so every "$" doubled reads back as s.
func escape(s string) string {
	return strings.ReplaceAll(s, "$", "$$")
}
