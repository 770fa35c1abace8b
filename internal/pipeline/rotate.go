package pipeline

import (
	"context"
	"fmt"

	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
)

// ReencryptSecrets rewrites the CI secrets — secret contexts, registry contexts' passwords,
// encrypted pipeline variables and triggers' webhook secrets — under k's primary key in tx, and reports how many values changed.
// The control plane's ReencryptSecrets runs it beside the other domains' in one transaction.
func ReencryptSecrets(ctx context.Context, tx *store.Tx, k secrets.Reencrypter) (int, error) {
	changed := 0
	err := func() error {
		ctxs, err := tx.AllContexts(ctx)
		if err != nil {
			return err
		}
		for _, c := range ctxs {
			if c.Type == ContextConfig {
				continue
			}
			vals, err := contextData(c)
			if err != nil {
				return err
			}
			n := 0
			for key, v := range vals {
				if !sealed(c.Type, key) {
					continue
				}
				out, ch, err := k.Reencrypt(v, contextAAD(c.AccountID, c.Name, key))
				if err != nil {
					return fmt.Errorf("context %s key %s: %w", c.Name, key, err)
				}
				if ch {
					vals[key], n = out, n+1
				}
			}
			if n > 0 {
				c.Data = encodeJSON(vals)
				if err := tx.PutContext(ctx, c, false); err != nil {
					return err
				}
				changed += n
			}
		}
		pls, err := tx.AllPipelines(ctx)
		if err != nil {
			return err
		}
		for _, p := range pls {
			cfg, err := decodeConfig(p)
			if err != nil {
				return err
			}
			n := 0
			for i, v := range cfg.Variables {
				if !v.Encrypted {
					continue
				}
				out, ch, err := k.Reencrypt(v.Value, variableAAD(p.AccountID, v.Key))
				if err != nil {
					return fmt.Errorf("pipeline %s variable %s: %w", p.ID, v.Key, err)
				}
				if ch {
					cfg.Variables[i].Value, n = out, n+1
				}
			}
			if n > 0 {
				p.Config = encodeJSON(cfg)
				if err := tx.UpdatePipeline(ctx, p); err != nil {
					return err
				}
				changed += n
			}
		}
		ts, err := tx.TriggersOfType(ctx, TriggerGit)
		if err != nil {
			return err
		}
		for _, t := range ts {
			out, ch, err := k.Reencrypt(t.SecretEnc, webhookAAD(t.AccountID, t.ID))
			if err != nil {
				return fmt.Errorf("trigger %s: %w", t.ID, err)
			}
			if ch {
				if err := tx.SetTriggerSecret(ctx, t.ID, out); err != nil {
					return err
				}
				changed++
			}
		}
		return nil
	}()
	return changed, err
}
