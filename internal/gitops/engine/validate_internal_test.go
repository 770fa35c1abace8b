package engine

import (
	"reflect"
	"testing"
)

func TestRemoveSchemaPath(t *testing.T) {
	obj := func() map[string]any {
		return map[string]any{"bogus": true, "spec": map[string]any{
			"containers": []any{
				map[string]any{"name": "web", "extra": 1, "image": "x"},
				map[string]any{"name": "side", "extra": 2},
			},
			"ports": []any{map[string]any{"containerPort": int64(80), "protocol": "TCP", "x": 1}},
		}}
	}
	cases := []struct {
		path string
		ok   bool
		gone func(map[string]any) bool
	}{
		{".bogus", true, func(o map[string]any) bool { _, has := o["bogus"]; return !has }},
		{`.spec.containers[name="web"].extra`, true, func(o map[string]any) bool {
			c := o["spec"].(map[string]any)["containers"].([]any)
			_, a := c[0].(map[string]any)["extra"]
			_, b := c[1].(map[string]any)["extra"]
			return !a && b
		}},
		{`.spec.ports[containerPort=80,protocol="TCP"].x`, true, func(o map[string]any) bool {
			_, has := o["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["x"]
			return !has
		}},
		{".spec.containers[1].extra", true, func(o map[string]any) bool {
			_, has := o["spec"].(map[string]any)["containers"].([]any)[1].(map[string]any)["extra"]
			return !has
		}},
		{".spec.missing", false, nil},
		{`.spec.containers[name="none"].extra`, false, nil},
		{"spec", false, nil},
		{".spec[", false, nil},
		{".", false, nil},
	}
	for _, tc := range cases {
		o := obj()
		ok := removeSchemaPath(o, tc.path)
		if ok != tc.ok {
			t.Errorf("%s: ok %v", tc.path, ok)
			continue
		}
		if ok && !tc.gone(o) {
			t.Errorf("%s: not removed: %v", tc.path, o)
		}
		if !ok && !reflect.DeepEqual(o, obj()) {
			t.Errorf("%s: changed on failure", tc.path)
		}
	}
}
