package spec

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkLint1000Files lints 1,000 pipeline files — the spec package's fixtures (the golden
// inputs and the per-step-type files written from Codefresh's documentation, valid and
// invalid), repeated in turn — timing each file, and reports the median and p99 time per file.
// Run: go test ./internal/pipeline/spec -run '^$' -bench Lint1000Files -benchtime 5x
func BenchmarkLint1000Files(b *testing.B) {
	var inputs [][]byte
	for _, pattern := range []string{"testdata/*.yml", "testdata/steps/*/*.yml"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			inputs = append(inputs, data)
		}
	}
	const n = 1000
	files := make([][]byte, n)
	for i := range files {
		files[i] = inputs[i%len(inputs)]
	}
	var per []time.Duration
	for b.Loop() {
		for _, f := range files {
			start := time.Now()
			Lint(f)
			per = append(per, time.Since(start))
		}
	}
	var total time.Duration
	for _, d := range per {
		total += d
	}
	slices.Sort(per)
	b.ReportMetric(float64(total.Microseconds())/float64(len(per)), "µs-mean/file")
	b.ReportMetric(float64(per[len(per)/2].Microseconds()), "µs-median/file")
	b.ReportMetric(float64(per[len(per)*99/100].Microseconds()), "µs-p99/file")
	b.ReportMetric(float64(len(inputs)), "distinct-files")
}
