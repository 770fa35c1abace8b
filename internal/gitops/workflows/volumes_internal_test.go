package workflows

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Volumes reach the pods: a template's own (all of them), the workflow's that its container
// mounts (with the workflow's variables substituted), and the claims of volumeClaimTemplates,
// made once per run as <workflow>-<claim>, owned by the Workflow, listed in
// status.persistentVolumeClaims and deleted as volumeClaimGC says.
func TestVolumesReachPods(t *testing.T) {
	for _, tc := range []struct {
		gc      string
		code    int32
		deleted bool
	}{
		{"", 0, true}, {"", 1, false}, // Argo's default: OnWorkflowSuccess
		{"{strategy: OnWorkflowCompletion}", 1, true}, {"{strategy: OnWorkflowSuccess}", 0, true},
	} {
		gc := ""
		if tc.gc != "" {
			gc = "\n  volumeClaimGC: " + tc.gc
		}
		h := newHarness(t, `
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: vol}
spec:
  entrypoint: main`+gc+`
  arguments: {parameters: [{name: cm, value: settings}]}
  volumes: [{name: cfg, configMap: {name: "{{workflow.parameters.cm}}"}}, {name: unused, emptyDir: {}}]
  volumeClaimTemplates:
  - metadata: {name: work}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
  templates:
  - name: main
    steps: [[{name: w, template: write}], [{name: r, template: read}]]
  - name: write
    volumes: [{name: scratch, emptyDir: {}}]
    container: {image: x, command: [x], volumeMounts: [{name: work, mountPath: /work}, {name: cfg, mountPath: /cfg}]}
  - name: read
    script: {image: x, command: [sh], source: "cat /work/x", volumeMounts: [{name: work, mountPath: /work}]}`,
			func(p *corev1.Pod) run { return run{code: tc.code} })
		h.step()
		claim := h.fc.claims["vol-work"]
		if claim == nil || claim.Labels[LabelWorkflow] != "vol" || len(claim.OwnerReferences) != 1 || claim.OwnerReferences[0].UID != "uid-1" {
			t.Fatalf("claim %+v", claim)
		}
		want := []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "vol-work"}}}}
		if got := h.wf.Status.PersistentVolumeClaims; len(got) != 1 || got[0].PersistentVolumeClaim.ClaimName != "vol-work" || got[0].Name != "work" {
			t.Fatalf("status.persistentVolumeClaims %+v, want %+v", got, want)
		}
		h.runToEnd()
		names := func(p *corev1.Pod) []string {
			var out []string
			for _, v := range p.Spec.Volumes {
				out = append(out, v.Name)
				if v.Name == "cfg" && v.ConfigMap.Name != "settings" {
					t.Errorf("cfg volume names ConfigMap %q", v.ConfigMap.Name)
				}
				if v.Name == "work" && v.PersistentVolumeClaim.ClaimName != "vol-work" {
					t.Errorf("work volume %+v", v)
				}
			}
			slices.Sort(out)
			return out
		}
		w := h.fc.pods[h.fc.order[0]]
		if got := names(w); !slices.Equal(got, []string{"cfg", "freshet-bin", "scratch", "work"}) {
			t.Errorf("write pod volumes %v", got)
		}
		if tc.code == 0 {
			if got := names(h.fc.pods[h.fc.order[1]]); !slices.Equal(got, []string{"freshet-bin", "freshet-script", "work"}) {
				t.Errorf("read pod volumes %v", got)
			}
		}
		if gone := h.fc.claims["vol-work"] == nil; gone != tc.deleted || (len(h.wf.Status.PersistentVolumeClaims) == 0) != tc.deleted {
			t.Errorf("gc %q, phase %s: claim deleted %v, status %+v", tc.gc, h.wf.Status.Phase, gone, h.wf.Status.PersistentVolumeClaims)
		}
	}
}
