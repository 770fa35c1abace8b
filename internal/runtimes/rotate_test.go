package runtimes_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// Master-key rotation (runtimes.ReencryptSecrets, run by the control plane's ReencryptSecrets) re-encrypts the accounts' GitOps webhook
// secrets, which keep working after the old key is retired.
func TestWebhookSecretSurvivesKeyRotation(t *testing.T) {
	ctx := context.Background()
	keys, err := secrets.GenerateKeyFile(filepath.Join(t.TempDir(), "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.Open(t, store.SQLite)
	log := slog.New(slog.DiscardHandler)
	s := runtimes.New(runtimes.Deps{Store: db, Audit: audit.NewLog(db, log), Keys: keys, Log: log})
	acct := store.Account{ID: store.NewID(store.PrefixAccount), Name: "acme", CreatedAt: time.Now()}
	if err := db.CreateAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	secret, _, err := s.SetWebhookSecret(ctx, rbac.Principal{AccountID: acct.ID, Email: "a@acme.test", Role: rbac.Admin}, "")
	if err != nil {
		t.Fatal(err)
	}
	ping := func() error {
		body := []byte(`{"zen":"hi","hook_id":1,"repository":{"full_name":"acme/deploy"}}`)
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(body)
		h := http.Header{"X-Github-Event": {"ping"}, "X-Github-Delivery": {"d1"}, "Content-Type": {"application/json"},
			"X-Hub-Signature-256": {"sha256=" + hex.EncodeToString(m.Sum(nil))}}
		_, err := s.HandleWebhook(ctx, "github", acct.ID, h, body)
		return err
	}
	if err := ping(); err != nil {
		t.Fatal(err)
	}
	old := keys.Primary()
	if _, err := keys.Rotate(); err != nil {
		t.Fatal(err)
	}
	n := 0
	err = db.Tx(ctx, func(tx *store.Tx) (err error) {
		n, err = runtimes.ReencryptSecrets(ctx, tx, keys)
		return err
	})
	if err != nil || n != 1 {
		t.Fatalf("ReencryptSecrets = %d, %v", n, err)
	}
	if err := keys.Retire(old); err != nil {
		t.Fatal(err)
	}
	if err := ping(); err != nil {
		t.Fatalf("after key rotation: %v", err)
	}
}
