package render_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/render"
)

var helmRepo = map[string]string{
	"helm-guestbook/Chart.yaml": `apiVersion: v2
name: helm-guestbook
version: 0.1.0
kubeVersion: ">=1.25.0-0"
dependencies:
  - name: common
    version: 0.1.0
    repository: file://../charts/common
  - name: redis
    version: 1.0.0
  - name: extras
    version: 0.1.0
    repository: file://../charts/extras
    condition: extras.enabled
`,
	"helm-guestbook/values.yaml": `replicaCount: 1
image:
  repository: nginx
  tag: "1.27"
service:
  port: 80
extras:
  enabled: false
redis:
  maxmemory: 64mb
`,
	"helm-guestbook/values-production.yaml": "replicaCount: 3\nservice:\n  type: LoadBalancer\n",
	"helm-guestbook/templates/_helpers.tpl": `{{- define "guestbook.fullname" -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end -}}`,
	"helm-guestbook/templates/NOTES.txt":    "Thanks for installing {{ .Release.Name }}\n",
	"helm-guestbook/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "guestbook.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "common.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels: {app: guestbook}
  template:
    metadata:
      labels: {app: guestbook}
    spec:
      containers:
        - name: guestbook
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          ports:
            - containerPort: {{ .Values.service.port }}
`,
	"helm-guestbook/templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ include "guestbook.fullname" . }}
  annotations:
    kube-version: "{{ .Capabilities.KubeVersion.Version }}"
    has-monitoring: "{{ .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" }}"
spec:
  type: {{ .Values.service.type | default "ClusterIP" }}
  ports: [{port: {{ .Values.service.port }}}]
  selector: {app: guestbook}
`,
	"helm-guestbook/templates/migrate-job.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: busybox}]
`,
	"helm-guestbook/templates/tests/test-connection.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations:
    helm.sh/hook: test
spec:
  restartPolicy: Never
  containers: [{name: wget, image: busybox}]
`,
	"helm-guestbook/crds/crontab.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  names: {kind: CronTab, plural: crontabs}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`,
	"helm-guestbook/charts/redis/Chart.yaml":        "apiVersion: v2\nname: redis\nversion: 1.0.0\n",
	"helm-guestbook/charts/redis/values.yaml":       "maxmemory: 32mb\n",
	"helm-guestbook/charts/redis/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-redis\ndata:\n  maxmemory: {{ .Values.maxmemory | quote }}\n",
	"charts/common/Chart.yaml":                      "apiVersion: v2\nname: common\nversion: 0.1.0\ntype: library\n",
	"charts/common/templates/_labels.tpl":           "{{- define \"common.labels\" -}}\napp.kubernetes.io/instance: {{ .Release.Name }}\napp.kubernetes.io/managed-by: freshet\n{{- end -}}\n",
	"charts/extras/Chart.yaml":                      "apiVersion: v2\nname: extras\nversion: 0.1.0\n",
	"charts/extras/templates/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extras\n",
	"remote-dep/Chart.yaml":                         "apiVersion: v2\nname: remote-dep\nversion: 0.1.0\ndependencies:\n  - name: postgresql\n    version: 15.x.x\n    repository: https://charts.example.com/stable\n",
	"remote-dep/templates/cm.yaml":                  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
	"bad-template/Chart.yaml":                       "apiVersion: v2\nname: bad-template\nversion: 0.1.0\n",
	"bad-template/templates/ok.yaml":                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n",
	"bad-template/templates/broken.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name | nosuchfunction }}\n",
	"bad-output/Chart.yaml":                         "apiVersion: v2\nname: bad-output\nversion: 0.1.0\n",
	"bad-output/templates/cm.yaml":                  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: {{ \"[a\" }}\n",
}

func helmSrc(h *app.HelmSource) app.Source {
	s := src("helm-guestbook")
	s.Helm = h
	return s
}

func TestHelm(t *testing.T) {
	root, _, _ := checkout(t, helmRepo)
	r := newRenderer(t, render.Options{})

	res := renderOK(t, r, render.Request{Root: root, Source: src("helm-guestbook"), AppName: "guestbook", Namespace: "web", KubeVersion: "1.31.2"})
	if res.Type != app.SourceTypeHelm {
		t.Errorf("detected %s", res.Type)
	}
	want := []string{
		"CustomResourceDefinition/crontabs.stable.example.com@helm-guestbook/crds/crontab.yaml",
		"ConfigMap/guestbook-redis@helm-guestbook/charts/redis/templates/cm.yaml",
		"Service/guestbook-helm-guestbook@helm-guestbook/templates/service.yaml",
		"Deployment/guestbook-helm-guestbook@helm-guestbook/templates/deployment.yaml",
		"Pod/guestbook-test@helm-guestbook/templates/tests/test-connection.yaml",
		"Job/guestbook-migrate@helm-guestbook/templates/migrate-job.yaml",
	}
	if got := names(res); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("objects:\n got %q\nwant %q", got, want)
	}
	byKind := map[string]map[string]any{}
	for _, o := range res.Objects {
		byKind[o.Object.GetKind()] = o.Object.Object
	}
	dep := byKind["Deployment"]
	if n, _, _ := unstructuredInt(dep, "spec", "replicas"); n != 1 {
		t.Errorf("replicas = %d", n)
	}
	md := dep["metadata"].(map[string]any)
	if md["namespace"] != "web" || md["labels"].(map[string]any)["app.kubernetes.io/instance"] != "guestbook" {
		t.Errorf("deployment metadata = %v (namespace from the destination, labels from the file:// library)", md)
	}
	svcAnn := byKind["Service"]["metadata"].(map[string]any)["annotations"].(map[string]any)
	if svcAnn["kube-version"] != "v1.31.2" || svcAnn["has-monitoring"] != "false" {
		t.Errorf("capabilities = %v", svcAnn)
	}
	if byKind["ConfigMap"]["data"].(map[string]any)["maxmemory"] != "64mb" {
		t.Errorf("parent values do not reach the vendored subchart: %v", byKind["ConfigMap"]["data"])
	}

	// Values files, values, valuesObject, parameters, release name, namespace, skips.
	res = renderOK(t, r, render.Request{Root: root, AppName: "guestbook", Namespace: "web", APIVersions: []string{"monitoring.coreos.com/v1"}, Source: helmSrc(&app.HelmSource{
		ReleaseName:  "gb",
		Namespace:    "web-prod",
		ValueFiles:   []string{"values-production.yaml"},
		Values:       "image:\n  tag: from-values\n",
		ValuesObject: map[string]any{"image": map[string]any{"tag": "from-values-object"}, "extras": map[string]any{"enabled": true}},
		Parameters: []app.HelmParameter{
			{Name: "service.port", Value: "8080"},
			{Name: "image.repository", Value: "registry.example.com/nginx,web"},
		},
		SkipCrds:  true,
		SkipTests: true,
	})})
	want = []string{
		"ConfigMap/extras@helm-guestbook/charts/extras/templates/cm.yaml",
		"ConfigMap/gb-redis@helm-guestbook/charts/redis/templates/cm.yaml",
		"Service/gb-helm-guestbook@helm-guestbook/templates/service.yaml",
		"Deployment/gb-helm-guestbook@helm-guestbook/templates/deployment.yaml",
		"Job/gb-migrate@helm-guestbook/templates/migrate-job.yaml",
	}
	if got := names(res); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("objects with options:\n got %q\nwant %q", got, want)
	}
	for _, o := range res.Objects {
		u := o.Object.Object
		switch o.Object.GetKind() {
		case "Deployment":
			if n, _, _ := unstructuredInt(u, "spec", "replicas"); n != 3 {
				t.Errorf("values file replicas = %d", n)
			}
			c := u["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
			if c["image"] != "registry.example.com/nginx,web:from-values-object" {
				t.Errorf("image = %v (valuesObject wins over values; a comma in a parameter is kept)", c["image"])
			}
			if port, _, _ := unstructuredInt(c["ports"].([]any)[0].(map[string]any), "containerPort"); port != 8080 {
				t.Errorf("containerPort = %d", port)
			}
			if o.Object.GetNamespace() != "web-prod" {
				t.Errorf("helm.namespace not applied: %s", o.Object.GetNamespace())
			}
		case "Service":
			if u["spec"].(map[string]any)["type"] != "LoadBalancer" {
				t.Errorf("service type = %v", u["spec"])
			}
			if o.Object.GetAnnotations()["has-monitoring"] != "true" {
				t.Errorf("destination API versions not in .Capabilities: %v", o.Object.GetAnnotations())
			}
		}
	}

	// forceString keeps "8080" a string.
	res = renderOK(t, r, render.Request{Root: root, AppName: "guestbook", Source: helmSrc(&app.HelmSource{
		Parameters: []app.HelmParameter{{Name: "replicaCount", Value: "2"}, {Name: "image.tag", Value: "1.0", ForceString: true}},
	})})
	for _, o := range res.Objects {
		if o.Object.GetKind() == "Deployment" {
			c := o.Object.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
			if c["image"] != "nginx:1.0" {
				t.Errorf("forceString image = %v", c["image"])
			}
		}
	}
}

func TestHelmErrors(t *testing.T) {
	root, _, _ := checkout(t, helmRepo)
	r := newRenderer(t, render.Options{})

	re := renderErr(t, r, render.Request{Root: root, AppName: "x", Source: helmSrc(&app.HelmSource{ValueFiles: []string{"values-missing.yaml"}})})
	if !errors.Is(re, render.ErrNotFound) || re.At.File != "helm-guestbook/values-missing.yaml" || !strings.Contains(re.Error(), "valueFiles[0]") {
		t.Errorf("missing values file: %v", re)
	}
	res := renderOK(t, r, render.Request{Root: root, AppName: "x", Source: helmSrc(&app.HelmSource{ValueFiles: []string{"values-missing.yaml"}, IgnoreMissingValueFiles: true})})
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "values-missing.yaml") {
		t.Errorf("ignored missing values file: warnings = %q", res.Warnings)
	}
	re = renderErr(t, r, render.Request{Root: root, AppName: "x", Source: helmSrc(&app.HelmSource{ValueFiles: []string{"../../../etc/passwd"}})})
	if !errors.Is(re, render.ErrNotFound) || !strings.Contains(re.Error(), "outside the repository") {
		t.Errorf("values file outside the repository: %v", re)
	}

	re = renderErr(t, r, render.Request{Root: root, AppName: "x", Source: src("remote-dep")})
	if !errors.Is(re, render.ErrRemoteDependency) || re.At.File != "remote-dep/Chart.yaml" ||
		!strings.Contains(re.Error(), "postgresql 15.x.x from https://charts.example.com/stable") {
		t.Errorf("remote dependency: %v", re)
	}

	re = renderErr(t, r, render.Request{Root: root, AppName: "x", Source: src("bad-template")})
	if !errors.Is(re, render.ErrTool) || re.At.File != "bad-template/templates/broken.yaml" || re.At.Line != 4 || !strings.Contains(re.Error(), "nosuchfunction") {
		t.Errorf("template error: %v", re)
	}
	re = renderErr(t, r, render.Request{Root: root, AppName: "x", Source: src("bad-output")})
	if !errors.Is(re, render.ErrInvalidManifest) || re.At.File != "bad-output/templates/cm.yaml" || !strings.Contains(re.Error(), "of the rendered template") {
		t.Errorf("invalid rendered YAML: %v", re)
	}

	re = renderErr(t, r, render.Request{Root: root, AppName: "x", KubeVersion: "1.21.0", Source: src("helm-guestbook")})
	if !errors.Is(re, render.ErrTool) || !strings.Contains(re.Error(), "requires kubeVersion >=1.25.0-0") {
		t.Errorf("incompatible kube version: %v", re)
	}

	s := src("helm-guestbook")
	s.Chart = "nginx"
	re = renderErr(t, r, render.Request{Root: root, AppName: "x", Source: s})
	if !errors.Is(re, render.ErrNotFound) || !strings.Contains(re.Error(), "nginx: the fetched chart has no Chart.yaml") {
		t.Errorf("chart source without the fetched chart: %v", re)
	}
	s.Chart = "../helm-guestbook"
	re = renderErr(t, r, render.Request{Root: root, AppName: "x", Source: s})
	if !errors.Is(re, render.ErrInvalidManifest) || !strings.Contains(re.Error(), "must be the name of a chart") {
		t.Errorf("chart name with a slash: %v", re)
	}
	// A chart source renders the chart in Root/<chart> (where helmrepo unpacks it).
	s.Chart, s.Path = "helm-guestbook", "ignored"
	res, err := r.Render(context.Background(), render.Request{Root: root, AppName: "x", Source: s})
	if err != nil || len(res.Objects) == 0 || res.Type != app.SourceTypeHelm || !strings.HasPrefix(res.Objects[len(res.Objects)-1].Source.File, "helm-guestbook/templates/") {
		t.Errorf("chart source: %v %+v", err, res)
	}
}

