package pipeline

import (
	"context"
	"fmt"
	"sort"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
)

// Context types.
const (
	ContextConfig = "config"
	ContextSecret = "secret"
)

// MaskedValue replaces secret values (of secret contexts and encrypted pipeline variables)
// in what the Service returns. A pipeline update that sends it back keeps the stored value.
const MaskedValue = "*****"

func contextAAD(accountID, name, key string) []byte {
	return secrets.AAD(accountID, "context", name, key)
}

// Limits on context values, so a secret cannot bloat builds or the log masker.
const (
	maxContextValueBytes = 64 << 10
	maxContextBytes      = 1 << 20
)

// PutContext creates (create=true) or replaces a context, and returns it with secret values
// masked.
func (s *Service) PutContext(ctx context.Context, p rbac.Principal, name, typ string, values map[string]string, create bool) (_ Context, err error) {
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
	if !create {
		old, err := s.db.GetContext(ctx, p.AccountID, name)
		if err != nil {
			return Context{}, err
		}
		typ = old.Type
	}
	if typ != ContextConfig && typ != ContextSecret {
		return Context{}, errdefs.Invalid("type", typ, "is not config or secret")
	}
	if len(values) == 0 {
		return Context{}, errdefs.Invalid("values", "", "is empty: give at least one KEY=VALUE")
	}
	stored := map[string]string{}
	total := 0
	for k, v := range values {
		total += len(k) + len(v)
		if len(v) > maxContextValueBytes {
			return Context{}, errdefs.Invalid("values."+k, "", fmt.Sprintf("is larger than %d KiB", maxContextValueBytes>>10))
		}
		if total > maxContextBytes {
			return Context{}, errdefs.Invalid("values", "", fmt.Sprintf("add up to more than %d KiB", maxContextBytes>>10))
		}
		if !varNameRE.MatchString(k) {
			return Context{}, errdefs.Invalid("values", k, "is not a variable name: use letters, digits and '_', not starting with a digit")
		}
		if typ == ContextSecret {
			ct, err := s.keys.Encrypt([]byte(v), contextAAD(p.AccountID, name, k))
			if err != nil {
				return Context{}, err
			}
			v = ct
		}
		stored[k] = v
	}
	now := s.now()
	c := store.ConfigContext{ID: store.NewID(store.PrefixContext), AccountID: p.AccountID, Name: name, Type: typ, Data: encodeJSON(stored), CreatedAt: now, UpdatedAt: now}
	e.Detail("%s context with keys %v", typ, sortedKeys(values))
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.PutContext(ctx, c, create); err != nil {
			return err
		}
		// Read it back: a replaced context keeps its ID and creation time.
		if c, err = tx.GetContext(ctx, p.AccountID, name); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return Context{}, err
	}
	return maskedContext(c)
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
	if c.Type == ContextSecret {
		for k, v := range vals {
			pt, err := s.keys.Decrypt(v, contextAAD(c.AccountID, c.Name, k))
			if err != nil {
				return nil, fmt.Errorf("decrypt context %s key %s: %w", c.Name, k, err)
			}
			vals[k] = string(pt)
		}
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
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.DeleteContext(ctx, p.AccountID, name); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
}
