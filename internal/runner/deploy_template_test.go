package runner

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Codefresh's deploy step fills {{NAME}} placeholders of its manifests with the build's
// variables. Here the values are data: a value with a newline and YAML in it stays one string.
func TestReadManifestsFillsPlaceholders(t *testing.T) {
	dir := t.TempDir()
	manifest := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-{{ BRANCH }}
  labels: {team: "{{TEAM}}"}
spec:
  replicas: {{REPLICAS}}
  paused: {{PAUSED}}
  template:
    spec:
      containers:
        - name: web
          image: registry.example/web:{{TAG}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: notes}
data:
  message: "{{MESSAGE}}"
  alert: "{{ $labels.instance }} is down"
  other: "{{UNSET}} and {{UNSET}}"
`
	path := filepath.Join(dir, "app.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"BRANCH": "main", "TEAM": "a: b", "REPLICAS": "3", "PAUSED": "false", "TAG": "1.2.3",
		"MESSAGE": "fix\nkind: Secret\nmetadata: {name: stolen}"}
	objs, missing, err := readManifests(path, func(n string) (string, bool) { v, ok := vars[n]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].GetKind() != "Deployment" || objs[1].GetKind() != "ConfigMap" {
		t.Fatalf("objects: %+v", objs)
	}
	d := objs[0].Object
	if objs[0].GetName() != "web-main" || objs[0].GetLabels()["team"] != "a: b" {
		t.Errorf("metadata: %v", d["metadata"])
	}
	spec := d["spec"].(map[string]any)
	if spec["replicas"] != int64(3) || spec["paused"] != false {
		t.Errorf("replicas %#v, paused %#v: want the number 3 and false", spec["replicas"], spec["paused"])
	}
	c := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	if c["image"] != "registry.example/web:1.2.3" {
		t.Errorf("image = %v", c["image"])
	}
	data := objs[1].Object["data"].(map[string]any)
	if data["message"] != vars["MESSAGE"] || data["alert"] != "{{ $labels.instance }} is down" || data["other"] != "{{UNSET}} and {{UNSET}}" {
		t.Errorf("data = %#v", data)
	}
	if !reflect.DeepEqual(missing, []string{"UNSET"}) {
		t.Errorf("missing = %v, want [UNSET]", missing)
	}
}
