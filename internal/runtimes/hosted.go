package runtimes

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
)

// HostedCredential is a hosted runtime's token, decrypted, for the provisioner that runs it.
type HostedCredential struct {
	RuntimeID, AccountID, Name string
	Token                      string
	// UpdatedAt changes when the token is rotated: a provisioner restarts the runtime then.
	UpdatedAt time.Time
}

// hostedTokenAAD binds a hosted runtime's encrypted token to the runtime.
func hostedTokenAAD(runtimeID string) []byte { return secrets.AAD(runtimeID, "hosted-runtime-token") }

// keepHostedToken stores hosted runtime id's token, encrypted, in tx: the provisioner reads it
// back after any restart of the control plane (HostedCredentials).
func (s *Service) keepHostedToken(ctx context.Context, tx *store.Tx, id, token string) error {
	if s.keys == nil {
		return fmt.Errorf("keep the hosted runtime's token: the registry has no master keys")
	}
	enc, err := s.keys.Encrypt([]byte(token), hostedTokenAAD(id))
	if err != nil {
		return err
	}
	return tx.SetHostedCredential(ctx, id, enc, s.now())
}

// HostedCredentials returns the tokens of the hosted runtimes of every account, for the
// provisioner. A token that does not decrypt (its master key is gone) is left out and named in
// the error, which is returned with the others.
func (s *Service) HostedCredentials(ctx context.Context) ([]HostedCredential, error) {
	rows, err := s.db.HostedCredentials(ctx)
	if err != nil {
		return nil, err
	}
	var out []HostedCredential
	var bad error
	for _, r := range rows {
		if s.keys == nil {
			return nil, fmt.Errorf("read the hosted runtimes' tokens: the registry has no master keys")
		}
		tok, err := s.keys.Decrypt(r.TokenEnc, hostedTokenAAD(r.RuntimeID))
		if err != nil {
			bad = fmt.Errorf("hosted runtime %s (%s) of account %s: its token does not decrypt: %w", r.Name, r.RuntimeID, r.AccountID, err)
			continue
		}
		out = append(out, HostedCredential{RuntimeID: r.RuntimeID, AccountID: r.AccountID, Name: r.Name, Token: string(tok), UpdatedAt: r.UpdatedAt})
	}
	return out, bad
}

// reencryptHostedTokens re-encrypts the stored hosted-runtime tokens under k (ReencryptSecrets).
func reencryptHostedTokens(ctx context.Context, tx *store.Tx, k secrets.Reencrypter) (int, error) {
	rows, err := tx.HostedCredentials(ctx)
	if err != nil {
		return 0, err
	}
	changed := 0
	for _, r := range rows {
		out, ch, err := k.Reencrypt(r.TokenEnc, hostedTokenAAD(r.RuntimeID))
		if err != nil {
			return changed, fmt.Errorf("token of hosted runtime %s of account %s: %w", r.Name, r.AccountID, err)
		}
		if ch {
			if err := tx.SetHostedCredential(ctx, r.RuntimeID, out, r.UpdatedAt); err != nil {
				return changed, err
			}
			changed++
		}
	}
	return changed, nil
}

// ProvisionerComponent is the component a hosted runtime shows while its provisioner cannot
// place it (a cluster it cannot reach, objects it cannot apply), with why.
const ProvisionerComponent = "provisioner"

// SetHostedPlacement records whether hosted runtime runtimeID of accountID could be placed:
// problem, when not empty, shows as its ProvisionerComponent, degraded, with that message; an
// empty problem removes the component. The runtime's heartbeats replace the report, so once it
// runs, what it reports is what shows.
func (s *Service) SetHostedPlacement(ctx context.Context, accountID, runtimeID, problem string) error {
	row, err := s.db.GetRuntime(ctx, accountID, runtimeID)
	if err != nil {
		return err
	}
	rt, _ := runtimeFromRow(row)
	var cs []runtimev1.Component
	had := false
	for _, c := range rt.Components {
		if c.Name == ProvisionerComponent {
			if problem != "" && c.Health == runtimev1.ComponentDegraded && c.Message == problem {
				return nil // recorded already
			}
			had = true
			continue
		}
		cs = append(cs, c)
	}
	if problem == "" && !had {
		return nil
	}
	if problem != "" {
		cs = append(cs, runtimev1.Component{Name: ProvisionerComponent, Health: runtimev1.ComponentDegraded, Message: problem})
	}
	rt.Components = cs
	info, err := json.Marshal(rt.Info)
	if err != nil {
		return err
	}
	return s.db.SetRuntimeInfo(ctx, runtimeID, string(info))
}
