package pipeline

import (
	"errors"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// FuzzClusterContext feeds arbitrary values of kubernetes and helm-repository contexts (API
// bodies) to their checks: nothing panics, a refusal is invalid input naming a values.* field,
// and an accepted context reaches an http(s) server the network policy allows.
func FuzzClusterContext(f *testing.F) {
	f.Add(true, testKubeconfig, "", "", "")
	f.Add(true, "", "https://kube.example.com:6443", "tok", "")
	f.Add(true, "", "https://127.0.0.1", "tok", "")
	f.Add(true, "clusters: [1", "", "", "")
	f.Add(false, "", "https://charts.example.com/x", "u", "p")
	f.Add(false, "", "cm://h.cfcr.io/a", "", "")
	f.Add(false, "", "https://u:p@charts.example.com", "", "")
	pol, err := netpolicy.Options{}.Policy()
	if err != nil {
		f.Fatal(err)
	}
	s := &Service{policy: pol}
	f.Fuzz(func(t *testing.T, cluster bool, kubeconfig, server, user, secret string) {
		var err error
		if cluster {
			err = s.checkCluster(map[string]string{clusterKubeconfig: kubeconfig, clusterServer: server, clusterToken: secret, clusterCA: user})
		} else {
			err = s.checkHelmRepo(map[string]string{helmRepoURL: server, helmRepoUsername: user, helmRepoPassword: secret})
		}
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || !strings.HasPrefix(errdefs.Field(err), "values.") {
				t.Fatalf("refusal %v does not name a values field", err)
			}
			return
		}
		if !cluster && !strings.HasPrefix(server, "http://") && !strings.HasPrefix(server, "https://") {
			t.Fatalf("accepted repository URL %q", server)
		}
		if cluster && kubeconfig == "" && !strings.HasPrefix(server, "http") {
			t.Fatalf("accepted server %q", server)
		}
	})
}
