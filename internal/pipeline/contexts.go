package pipeline

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
)

// Context types.
const (
	ContextConfig   = "config"
	ContextSecret   = "secret"
	ContextRegistry = "registry" // a container registry's address and credentials (registries.go)
	// ContextGit is in gitcontexts.go.
	// ContextKubernetes is a cluster that deploy and helm steps name (clusters.go).
	ContextKubernetes = "kubernetes"
	// ContextHelmRepo is a Helm chart repository's URL and credentials (clusters.go).
	ContextHelmRepo = "helm-repository"
)

// MaskedValue replaces secret values (of secret contexts, registry passwords and encrypted
// pipeline variables) in what the Service returns. An update that sends it back keeps the
// stored value.
const MaskedValue = "*****"

// storedValues is the values of the context a change replaces: none when it is created.
func storedValues(old *store.ConfigContext) (map[string]string, error) {
	if old == nil {
		return nil, nil
	}
	return contextData(*old)
}

// boundTo is a value that a secret sent back masked is bound to: its field, the value stored
// with the secret, and the value sent now.
type boundTo struct{ field, was, now string }

// keepMasked answers the stored (encrypted) value of a secret that came back as MaskedValue —
// a client that read the context got it masked, and sending it back keeps it — but only while
// every value it is bound to (the server it is sent to, the CA that lets a host pass for that
// server) stays the same, so that whoever may edit contexts but not read secrets cannot send a
// stored secret to a server of their choosing. field names the secret; stored is its stored
// value, "" when there is none.
func keepMasked(field, stored string, bounds ...boundTo) (string, error) {
	if stored == "" {
		return "", errdefs.Invalid(field, "", "is the mask of a secret, not a secret: give the value")
	}
	for _, b := range bounds {
		if b.now == b.was {
			continue
		}
		was := " " + b.was
		if strings.ContainsAny(b.was+b.now, "\r\n") { // a PEM: name it, do not print it
			was = " the same"
		}
		return "", errdefs.Invalid(field, "", fmt.Sprintf("is the mask of the stored secret, which is kept only while %s stays%s: give %s with the new %s", b.field, was, field, b.field))
	}
	return stored, nil
}

func contextAAD(accountID, name, key string) []byte {
	return secrets.AAD(accountID, "context", name, key)
}

// sealed reports whether a context of type typ keeps the value of key encrypted: every value of
// a secret context, a registry context's password, a kubernetes context's kubeconfig and token,
// a helm-repository context's password.
func sealed(typ, key string) bool {
	return typ == ContextSecret || typ == ContextRegistry && key == registryPassword || typ == ContextGit && key == gitToken ||
		slices.Contains(secretKeys[typ], key)
}

// Limits on context values, so a secret cannot bloat builds or the log masker.
const (
	maxContextValueBytes = 64 << 10
	maxContextBytes      = 1 << 20
)

// ContextInput is what a context is created or replaced with.
type ContextInput struct {
	// Type is ContextConfig, ContextSecret or ContextRegistry. A replaced context keeps its type.
	Type string
	// Values are a config or secret context's KEY=VALUE pairs.
	Values map[string]string
	// Registry is a registry context's registry. On replace, a Password of MaskedValue keeps
	// the stored password, as long as the URL and CA stay the same.
	Registry *Registry
	// Git is a git context's provider. On replace, a Token of MaskedValue keeps the stored
	// token, as long as the provider and URL stay the same.
	Git *GitProvider
}

// PutContext creates (create=true) or replaces a context, and returns it with secret values
// masked. A registry context with Registry.Default becomes the account's default registry in
// the same transaction, in place of the one before; replaced without it, it stops being it.
func (s *Service) PutContext(ctx context.Context, p rbac.Principal, name string, in ContextInput, create bool) (_ Context, err error) {
	action := "context.update"
	if create {
		action = "context.create"
	}
	e := audit.Start(ctx, p, action, "context", name)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageContexts); err != nil {
		return Context{}, err
	}
	if err := validName("name", name); err != nil {
		return Context{}, err
	}
	act := rbac.ActUpdate
	if create {
		act = rbac.ActCreate
	}
	if err := rbac.Authorize(p, act, contextResource(name)); err != nil {
		return Context{}, err
	}
	typ := in.Type
	var old *store.ConfigContext
	if !create {
		o, err := s.db.GetContext(ctx, p.AccountID, name)
		if err != nil {
			return Context{}, err
		}
		typ, old = o.Type, &o
	}
	var data string
	switch typ {
	case ContextConfig, ContextSecret:
		if in.Registry != nil || in.Git != nil {
			return Context{}, errdefs.Invalid("registry", "", "is only for contexts of type registry or git; this one is "+typ+": give values")
		}
		if data, err = s.sealValues(p.AccountID, name, typ, in.Values); err != nil {
			return Context{}, err
		}
		e.Detail("%s context with keys %v", typ, sortedKeys(in.Values))
	case ContextRegistry:
		if len(in.Values) > 0 {
			return Context{}, errdefs.Invalid("values", "", "are not used by a registry context: give registry.url, registry.username and registry.password")
		}
		if in.Git != nil {
			return Context{}, errdefs.Invalid("git", "", "is only for contexts of type git; this one is a registry context")
		}
		if in.Registry == nil {
			return Context{}, errdefs.Invalid("registry", "", "is required for a registry context: give at least registry.url")
		}
		if data, err = s.sealRegistry(p.AccountID, name, *in.Registry, old); err != nil {
			return Context{}, err
		}
		def := ""
		if in.Registry.Default {
			def = ", the account's default"
		}
		e.Detail("registry context for %s%s", in.Registry.URL, def)
	case ContextGit:
		if len(in.Values) > 0 || in.Registry != nil || in.Git == nil {
			return Context{}, errdefs.Invalid("git", "", "is required for a git context, and only it: give git.provider, git.url and git.token")
		}
		if data, err = s.sealGit(p.AccountID, name, *in.Git, old); err != nil {
			return Context{}, err
		}
		e.Detail("git context for %s %s", in.Git.Provider, in.Git.URL)
	case ContextKubernetes, ContextHelmRepo:
		if in.Registry != nil || in.Git != nil {
			return Context{}, errdefs.Invalid("registry", "", "and git are only for contexts of those types; this one is "+typ+": give values")
		}
		if data, err = s.sealTyped(p.AccountID, name, typ, in.Values, old); err != nil {
			return Context{}, err
		}
		e.Detail("%s context with keys %v", typ, sortedKeys(in.Values))
	default:
		return Context{}, errdefs.Invalid("type", typ, "is not config, secret, registry, git, kubernetes or helm-repository")
	}
	now := s.now()
	c := store.ConfigContext{ID: store.NewID(store.PrefixContext), AccountID: p.AccountID, Name: name, Type: typ, Data: data, CreatedAt: now, UpdatedAt: now}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.PutContext(ctx, c, create); err != nil {
			return err
		}
		// Read it back: a replaced context keeps its ID and creation time.
		if c, err = tx.GetContext(ctx, p.AccountID, name); err != nil {
			return err
		}
		if typ == ContextRegistry {
			if in.Registry.Default {
				err = tx.SetDefaultContext(ctx, p.AccountID, c.ID)
			} else {
				err = tx.UnsetDefaultContext(ctx, p.AccountID, c.ID)
			}
			if err != nil {
				return err
			}
			c.Default = in.Registry.Default
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return Context{}, err
	}
	return maskedContext(c)
}

