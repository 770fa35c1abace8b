package rbac

import (
	"errors"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

func TestAllow(t *testing.T) {
	cases := []struct {
		role Role
		perm Permission
		ok   bool
	}{
		{Viewer, ReadUsers, true},
		{Viewer, ManageUsers, false},
		{Member, ManageUsers, false},
		{Admin, ManageUsers, true},
		{Member, ReadAudit, false},
		{Admin, ReadAudit, true},
		{"", ReadAccount, false},
		{"owner", ReadAccount, false},
		{Admin, Permission("nope"), false},
	}
	for _, c := range cases {
		err := Allow(Principal{AccountID: "acc_1", Role: c.role}, c.perm)
		if (err == nil) != c.ok {
			t.Errorf("Allow(%s, %s) = %v, want ok=%v", c.role, c.perm, err, c.ok)
		}
		if err != nil && !errors.Is(err, errdefs.ErrForbidden) {
			t.Errorf("Allow(%s, %s) error %v is not ErrForbidden", c.role, c.perm, err)
		}
	}
	if Allow(Principal{Role: Admin}, ReadAccount) == nil {
		t.Error("a principal without an account was allowed")
	}
}

func TestRoleOrder(t *testing.T) {
	if !Admin.AtLeast(Member) || Member.AtLeast(Admin) || !Viewer.AtLeast(Viewer) || Role("x").AtLeast(Viewer) {
		t.Fatal("role order wrong")
	}
	if Admin.Min(Viewer) != Viewer || Viewer.Min(Admin) != Viewer {
		t.Fatal("Min wrong")
	}
	if _, err := ParseRole("role", "root"); errdefs.Field(err) != "role" {
		t.Fatalf("ParseRole error does not name the field: %v", err)
	}
}
