// Package mask hides secrets in build log output as it streams: a Writer replaces every
// occurrence of a secret (and of its common encodings) with "****" before passing the output on,
// even when a secret is split across several Write calls.
//
// Latency matters more than batching: after each Write, everything is passed on at once except the
// shortest tail of the output that could still be the beginning of a secret, which is held back
// until the next Write decides it (or Flush or Close gives up waiting); that is never more than
// 255 bytes. A log line ending in a newline is normally passed on whole, since no secret usually
// starts with "\n".
//
// Matching uses an Aho–Corasick automaton over all the forms of all the secrets, so the cost is
// linear in the output size whatever the number of secrets. Every byte that belongs to an
// occurrence of some secret is masked; a run of such bytes (occurrences that overlap or touch) is
// replaced by one "****". In particular, when one secret is a prefix of another, or two occurrences
// overlap, the longest span wins and no part of either is shown.
//
// Which forms are masked, and the minimum secret length, are described on New and in
// docs/secrets.md.
package mask

import (
	"errors"
	"io"
	"sync"
)

// Defaults.
const (
	// DefaultMinLength is the shortest secret that is masked, in bytes. Masking 1 to 3 byte values
	// ("1", "on", "dev") would mangle every log while hiding little.
	DefaultMinLength = 4
	// DefaultReplacement replaces each masked run.
	DefaultReplacement = "****"

	// outBufSize is how much masked output is collected before it is passed on within one Write;
	// larger unmasked spans are passed on without copying.
	outBufSize = 32 << 10
)

// ErrClosed is returned by Write and Flush after Close.
var ErrClosed = errors.New("mask: write after close")

// Option configures a Writer.
type Option func(*config)

type config struct {
	minLen      int
	replacement string
	encodings   bool
}

// WithMinLength sets the shortest secret that is masked, in bytes (default DefaultMinLength; values
// below 1 mean 1). Shorter secrets are ignored.
func WithMinLength(n int) Option { return func(c *config) { c.minLen = max(n, 1) } }

// WithReplacement sets what replaces each masked run (default DefaultReplacement).
func WithReplacement(s string) Option { return func(c *config) { c.replacement = s } }

// WithoutEncodings masks each secret as written only, not its base64, hex, URL-encoded, JSON or
// per-line forms.
func WithoutEncodings() Option { return func(c *config) { c.encodings = false } }

// flusher is what Flush passes on to, when the underlying writer has it.
type flusher interface{ Flush() error }

// Writer masks secrets in what is written to it and passes the result on. It is safe for
// concurrent use; each Write is masked as a whole. Call Close (or Flush) at the end of the output:
// until then a tail that could begin a secret is held back.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	m    *matcher // nil when there is nothing to mask
	repl []byte

	code    int32 // automaton state after the last byte read, as a code (see matcher)
	pos     int64 // input bytes read so far
	emitPos int64 // input before this offset has been passed on (or masked)
	held    []byte
	runs    []span // masked spans not yet passed by emitPos, sorted, disjoint, not touching
	out     []byte

	err    error // sticky error of the underlying writer
	closed bool
}

// span is a masked run of input [start, end). shown records that its replacement was written.
type span struct {
	start, end int64
	shown      bool
}

// New returns a Writer that passes what is written to it on to w with secrets masked.
//
// Each secret of at least the minimum length (DefaultMinLength bytes unless WithMinLength says
// otherwise) is masked as written, and also — unless WithoutEncodings — with surrounding white
// space trimmed, line by line when it has several lines, in base64 (standard and URL alphabets,
// alone or inside longer encoded data, when the encoded form is at least 8 characters), in hex
// (lower and upper case, at least 8 characters), percent-encoded as Go, Python, JavaScript and
// Java do it (with upper- and lower-case hex digits), and escaped as a JSON string (Go,
// JavaScript, Python). Empty, too short and white-space-only secrets are ignored. A form longer
// than 256 bytes is masked as consecutive 256-byte pieces, so a complete occurrence is masked
// whole and a truncated one up to its last complete piece; secrets get their encoded forms
// smallest first while all encoded forms together stay within 1 MiB.
func New(w io.Writer, secrets []string, opts ...Option) *Writer {
	c := config{minLen: DefaultMinLength, replacement: DefaultReplacement, encodings: true}
	for _, o := range opts {
		o(&c)
	}
	mw := &Writer{w: w, repl: []byte(c.replacement)}
	if ps := patterns(secrets, c.minLen, c.encodings); len(ps) > 0 {
		mw.m = newMatcher(ps, maxDenseEntries)
	}
	return mw
}

