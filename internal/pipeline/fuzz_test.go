package pipeline

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

// FuzzRunnerStepUpdate decodes arbitrary bodies as the runner protocol's UpdateStep handler
// does (runnerv1.Codec) and checks them as updateStep does before storing: nothing panics,
// every refusal is invalid input naming a field, and what is accepted is storable: a known
// status, bounded fields and counts, no NUL or invalid UTF-8 in a column, images that passed
// checkImages.
func FuzzRunnerStepUpdate(f *testing.F) {
	seeds := []runnerv1.StepUpdate{
		{Lease: runnerv1.Lease{BuildID: "b", LeaseID: "l"}, Step: runnerv1.StepState{Name: "build", Stage: "test", Status: "success", ExitCode: 0, Attempts: 1}},
		{Step: runnerv1.StepState{Name: "clone", Status: "failed", ExitCode: -1, Message: "exit status 128"}},
		{Step: runnerv1.StepState{Name: "approve", Status: "pending-approval", Message: "approved by ann"}},
		{Step: runnerv1.StepState{Name: "push", Status: "success"}, Images: []runnerv1.Image{{Registry: "ghcr", Repository: "ghcr.io/acme/app",
			Tags: []string{"v1", "latest"}, Digest: "sha256:" + strings.Repeat("ab", 32), Size: 1234}}},
	}
	for _, s := range seeds {
		b, _ := json.Marshal(s)
		f.Add(b)
	}
	for _, s := range []string{`{}`, `null`, `{"step":{"name":"a","status":"bogus"}}`, `{"step":{"name":"a\u0000","status":"running"}}`,
		`{"step":{"name":"a","status":"running","message":"x\u0000\udcff"}}`, `{"step":{"name":"a","status":"running","position":99999999999}}`,
		`{"step":{"name":"a","status":"failed","exitCode":4294967296}}`, `{"step":{"name":"a","status":"success"},"images":[{}]}`,
		`{"step":{"name":"a","status":"running","attempts":-1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var u runnerv1.StepUpdate
		if err := (runnerv1.Codec{}).Unmarshal(body, &u); err != nil {
			return // connect answers invalid_argument for undecodable bodies itself
		}
		if err := checkStepUpdate(&u); err != nil {
			if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) == "" {
				t.Fatalf("refusal %v is not invalid input naming a field", err)
			}
			return
		}
		st := u.Step
		for _, v := range []string{st.Name, st.Stage, st.Status, st.Message} {
			if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
				t.Fatalf("a NUL or invalid UTF-8 reaches a column: %q", v)
			}
		}
		if st.Name == "" || len(st.Name) > maxStepFieldBytes || len(st.Message) > maxStepMessageBytes || st.Position < 0 || st.Attempts < 0 ||
			st.Position > maxStepCount || st.Attempts > maxStepCount || int64(int32(st.ExitCode)) != int64(st.ExitCode) {
			t.Fatalf("accepted %+v", st)
		}
		if checkImages(u.Images) != nil {
			t.Fatalf("accepted images %+v", u.Images)
		}
	})
}
