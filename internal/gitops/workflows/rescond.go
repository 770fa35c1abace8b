package workflows

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/itchyny/gojq"
	"github.com/tidwall/gjson"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/jsonpath"
)

// A resource template's successCondition and failureCondition are, as in Argo Workflows,
// label selectors whose keys are paths into the object (gjson paths: status.phase,
// status.conditions.0.type, metadata.labels.app) and whose values are compared with the text of
// the field there: `status.succeeded > 0`, `status.phase in (Failed, Error)`,
// `metadata.labels.x == y`, `!status.failed`. A success condition holds when all of its
// requirements match; a failure condition when any one of them does (Argo's reading), and the
// failure condition is checked first.

// condition is a parsed successCondition or failureCondition.
type condition struct {
	text string
	reqs labels.Requirements
}

// parseCondition reads a condition; an empty text is no condition (nil).
func parseCondition(s string) (*condition, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	reqs, err := labels.ParseToRequirements(s)
	if err != nil {
		return nil, fmt.Errorf("is not a condition: %v (give label-selector requirements over the object's fields, e.g. \"status.succeeded > 0\", \"status.phase in (Failed, Error)\", \"metadata.labels.x == y\")", err)
	}
	if len(reqs) == 0 {
		return nil, nil
	}
	return &condition{text: s, reqs: reqs}, nil
}

// objectFields reads an object's fields for a condition, by gjson path.
type objectFields []byte

func (o objectFields) Has(path string) bool { return gjson.GetBytes(o, path).Exists() }
func (o objectFields) Get(path string) string {
	return gjson.GetBytes(o, path).String()
}
func (o objectFields) Lookup(path string) (string, bool) {
	r := gjson.GetBytes(o, path)
	return r.String(), r.Exists()
}

// all is whether every requirement matches the object (the success condition holds).
func (c *condition) all(obj objectFields) bool {
	for _, r := range c.reqs {
		if !r.Matches(obj) {
			return false
		}
	}
	return true
}

// anyOf returns the first requirement that matches the object (the failure condition holds),
// or "".
func (c *condition) anyOf(obj objectFields) string {
	for _, r := range c.reqs {
		if r.Matches(obj) {
			return r.String()
		}
	}
	return ""
}

// conditionsOutcome checks a resource's object against its conditions: the phase it ends in and
// why, or "" while neither holds.
func conditionsOutcome(success, failure *condition, obj []byte) (NodePhase, string) {
	if failure != nil {
		if r := failure.anyOf(obj); r != "" {
			return NodeFailed, fmt.Sprintf("failure condition '%s' evaluated true", r)
		}
	}
	if success == nil || success.all(obj) {
		if success == nil {
			return NodeSucceeded, ""
		}
		return NodeSucceeded, fmt.Sprintf("success condition '%s' evaluated true", success.text)
	}
	return "", ""
}

// maxOutputBytes bounds one output parameter a jsonPath or jqFilter makes.
const maxOutputBytes = 256 << 10

// jqTimeout bounds the time a jq filter runs in the controller.
const jqTimeout = 2 * time.Second

var errOutputTooLong = fmt.Errorf("makes more than %d KiB", maxOutputBytes>>10)

// limitedBuffer is a buffer that refuses to grow beyond maxOutputBytes.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxOutputBytes {
		return 0, errOutputTooLong
	}
	return b.Buffer.Write(p)
}

// parseJSONPath reads an output parameter's valueFrom.jsonPath: a kubectl JSONPath template
// ("{.metadata.name}", "{.data.x}", "{range .items[*]}{.name} {end}").
func parseJSONPath(s string) (*jsonpath.JSONPath, error) {
	j := jsonpath.New("jsonPath")
	j.AllowMissingKeys(true) // kubectl get -o jsonpath prints nothing for a missing key
	if err := j.Parse(s); err != nil {
		return nil, fmt.Errorf("is not a JSONPath template: %v (e.g. \"{.metadata.name}\", \"{.status.phase}\")", err)
	}
	return j, nil
}

// evalJSONPath is what `kubectl get -o jsonpath=TEMPLATE` prints for obj. client-go's JSONPath
// panics on some templates ("{range .}{[]0}"): that is an error of the template here, not a
// crash of the controller.
func evalJSONPath(tmpl string, obj map[string]any) (out string, err error) {
	j, err := parseJSONPath(tmpl)
	if err != nil {
		return "", err
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("does not evaluate: %v", r)
		}
	}()
	var b limitedBuffer
	if err := j.Execute(&b, obj); err != nil {
		return "", err
	}
	return b.String(), nil
}

// parseJQ reads an output parameter's valueFrom.jqFilter. The filter runs in a child process of
// the controller: it sees no environment ($ENV and env are empty) and may import no modules.
func parseJQ(s string) (*gojq.Code, error) {
	q, err := gojq.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("is not a jq filter: %v", err)
	}
	code, err := gojq.Compile(q, gojq.WithEnvironLoader(func() []string { return nil }))
	if err != nil {
		return nil, fmt.Errorf("is not a jq filter: %v", err)
	}
	return code, nil
}

// evalJQ runs a jq filter over obj as Argo does: each result on its own line, a string as it
// is and anything else as JSON, the whole trimmed of surrounding space. The filter runs in a
// child process (jqchild.go): bounded in time, output and memory.
func evalJQ(ctx context.Context, filter string, obj map[string]any) (string, error) {
	if _, err := parseJQ(filter); err != nil {
		return "", err
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	return evalJQInChild(ctx, filter, data)
}

// runJQ evaluates a jq filter over v (plain JSON values), at most jqTimeout and maxOutputBytes:
// the child process's work.
func runJQ(ctx context.Context, filter string, v any) (out string, err error) {
	code, err := parseJQ(filter)
	if err != nil {
		return "", err
	}
	defer func() { // as for JSONPath: an error of the filter, never a crash
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("does not evaluate: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, jqTimeout)
	defer cancel()
	var b limitedBuffer
	iter := code.RunWithContext(ctx, v)
	for {
		r, ok := iter.Next()
		if !ok {
			break
		}
		if err, ok := r.(error); ok {
			if ctx.Err() != nil {
				return "", fmt.Errorf("ran longer than %s", jqTimeout)
			}
			return "", err
		}
		var out []byte
		if s, ok := r.(string); ok {
			out = []byte(s)
		} else if out, err = json.Marshal(r); err != nil {
			return "", err
		}
		if _, err := b.Write(append(out, '\n')); err != nil {
			return "", err
		}
	}
	return strings.TrimSpace(b.String()), nil
}
