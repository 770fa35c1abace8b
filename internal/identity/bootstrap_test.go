package identity

import (
	"context"
	"sync"
	"testing"

	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// Replicas that start together on an empty database all bootstrap at once (the freshet chart
// starts N): exactly one creates the first account and admin, the others start without an
// error instead of exiting on the conflict.
func TestConcurrentBootstrapCreatesOneAccount(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		const replicas = 4
		var wg sync.WaitGroup
		results := make([]BootstrapResult, replicas)
		errs := make([]error, replicas)
		for i := range replicas {
			s, _ := newService(t, db)
			wg.Go(func() {
				results[i], errs[i] = s.Bootstrap(context.Background(), "default", "admin@example.com", "admin-password-1")
			})
		}
		wg.Wait()
		created := 0
		for i := range replicas {
			if errs[i] != nil {
				t.Errorf("replica %d: %v", i, errs[i])
			}
			if results[i].Created {
				created++
			}
		}
		n, err := db.CountAccounts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if created != 1 || n != 1 {
			t.Errorf("%d replicas report creating the account, %d accounts exist: want 1 and 1", created, n)
		}
	})
}
