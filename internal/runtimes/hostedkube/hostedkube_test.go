package hostedkube

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Bad options name the flag, the value and what is valid.
func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o     Options
		field string // "" when valid
	}{
		{Options{Server: "https://freshet.example.test"}, ""},
		{Options{Server: "https://freshet.example.test", NamespacePrefix: "tenant-rt-"}, ""},
		{Options{Server: "freshet.example.test"}, "hosted-runtimes-server"},
		{Options{Server: "https://x", NamespacePrefix: "Hosted-"}, "hosted-runtimes-namespace-prefix"},
		{Options{Server: "https://x", NamespacePrefix: "hosted"}, "hosted-runtimes-namespace-prefix"},
		{Options{Server: "https://x", NamespacePrefix: "-hosted-"}, "hosted-runtimes-namespace-prefix"},
		{Options{Server: "https://x", NamespacePrefix: "host_ed-"}, "hosted-runtimes-namespace-prefix"},
		{Options{Server: "https://x", NamespacePrefix: strings.Repeat("a", 30) + "-"}, "hosted-runtimes-namespace-prefix"},
		{Options{Server: "https://x", NodeSelector: map[string]string{"pool": "hosted", "freshet.dev/real-node": "true"}}, ""},
		{Options{Server: "https://x", NodeSelector: map[string]string{"bad key": "x"}}, "hosted-runtimes-node-selector"},
		{Options{Server: "https://x", NodeSelector: map[string]string{"pool": "not a value"}}, "hosted-runtimes-node-selector"},
		{Options{Server: "https://x", Tolerations: []corev1.Toleration{{Key: "pool", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}, ""},
		{Options{Server: "https://x", Tolerations: []corev1.Toleration{{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "x", Effect: "Sometimes"}}}, "hosted-runtimes-toleration"},
		{Options{Server: "https://x", Tolerations: []corev1.Toleration{{Key: "pool", Operator: corev1.TolerationOpExists, Value: "x", Effect: corev1.TaintEffectNoExecute}}}, "hosted-runtimes-toleration"},
		{Options{Server: "https://x", StorageSize: "20Gi", StorageClass: "fast-ssd"}, ""},
		{Options{Server: "https://x", StorageSize: "500Mi", StorageClass: "ebs.csi.aws.com"}, ""},
		{Options{Server: "https://x", StorageSize: "big"}, "hosted-runtimes-storage-size"},
		{Options{Server: "https://x", StorageSize: "0"}, "hosted-runtimes-storage-size"},
		{Options{Server: "https://x", StorageSize: "1 Gi"}, "hosted-runtimes-storage-size"},
		{Options{Server: "https://x", StorageClass: "Fast_SSD"}, "hosted-runtimes-storage-class"},
	} {
		err := tc.o.Validate()
		if tc.field == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.o, err)
			}
			if tc.o.StorageSize == "" {
				t.Errorf("%+v: the storage size has no default", tc.o)
			}
			continue
		}
		var fe *errdefs.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%+v: %v, want an invalid %s", tc.o, err, tc.field)
		}
	}
}

// --hosted-runtimes-toleration takes KEY[=VALUE]:EFFECT, as the kubernetes executor's
// --kube-toleration does; anything else names the flag, the value and the syntax.
func TestParseToleration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want corev1.Toleration // zero: invalid
	}{
		{"freshet.dev/real-node=true:NoSchedule", corev1.Toleration{Key: "freshet.dev/real-node", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		{"dedicated:NoExecute", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		{"pool=:PreferNoSchedule", corev1.Toleration{Key: "pool", Operator: corev1.TolerationOpEqual, Effect: corev1.TaintEffectPreferNoSchedule}},
		{"dedicated", corev1.Toleration{}},
		{"dedicated=x", corev1.Toleration{}},
		{"dedicated=x:Never", corev1.Toleration{}},
		{"=x:NoSchedule", corev1.Toleration{}},
		{"bad key=x:NoSchedule", corev1.Toleration{}},
		{"k=not a value:NoSchedule", corev1.Toleration{}},
	} {
		got, err := ParseToleration(tc.in)
		if tc.want.Key == "" {
			var fe *errdefs.FieldError
			if !errors.As(err, &fe) || fe.Field != "hosted-runtimes-toleration" || !strings.Contains(err.Error(), tc.in) {
				t.Errorf("%q: %v, want an invalid hosted-runtimes-toleration naming the value", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}
