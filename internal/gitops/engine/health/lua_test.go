package health

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Scripts written for these tests in the shape of Argo CD's built-in checks (a condition-based
// custom resource, an Argo CD Application, a PVC override, a wildcard for a provider's kinds).
const certificateLua = `
hs = {}
if obj.status ~= nil and obj.status.conditions ~= nil then
  for i, c in ipairs(obj.status.conditions) do
    if c.type == "Ready" and c.status == "False" then
      hs.status = "Degraded"
      hs.message = c.message
      return hs
    end
    if c.type == "Ready" and c.status == "True" then
      hs.status = "Healthy"
      hs.message = c.message
      return hs
    end
  end
end
hs.status = "Progressing"
hs.message = "Waiting for certificate"
return hs
`

const applicationLua = `
local hs = {status = "Progressing", message = ""}
if obj.status ~= nil and obj.status.health ~= nil then
  hs.status = obj.status.health.status
  if obj.status.health.message ~= nil then hs.message = obj.status.health.message end
end
return hs
`

const pvcLua = `
hs = {}
if obj.status ~= nil and (obj.status.phase == "Pending" or obj.status.phase == "Bound") then
  hs.status = "Healthy"
  hs.message = string.format("%s since %s", obj.status.phase, os.date("!%Y", 0))
  return hs
end
hs.status = "Progressing"
hs.message = "Waiting for PVC"
return hs
`

const providerLua = `
hs = {status = "Progressing", message = "Waiting for the provider"}
local synced, ready = false, false
for _, c in ipairs((obj.status or {}).conditions or {}) do
  if c.type == "Synced" then synced = c.status == "True" end
  if c.type == "Ready" then ready = c.status == "True" end
  if c.reason ~= nil and string.find(c.reason, "Error$") then
    return {status = "Degraded", message = c.message}
  end
end
if synced and ready then hs.status = "Healthy"; hs.message = "" end
return hs
`

func obj(apiVersion, kind string, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": "x", "namespace": "default"}}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func cond(typ, status, reason, msg string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg}
}

func mustParse(t *testing.T, data map[string]string) *Customizations {
	t.Helper()
	c, problems := ParseCustomizations(data)
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	return c
}

func TestLuaCustomizations(t *testing.T) {
	c := mustParse(t, map[string]string{
		"resource.customizations.health.cert-manager.io_Certificate": certificateLua,
		"resource.customizations.health.argoproj.io_Application":     applicationLua,
		"resource.customizations.health.PersistentVolumeClaim":       pvcLua,
		"resource.customizations.health.*.aws.example.io_*":          providerLua,
		"unrelated.key": "x",
	})
	checker := (&Checker{}).WithCustomizations(c)
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		want Result
	}{
		{"certificate ready", obj("cert-manager.io/v1", "Certificate", map[string]any{"conditions": []any{cond("Ready", "True", "Ready", "Certificate is up to date")}}),
			Result{Healthy, "Certificate is up to date"}},
		{"certificate failing", obj("cert-manager.io/v1", "Certificate", map[string]any{"conditions": []any{cond("Ready", "False", "Failed", "issuer not found")}}),
			Result{Degraded, "issuer not found"}},
		{"certificate new", obj("cert-manager.io/v1", "Certificate", nil), Result{Progressing, "Waiting for certificate"}},
		{"application degraded", obj("argoproj.io/v1alpha1", "Application", map[string]any{"health": map[string]any{"status": "Degraded", "message": "bad"}}),
			Result{Degraded, "bad"}},
		{"application no status", obj("argoproj.io/v1alpha1", "Application", nil), Result{Progressing, ""}},
		// The built-in PVC check says Pending is Progressing; the customization overrides it.
		{"pvc pending overridden", obj("v1", "PersistentVolumeClaim", map[string]any{"phase": "Pending"}), Result{Healthy, "Pending since 1970"}},
		{"wildcard healthy", obj("ec2.aws.example.io/v1beta1", "Instance", map[string]any{"conditions": []any{cond("Synced", "True", "", ""), cond("Ready", "True", "", "")}}),
			Result{Healthy, ""}},
		{"wildcard degraded", obj("s3.aws.example.io/v1beta1", "Bucket", map[string]any{"conditions": []any{cond("Synced", "False", "ReconcileError", "access denied")}}),
			Result{Degraded, "access denied"}},
		{"no customization: built-in", obj("v1", "Service", nil), Result{Status: Healthy}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := checker.Assess(tc.obj)
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	// Deleting objects are Progressing before any script runs, as in Argo CD.
	o := obj("cert-manager.io/v1", "Certificate", nil)
	o.SetDeletionTimestamp(nowPtr())
	if got := checker.Assess(o); got.Status != Progressing || got.Message != "pending deletion" {
		t.Fatalf("deleting: %+v", got)
	}
}

func TestLuaLegacyForm(t *testing.T) {
	c, problems := ParseCustomizations(map[string]string{
		"resource.customizations": "cert-manager.io/Certificate:\n  health.lua: |\n" + indent(certificateLua, "    ") +
			"ConfigMap:\n  health.lua: |\n    return {status = \"Suspended\", message = obj.metadata.name}\n" +
			"example.com/Thing:\n  health.lua.useOpenLibs: true\n  health.lua: |\n    return {status = \"Healthy\"}\n" +
			"example.com/NoHealth:\n  ignoreDifferences: |\n    jsonPointers: [/spec]\n",
		// The newer form wins over the older one for the same kind.
		"resource.customizations.health.ConfigMap": `return {status = "Degraded", message = "newer"}`,
	})
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), "useOpenLibs") || !strings.Contains(problems[0].Error(), "example.com/Thing") {
		t.Fatalf("problems: %v", problems)
	}
	if c.Len() != 3 {
		t.Fatalf("len %d, keys %v", c.Len(), c.Keys())
	}
	if r, _ := c.Assess(obj("v1", "ConfigMap", nil)); r != (Result{Degraded, "newer"}) {
		t.Fatalf("configmap: %+v", r)
	}
	if r, _ := c.Assess(obj("cert-manager.io/v1", "Certificate", nil)); r.Status != Progressing {
		t.Fatalf("certificate: %+v", r)
	}
}