// Write masks p and passes on all of it that cannot be the beginning of a secret. It returns
// len(p) unless the underlying writer failed; after such a failure every call returns that error.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, ErrClosed
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.m == nil {
		n, err := w.w.Write(p)
		w.err = err
		return n, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	base := w.pos
	w.scan(p, base)
	w.pos = base + int64(len(p))
	w.emit(w.pos-int64(w.m.hold[w.m.state(w.code)]), p, base)
	w.keepTail(p, base)
	w.writeOut()
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// scan runs the automaton over p, which starts at input offset base, recording every match.
func (w *Writer) scan(p []byte, base int64) {
	m := w.m
	table, class := m.table, &m.class
	dense := int32(len(table))
	code := w.code
	for i, b := range p {
		var t int32
		if code < dense {
			t = table[code+int32(class[b])]
		} else {
			t = m.stepSparse(code, class[b])
		}
		code = t & codeMask
		if t < 0 {
			end := base + int64(i) + 1
			w.addMatch(end-int64(m.outLen[m.state(code)]), end)
		}
	}
	w.code = code
}

// addMatch records an occurrence [s, e). Matches arrive in order of their end, so it can only
// merge with the last runs.
func (w *Writer) addMatch(s, e int64) {
	shown := false
	for n := len(w.runs); n > 0 && w.runs[n-1].end >= s; n-- {
		r := w.runs[n-1]
		s = min(s, r.start)
		shown = shown || r.shown
		w.runs = w.runs[:n-1]
	}
	w.runs = append(w.runs, span{start: s, end: e, shown: shown})
}

// emit passes on the input before safe, which no future match can reach: clear bytes as they
// are, each masked run as one replacement. A run that reaches safe may still grow; its replacement
// is written once, when it starts, and the rest of it is skipped as it arrives.
func (w *Writer) emit(safe int64, p []byte, base int64) {
	cur := w.emitPos
	done := 0
	for done < len(w.runs) {
		r := &w.runs[done]
		if r.start > safe {
			break // a match starting before it may still extend it backwards
		}
		if r.start > cur {
			w.input(cur, r.start, p, base)
			cur = r.start
		}
		if !r.shown {
			w.put(w.repl)
			r.shown = true
		}
		cur = max(cur, r.end)
		if r.end >= safe {
			break // may still be extended by a match starting at safe
		}
		done++
	}
	w.runs = w.runs[:copy(w.runs, w.runs[done:])]
	if safe > cur {
		w.input(cur, safe, p, base)
		cur = safe
	}
	w.emitPos = cur
}

// input passes on input [from, to), taking it from the held tail and from p (which starts at base).
func (w *Writer) input(from, to int64, p []byte, base int64) {
	if from < base {
		heldStart := base - int64(len(w.held))
		e := min(to, base)
		w.put(w.held[from-heldStart : e-heldStart])
		from = e
	}
	if from < to {
		w.put(p[from-base : to-base])
	}
}

// keepTail makes held the input not yet passed on: [emitPos, pos).
func (w *Writer) keepTail(p []byte, base int64) {
	if w.emitPos < base {
		heldStart := base - int64(len(w.held))
		n := copy(w.held, w.held[w.emitPos-heldStart:])
		w.held = append(w.held[:n], p...)
		return
	}
	w.held = append(w.held[:0], p[w.emitPos-base:]...)
}

// put queues b for the underlying writer; a large b is passed on directly, without a copy.
func (w *Writer) put(b []byte) {
	if w.err != nil || len(b) == 0 {
		return
	}
	if len(w.out)+len(b) <= outBufSize {
		w.out = append(w.out, b...)
		return
	}
	w.writeOut()
	if len(b) >= outBufSize {
		w.write(b)
		return
	}
	w.out = append(w.out, b...)
}

func (w *Writer) writeOut() {
	if len(w.out) > 0 {
		w.write(w.out)
		w.out = w.out[:0]
	}
}

func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	n, err := w.w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	w.err = err
}

// Flush passes on the held-back tail: masked where it completes a secret, as it is otherwise
// (a secret that continues after Flush is then not recognised across it). It then flushes the
// underlying writer if it has a Flush() error method.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	return w.flush()
}

func (w *Writer) flush() error {
	if w.m != nil {
		w.emit(w.pos, nil, w.pos)
		w.held = w.held[:0]
		w.runs = w.runs[:0]
		w.code = 0
		w.writeOut()
	}
	if w.err != nil {
		return w.err
	}
	if f, ok := w.w.(flusher); ok {
		w.err = f.Flush()
	}
	return w.err
}

// Close flushes the held-back tail (see Flush). It does not close the underlying writer. Write
// and Flush fail after Close; Close again does nothing.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	err := w.flush()
	w.closed = true
	return err
}

// Held reports how many bytes of output are held back, waiting to see whether they begin a secret.
func (w *Writer) Held() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.held)
}

// Interface guard.
var _ io.WriteCloser = (*Writer)(nil)