// $ref value files (multi-source applications) come from the referenced source's checkout,
// and only from inside it.
func TestHelmRefValueFiles(t *testing.T) {
	root, _, _ := checkout(t, helmRepo)
	vroot, _, _ := checkout(t, map[string]string{"envs/prod.yaml": "replicaCount: 7\n", "secret.txt": "x"})
	r := newRenderer(t, render.Options{})
	refs := map[string]string{"values": vroot}
	res := renderOK(t, r, render.Request{Root: root, AppName: "x", Refs: refs, Source: helmSrc(&app.HelmSource{ValueFiles: []string{"$values/envs/prod.yaml"}})})
	found := false
	for _, o := range res.Objects {
		if o.Object.GetKind() == "Deployment" {
			n, _, _ := unstructuredInt(o.Object.Object, "spec", "replicas")
			found = n == 7
		}
	}
	if !found {
		t.Error("the $values file's replicaCount is not in the Deployment")
	}
	for _, tc := range []struct{ vf, want string }{
		{"$values/../" + "etc/passwd", "outside the repository of $values"},
		{"$other/envs/prod.yaml", "$other is the ref of no source"},
		{"$values/envs/nope.yaml", "does not exist in the source $values"},
	} {
		re := renderErr(t, r, render.Request{Root: root, AppName: "x", Refs: refs, Source: helmSrc(&app.HelmSource{ValueFiles: []string{tc.vf}})})
		if !errors.Is(re, render.ErrNotFound) || !strings.Contains(re.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.vf, re, tc.want)
		}
	}
}
