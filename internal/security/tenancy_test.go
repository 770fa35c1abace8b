package security_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
)

// B's admin tries to read and change A's users by their IDs and emails. (The full route-by-route
// isolation proof is internal/server's isolation test; this keeps the attack in the table.)
func TestCrossTenantUserAccess(t *testing.T) {
	ctx := context.Background()
	tn := startTenants(t, servertest.Config{})
	users, err := tn.aAdmin.ListUsers(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tries, got := 0, 0
	var worst time.Duration
	for _, u := range users.Items {
		start := time.Now()
		tries++
		if _, err := tn.bAdmin.GetUser(ctx, u.ID); err == nil {
			got++
		}
		tries++
		if _, err := tn.bAdmin.UpdateUser(ctx, u.ID, client.UpdateUserRequest{Role: "viewer"}); err == nil {
			got++
		}
		tries++
		if err := tn.bAdmin.DeleteUser(ctx, u.ID); err == nil {
			got++
		}
		worst = max(worst, time.Since(start))
	}
	tries++
	bUsers, err := tn.bAdmin.ListUsers(ctx, client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range bUsers.Items {
		if strings.HasSuffix(u.Email, "@first.test") {
			got++
		}
	}
	attack(t, "tenancy: another account's users", tries, got, worst)
}