func indent(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimPrefix(s, "\n"), "\n") {
		b.WriteString(prefix + l + "\n")
	}
	return b.String()
}

func TestLuaBadConfig(t *testing.T) {
	_, problems := ParseCustomizations(map[string]string{
		"resource.customizations.health.a_b_c":                `return {status="Healthy"}`,
		"resource.customizations.health.example.com_Foo":      "hs = {\nreturn hs end end",
		"resource.customizations.health.example.com_Bar":      "  ",
		"resource.customizations.health.[_Baz":                `return {status="Healthy"}`,
		"resource.customizations":                             "- a\n- b\n",
		"resource.customizations.useOpenLibs.example.com_Foo": "true",
	})
	want := []string{"a_b_c", "example.com_Foo", "example.com_Bar", "[_Baz", "resource.customizations", "useOpenLibs"}
	all := ""
	for _, p := range problems {
		all += p.Error() + "\n"
	}
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("no problem names %q:\n%s", w, all)
		}
	}
	if !strings.Contains(all, "line:2") {
		t.Errorf("the syntax error does not name its line:\n%s", all)
	}
}

func TestLuaResults(t *testing.T) {
	cases := map[string]string{
		`return "Healthy"`:         "returned string, want a table",
		`return {status = "Fine"}`: `returned status "Fine"`,
		`return {}`:                `returned status ""`,
		`error("boom")`:            "boom",
		`return {status = obj.spec.missing.field}`: "attempt to index",
	}
	for src, want := range cases {
		s, err := CompileLua("resource.customizations.health.example.com_Foo", src)
		if err != nil {
			t.Fatal(err)
		}
		r := s.Assess(obj("example.com/v1", "Foo", nil))
		if r.Status != Unknown || !strings.Contains(r.Message, want) || !strings.Contains(r.Message, "example.com_Foo") {
			t.Errorf("%s: got %+v, want Unknown with %q", src, r, want)
		}
	}
}

