package server

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/freshet-dev/freshet/internal/images"
	"github.com/freshet-dev/freshet/internal/notify"
	"github.com/freshet-dev/freshet/internal/pipeline"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
)

// ReencryptSecrets rewrites every stored secret — each domain rewrites its own: CI contexts,
// pipeline variables and trigger webhook secrets; the accounts' GitOps webhook secrets;
// notification channels' secrets; issue trackers' tokens — under
// k's primary key, all in one transaction, and reports how many values changed. Run it after
// adding a new primary key and before retiring the old one.
func ReencryptSecrets(ctx context.Context, db *store.DB, k secrets.Reencrypter) (int, error) {
	total := 0
	err := db.Tx(ctx, func(tx *store.Tx) error {
		ci, err := pipeline.ReencryptSecrets(ctx, tx, k)
		if err != nil {
			return err
		}
		gitops, err := runtimes.ReencryptSecrets(ctx, tx, k)
		if err != nil {
			return err
		}
		channels, err := notify.ReencryptSecrets(ctx, tx, k)
		if err != nil {
			return err
		}
		trackers, err := images.ReencryptSecrets(ctx, tx, k)
		total = ci + gitops + channels + trackers
		return err
	})
	return total, err
}

// CheckMasterKeys makes sure keys decrypt the secrets stored in db, decrypting one ciphertext
// per master key ID found (and changing nothing). A replica started with other master keys
// than those its database's secrets were encrypted with fails here, before it serves, naming
// the key ID and where its keys came from, instead of failing later on each secret.
func CheckMasterKeys(ctx context.Context, db *store.DB, keys *secrets.Keyring) error {
	c := &keyChecker{keys: keys, ok: map[string]bool{}}
	if _, err := ReencryptSecrets(ctx, db, c); err != nil {
		return err
	}
	return nil
}

// keyChecker decrypts the first ciphertext of each key ID and returns every one unchanged.
type keyChecker struct {
	keys *secrets.Keyring
	ok   map[string]bool
}

func (c *keyChecker) Reencrypt(s string, aad []byte) (string, bool, error) {
	id, err := secrets.KeyID(s)
	if err != nil {
		return "", false, err
	}
	if c.ok[id] {
		return s, false, nil
	}
	have := c.keys.KeyIDs()
	if !slices.Contains(have, id) {
		return "", false, fmt.Errorf("the database's secrets are encrypted with master key %q, which the master keys from %s do not have (they have %s): start every replica with the same master keys (--master-key-file or %s)",
			id, c.keys.Source(), strings.Join(have, ", "), secrets.EnvMasterKey)
	}
	p, err := c.keys.Decrypt(s, aad)
	if err != nil {
		return "", false, fmt.Errorf("master key %q from %s does not decrypt the database's secrets: it is not the key they were encrypted with (same ID, other key material): start every replica with the same master keys (--master-key-file or %s)",
			id, c.keys.Source(), secrets.EnvMasterKey)
	}
	clear(p)
	c.ok[id] = true
	return s, false, nil
}
