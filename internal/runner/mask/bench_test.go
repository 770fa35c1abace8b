package mask

import (
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

// benchLog returns about size bytes of build-log-like lines, one in 50 containing a secret.
func benchLog(size int, secrets []string) []byte {
	rng := rand.New(rand.NewPCG(3, 4))
	words := []string{"Step", "3/12", ":", "RUN", "npm", "ci", "--no-audit", "added", "1432", "packages",
		"in", "41s", "warning", "deprecated", "GET", "https://registry.npmjs.org/left-pad", "200",
		"OK", "/workspace/src/index.ts", "error", "TS2345", "[INFO]", "Downloading", "from", "central:"}
	var b []byte
	for len(b) < size {
		b = fmt.Appendf(b, "2026-01-15T10:%02d:%02d.%03dZ ", rng.IntN(60), rng.IntN(60), rng.IntN(1000))
		for range 5 + rng.IntN(12) {
			b = append(b, words[rng.IntN(len(words))]...)
			b = append(b, ' ')
		}
		if rng.IntN(50) == 0 {
			b = append(b, secrets[rng.IntN(len(secrets))]...)
		}
		b = append(b, '\n')
	}
	return b[:size]
}

func benchSecrets(n int) []string {
	rng := rand.New(rand.NewPCG(5, 6))
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	secrets := make([]string, n)
	for i := range secrets {
		b := make([]byte, 12+rng.IntN(40))
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		secrets[i] = string(b)
	}
	return secrets
}

// BenchmarkWrite100MB writes 100 MB of log lines, in 32 KiB writes (a pipe read), through a
// Writer masking 50 secrets and their encoded forms (about 400 patterns).
func BenchmarkWrite100MB(b *testing.B) {
	const total, chunk = 100 << 20, 32 << 10
	secrets := benchSecrets(50)
	log := benchLog(4<<20, secrets)
	for _, bc := range []struct {
		name    string
		secrets []string
		opts    []Option
	}{
		{"secrets=0", nil, nil},
		{"secrets=50", secrets, nil},
		{"secrets=50/literal-only", secrets, []Option{WithoutEncodings()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(total)
			for b.Loop() {
				w := New(io.Discard, bc.secrets, bc.opts...)
				for written := 0; written < total; {
					off := written % len(log)
					n := min(chunk, len(log)-off, total-written)
					if _, err := w.Write(log[off : off+n]); err != nil {
						b.Fatal(err)
					}
					written += n
				}
				w.Close()
			}
		})
	}
}

// BenchmarkWrite1Byte writes log lines one byte per Write.
func BenchmarkWrite1Byte(b *testing.B) {
	secrets := benchSecrets(50)
	log := benchLog(1<<20, secrets)
	w := New(io.Discard, secrets)
	b.SetBytes(1)
	i := 0
	for b.Loop() {
		if _, err := w.Write(log[i : i+1]); err != nil {
			b.Fatal(err)
		}
		i = (i + 1) % len(log)
	}
}

// BenchmarkNew measures building the automaton for 50 secrets.
func BenchmarkNew(b *testing.B) {
	secrets := benchSecrets(50)
	for b.Loop() {
		New(io.Discard, secrets)
	}
}
