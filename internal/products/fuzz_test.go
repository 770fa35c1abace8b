package products

import (
	"encoding/json"
	"errors"
	"path"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// FuzzEnvironmentBody decodes environment and product bodies as the API receives them and
// validates them: a refusal is invalid input naming a field; an accepted environment has a
// known kind, an order in range, 1 to MaxTargets targets none of them empty, and globs that
// path.Match accepts; an accepted product's patterns are non-empty valid globs.
func FuzzEnvironmentBody(f *testing.F) {
	f.Add([]byte(`{"name":"prod","kind":"prod","order":2,"targets":[{"runtime":"edge","cluster":"prod","namespace":"shop-*"}]}`), []byte(`{"name":"shop","patterns":["shop-*"]}`))
	f.Add([]byte(`{"name":"qa","kind":"non-prod","targets":[{}]}`), []byte(`{"name":"x","patterns":["[a-"]}`))
	f.Add([]byte(`{"name":"Bad Name","kind":"staging","order":-1}`), []byte(`{"name":"","patterns":[""]}`))
	f.Fuzz(func(t *testing.T, envBody, productBody []byte) {
		var e Environment
		if json.Unmarshal(envBody, &e) == nil {
			err := ValidateEnvironment(e)
			var fe *errdefs.FieldError
			switch {
			case err != nil && (!errors.Is(err, errdefs.ErrInvalid) || !errors.As(err, &fe) || fe.Field == ""):
				t.Fatalf("environment %+v: refusal %v does not name a field", e, err)
			case err == nil:
				if (e.Kind != KindProd && e.Kind != KindNonProd) || e.Order < 0 || e.Order > MaxOrder || len(e.Targets) == 0 || len(e.Targets) > MaxTargets {
					t.Fatalf("accepted environment %+v", e)
				}
				for _, tg := range e.Targets {
					if tg == (Target{}) {
						t.Fatalf("accepted an empty target: %+v", e)
					}
					for _, g := range []string{tg.Runtime, tg.Cluster, tg.Namespace} {
						if _, err := path.Match(g, "x"); err != nil {
							t.Fatalf("accepted glob %q: %v", g, err)
						}
					}
					tg.matches("edge", "prod", "shop")
				}
			}
		}
		var p Product
		if json.Unmarshal(productBody, &p) == nil {
			err := ValidateProduct(p)
			if err != nil && !errors.Is(err, errdefs.ErrInvalid) {
				t.Fatalf("product %+v: refusal %v is not invalid input", p, err)
			}
			if err == nil {
				for _, g := range p.Patterns {
					if _, err := path.Match(g, "x"); err != nil || g == "" {
						t.Fatalf("accepted pattern %q", g)
					}
				}
			}
		}
	})
}
