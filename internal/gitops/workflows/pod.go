package workflows

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// buildPod returns the pod of a container or script template's node: the user's container as
// "main", its command run under the emissary (copied into a shared volume by the "init"
// container from the executor image), a script's source in an annotation projected as a file.
func (o *operation) buildPod(n *NodeStatus, t *Template) (*corev1.Pod, error) {
	var main corev1.Container
	var orig []string
	annotations := map[string]string{}
	var volumes []corev1.Volume
	switch {
	case t.Container != nil:
		main = *t.Container.DeepCopy()
		orig = append(append(orig, main.Command...), main.Args...)
		if len(main.Command) == 0 {
			// As the container runtime would run it: the image's ENTRYPOINT, then args or
			// its CMD.
			ic, err := o.cl.imageCommand(o.ctx, o.wf.Namespace, main.Image, o.spec.ImagePullSecrets)
			if err != nil {
				return nil, fmt.Errorf("container.command is not given and the ENTRYPOINT and CMD of image %q could not be read: %v "+
					"(give container.command, or the image under key %s of the runtime's ConfigMap %s)", main.Image, err, ControllerConfigMapImagesKey, ControllerConfigMap)
			}
			orig = containerCommand(ic, main.Args)
			if len(orig) == 0 {
				return nil, fmt.Errorf("container.command is not given and image %q has neither ENTRYPOINT nor CMD", main.Image)
			}
		}
	case t.Script != nil:
		main = *t.Script.Container.DeepCopy()
		if len(t.Script.Source) > maxScriptBytes {
			return nil, fmt.Errorf("script.source is %d bytes; at most %d", len(t.Script.Source), maxScriptBytes)
		}
		orig = append(append(append(orig, main.Command...), main.Args...), scriptPath)
		annotations[annotationScript] = t.Script.Source
		volumes = append(volumes, corev1.Volume{Name: scriptVolume, VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{Path: "source", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + annotationScript + "']"}}},
		}}})
		main.VolumeMounts = append(main.VolumeMounts, corev1.VolumeMount{Name: scriptVolume, MountPath: scriptDir, ReadOnly: true})
	}
	if len(orig) == 0 {
		return nil, fmt.Errorf("template %s: command is required", t.Name)
	}
	cmd := []string{binPath, "emissary", "run", "--result"}
	for _, p := range t.Outputs.Parameters {
		if p.ValueFrom != nil && p.ValueFrom.Path != "" {
			cmd = append(cmd, "--param", p.Name+"="+p.ValueFrom.Path)
		}
	}
	artEnv, err := o.podArtifacts(n, t)
	if err != nil {
		return nil, err
	}
	if artEnv != nil {
		cmd = append(cmd, "--artifacts")
		main.Env = append(main.Env, artEnv...)
	}
	main.Name = mainContainer
	main.Command = append(append(cmd, "--"), orig...)
	main.Args = nil
	main.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	main.TerminationMessagePath = corev1.TerminationMessagePathDefault
	userVolumes, err := o.podVolumes(t, &main)
	if err != nil {
		return nil, err
	}
	volumes = append(volumes, userVolumes...)
	main.VolumeMounts = append(main.VolumeMounts, corev1.VolumeMount{Name: binVolume, MountPath: binDir, ReadOnly: true})
	volumes = append(volumes, corev1.Volume{Name: binVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})

	labels := map[string]string{LabelWorkflow: o.wf.Name}
	if pm := o.spec.PodMetadata; pm != nil {
		maps.Copy(labels, pm.Labels)
		maps.Copy(annotations, pm.Annotations)
	}
	maps.Copy(labels, t.Metadata.Labels)
	maps.Copy(annotations, t.Metadata.Annotations)
	labels[LabelWorkflow] = o.wf.Name
	annotations[AnnotationNodeName] = n.Name
	annotations[AnnotationNodeID] = n.ID

	sa := t.ServiceAccountName
	if sa == "" {
		sa = o.spec.ServiceAccountName
	}
	nodeSelector, tolerations := t.NodeSelector, t.Tolerations
	if nodeSelector == nil {
		nodeSelector = o.spec.NodeSelector
	}
	if tolerations == nil {
		tolerations = o.spec.Tolerations
	}
	if nodeSelector == nil {
		nodeSelector = o.opts.nodeSelector
	}
	if tolerations == nil {
		tolerations = o.opts.tolerations
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName(n.ID), Namespace: o.wf.Namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{o.ownerRef()}},
		Spec: corev1.PodSpec{
			RestartPolicy:      corev1.RestartPolicyNever,
			ServiceAccountName: sa,
			NodeSelector:       maps.Clone(nodeSelector),
			Tolerations:        append([]corev1.Toleration(nil), tolerations...),
			ImagePullSecrets:   append([]corev1.LocalObjectReference(nil), o.spec.ImagePullSecrets...),
			InitContainers: []corev1.Container{{
				Name:         initContainer,
				Image:        o.opts.executorImage,
				Command:      []string{o.opts.executorPath, "emissary", "init", binPath},
				VolumeMounts: []corev1.VolumeMount{{Name: binVolume, MountPath: binDir}},
			}},
			Containers: []corev1.Container{main},
			Volumes:    volumes,
		},
	}
	if d := t.ActiveDeadlineSeconds; d != nil {
		if secs, err := intOf(d); err == nil && secs > 0 {
			pod.Spec.ActiveDeadlineSeconds = &secs
		}
	}
	return pod, nil
}
