package spec

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Severity says whether an [Issue] stops the pipeline from being compiled.
type Severity string

// Severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Issue is one problem found in a pipeline, positioned for an editor. Line and Column are
// 1-based; Field is the dotted path of the offending field (steps.build.retry.maxAttempts) and is
// empty for problems that concern the whole document (a YAML syntax error, the size limit).
type Issue struct {
	Line     int      `json:"line"`
	Column   int      `json:"column"`
	Field    string   `json:"field,omitempty"`
	Message  string   `json:"message"`
	Severity Severity `json:"severity"`
}

// String formats the issue as "line 12: steps.deploy.type: message".
func (i Issue) String() string {
	var b strings.Builder
	if i.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", i.Line)
	}
	if i.Field != "" {
		b.WriteString(i.Field)
		b.WriteString(": ")
	}
	if i.Severity == SeverityWarning {
		b.WriteString("warning: ")
	}
	b.WriteString(i.Message)
	return b.String()
}

// Error is one invalid field of a pipeline, as returned (possibly several, joined with
// errors.Join) by [Parse]. It unwraps to an *errdefs.FieldError, so errors.Is(err,
// errdefs.ErrInvalid) holds and errdefs.Field(err) names the field.
type Error struct {
	Line   int
	Column int
	errdefs.FieldError
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, fieldErrorText(&e.FieldError))
	}
	return fieldErrorText(&e.FieldError)
}

// Unwrap returns the embedded *errdefs.FieldError.
func (e *Error) Unwrap() error { return &e.FieldError }

func fieldErrorText(fe *errdefs.FieldError) string {
	if fe.Field == "" {
		return message(fe.Value, fe.Reason)
	}
	return fe.Field + ": " + message(fe.Value, fe.Reason)
}

// message renders a value and a reason the way errdefs.FieldError does: `"value" reason`.
func message(value, reason string) string {
	if value == "" {
		return reason
	}
	return fmt.Sprintf("%q %s", value, reason)
}

// maxValueLen bounds the value quoted in a message.
const maxValueLen = 80

// shorten cuts v to maxValueLen bytes, marking the cut.
func shorten(v string) string { return cutText(v, maxValueLen) }

// cutText cuts s to at most n bytes on a rune boundary, marking the cut.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// choices renders a list of valid values as "a, b or c".
func choices(vs ...string) string {
	switch len(vs) {
	case 0:
		return ""
	case 1:
		return vs[0]
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1]
}

// closest returns the candidate nearest to s by edit distance when it is near enough to be a
// plausible typo, or "".
func closest(s string, candidates []string) string {
	best, bestD := "", 3
	ls := strings.ToLower(s)
	for _, c := range candidates {
		d := editDistance(ls, strings.ToLower(c), bestD)
		if d < bestD {
			best, bestD = c, d
		}
	}
	if bestD > len(s)/2 {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, giving up (returning limit) once it
// reaches limit. Inputs are short field names, but limit also bounds work on long ones.
func editDistance(a, b string, limit int) int {
	if len(a) > 64 || len(b) > 64 {
		return limit
	}
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