// sealValues checks a config or secret context's values and returns them as stored: JSON, each
// secret value encrypted.
func (s *Service) sealValues(accountID, name, typ string, values map[string]string) (string, error) {
	if len(values) == 0 {
		return "", errdefs.Invalid("values", "", "is empty: give at least one KEY=VALUE")
	}
	stored := map[string]string{}
	total := 0
	for k, v := range values {
		total += len(k) + len(v)
		if len(v) > maxContextValueBytes {
			return "", errdefs.Invalid("values."+k, "", fmt.Sprintf("is larger than %d KiB", maxContextValueBytes>>10))
		}
		if total > maxContextBytes {
			return "", errdefs.Invalid("values", "", fmt.Sprintf("add up to more than %d KiB", maxContextBytes>>10))
		}
		if !varNameRE.MatchString(k) {
			return "", errdefs.Invalid("values", k, "is not a variable name: use letters, digits and '_', not starting with a digit")
		}
		if sealed(typ, k) {
			ct, err := s.keys.Encrypt([]byte(v), contextAAD(accountID, name, k))
			if err != nil {
				return "", err
			}
			v = ct
		}
		stored[k] = v
	}
	return encodeJSON(stored), nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ListContexts lists contexts with secret values masked.
func (s *Service) ListContexts(ctx context.Context, p rbac.Principal) ([]Context, error) {
	if err := rbac.Allow(p, rbac.ReadContexts); err != nil {
		return nil, err
	}
	cs, err := s.db.ListContexts(ctx, p.AccountID)
	if err != nil {
		return nil, err
	}
	cs = slices.DeleteFunc(cs, func(c store.ConfigContext) bool { return !rbac.Visible(p, contextResource(c.Name)) })
	out := make([]Context, len(cs))
	for i, c := range cs {
		if out[i], err = maskedContext(c); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// GetContext returns a context. Secret values are masked unless decrypt is set, which needs the
// decrypt permission and is audited.
func (s *Service) GetContext(ctx context.Context, p rbac.Principal, name string, decrypt bool) (out Context, err error) {
	if !decrypt {
		if err := rbac.Allow(p, rbac.ReadContexts); err != nil {
			return out, err
		}
		if err := rbac.Authorize(p, rbac.ActRead, contextResource(name)); err != nil {
			return out, err
		}
		c, err := s.db.GetContext(ctx, p.AccountID, name)
		if err != nil {
			return out, err
		}
		return maskedContext(c)
	}
	e := audit.Start(ctx, p, "context.decrypt", "context", name)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.DecryptContexts); err != nil {
		return out, err
	}
	c, err := s.db.GetContext(ctx, p.AccountID, name)
	if err != nil {
		return out, err
	}
	vals, err := s.contextValues(c)
	if err != nil {
		return out, err
	}
	return toContext(c, vals), s.db.Tx(ctx, func(tx *store.Tx) error { return e.Commit(ctx, tx) })
}

// contextValues returns c's values in plain text.
func (s *Service) contextValues(c store.ConfigContext) (map[string]string, error) {
	vals, err := contextData(c)
	if err != nil {
		return nil, err
	}
	for k, v := range vals {
		if !sealed(c.Type, k) {
			continue
		}
		pt, err := s.keys.Decrypt(v, contextAAD(c.AccountID, c.Name, k))
		if err != nil {
			return nil, fmt.Errorf("decrypt context %s key %s: %w", c.Name, k, err)
		}
		vals[k] = string(pt)
	}
	return vals, nil
}

// DeleteContext deletes a context.
func (s *Service) DeleteContext(ctx context.Context, p rbac.Principal, name string) (err error) {
	e := audit.Start(ctx, p, "context.delete", "context", name)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageContexts); err != nil {
		return err
	}
	if err := rbac.Authorize(p, rbac.ActDelete, contextResource(name)); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.DeleteContext(ctx, p.AccountID, name); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
}
