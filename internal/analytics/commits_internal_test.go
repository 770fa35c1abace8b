package analytics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/images"
)

// mergeCommits keeps the range's order, takes an image's short SHA as the full commit it
// starts (both sources, the full SHA kept), and adds the images' other commits after, each once.
func TestMergeCommits(t *testing.T) {
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	at := time.Unix(1700000000, 0).UTC()
	d := Deployment{
		Range: &CommitRange{Kind: "range", Commits: []RangeCommit{{SHA: a, Message: "PROJ-1 x", Time: at, Issues: []string{"PROJ-1"}}}},
		Images: []Image{
			{Digest: "d1", Commits: []images.Commit{{SHA: a[:7], Message: "PROJ-1 x"}, {SHA: b, Message: "fix #3", Author: "Bo"}}},
			{Digest: "d2", Commits: []images.Commit{{SHA: b[:12], Message: "fix #3"}, {SHA: ""}}},
		},
	}
	var got []string
	for _, c := range mergeCommits(d) {
		got = append(got, fmt.Sprintf("%s %v %v", c.SHA[:1]+fmt.Sprint(len(c.SHA)), c.Issues, c.Sources))
	}
	if want := "[a40 [PROJ-1] [git image] b40 [#3] [image]]"; fmt.Sprint(got) != want {
		t.Errorf("merged %s, want %s", got, want)
	}
	if got := mergeCommits(Deployment{}); got == nil || len(got) != 0 {
		t.Errorf("no commits: %#v, want empty", got)
	}
}