// The sandbox: no os beyond time, no io, no loaders; bounds stop scripts that do not end or
// grow without end, with a message saying which bound.
func TestLuaSandbox(t *testing.T) {
	cases := []struct {
		src, want string
		bound     bool
	}{
		{`os.execute("touch /tmp/x")`, "attempt to call a non-function", false},
		{`return {status = io.open("/etc/passwd"):read("*a")}`, "attempt to index a non-table", false},
		{`local f = load("return 1")`, "attempt to call a non-function", false},
		{`require("os")`, "attempt to call a non-function", false},
		{`dofile("/etc/passwd")`, "attempt to call a non-function", false},
		{`print(os.getenv("HOME"))`, "attempt to call a non-function", false},
		// Under the race detector the time bound may come first.
		{`while true do end`, "stopped", true},
		{`local function f() return f() + 1 end return f()`, "stack overflow", false},
		{`local s = "x" while true do s = s .. s end`, "stopped: built a string of", true},
		{`local t = {} local s = string.rep("y", 1000) for i = 1, 1e9 do t[i] = s .. i end`, "", true},
		{`return {status = string.rep("x", 1e12)}`, "string.rep", false},
		{`return {status = string.format("%999999999s", "")}`, "string.format", false},
		{`local t = {} local s = string.rep("q", 1000000) for i = 1, 100 do t[i] = s end return {status = string.format(string.rep("%s", 100), unpack(t))}`, "string.format: result may be larger", false},
		{`local t = {} for i = 1, 200 do t[i] = string.rep("z", 100000) end return {status = table.concat(t)}`, "table.concat", false},
		{`return {status = string.rep("a", 60):find(string.rep("a-", 30) .. "b")}`, "too costly", false},
		{`return {status = string.gsub(string.rep("a", 10000), "a", string.rep("b", 1000))}`, "string.gsub", false},
		{`local n = 0 return {status = string.gsub(string.rep("a", 16000), "a", function(m) n = n + 1 return string.rep("c", 1000) end)}`, "string.gsub", false},
	}
	for _, tc := range cases {
		s, err := CompileLua("test", tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		res, err := s.run(obj("example.com/v1", "Foo", nil).Object)
		if err == nil {
			t.Errorf("%s: no error, got %+v", tc.src, res)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q, want %q", tc.src, err, tc.want)
		}
		if tc.bound != errors.Is(err, ErrLuaBound) {
			t.Errorf("%s: bound error %v, want %v (%v)", tc.src, errors.Is(err, ErrLuaBound), tc.bound, err)
		}
	}
	// What the sandbox keeps works.
	s, err := CompileLua("ok", `
local parts = {}
for w in string.gmatch("a,b,c", "[^,]+") do parts[#parts+1] = string.upper(w) end
local x = string.gsub("hello world", "o", "0")
table.sort(parts, function(a, b) return a > b end)
return {status = "Healthy", message = table.concat(parts, "-") .. " " .. x .. " " .. math.floor(2.7) .. " " .. tostring(os.time() > 0) .. " " .. select("#", pcall(error, "e"))}`)
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Assess(obj("v1", "X", nil)); r != (Result{Healthy, "C-B-A hell0 w0rld 2 true 2"}) {
		t.Fatalf("got %+v", r)
	}
}

func TestLuaObjectConversion(t *testing.T) {
	s, err := CompileLua("conv", `
local c = obj.spec.items
return {status = "Healthy", message = #c .. " " .. c[1].name .. " " .. tostring(obj.spec.on) .. " " .. obj.spec.n .. " " .. tostring(obj.spec.none)}`)
	if err != nil {
		t.Fatal(err)
	}
	o := obj("v1", "X", nil)
	o.Object["spec"] = map[string]any{"items": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}, "on": true, "n": int64(3), "none": nil}
	if r := s.Assess(o); r != (Result{Healthy, "2 a true 3 nil"}) {
		t.Fatalf("got %+v", r)
	}
}

func nowPtr() *metav1.Time { t := metav1.Now(); return &t }

// A result is remembered per object version: the same version is not run again, a new one is.
func TestLuaResultPerVersion(t *testing.T) {
	s, err := CompileLua("count", `n = (n or 0) + 1 return {status = "Healthy", message = obj.metadata.resourceVersion}`)
	if err != nil {
		t.Fatal(err)
	}
	o := obj("v1", "X", nil)
	o.SetUID("u1")
	o.SetResourceVersion("1")
	if r := s.Assess(o); r.Message != "1" {
		t.Fatal(r)
	}
	o.Object["status"] = map[string]any{"changed": true} // same version: not run again
	if r := s.Assess(o); r.Message != "1" {
		t.Fatal(r)
	}
	o.SetResourceVersion("2")
	if r := s.Assess(o); r.Message != "2" {
		t.Fatal(r)
	}
	if len(s.results) != 2 {
		t.Fatalf("%d results remembered", len(s.results))
	}
}
