package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// respBufSize is how much of a response body the runtime's end holds back before it sends
// the head: a handler that answers within it sends head, body and end in one go, with a
// Content-Length.
const respBufSize = 8 << 10

var respBufPool = sync.Pool{New: func() any { b := make([]byte, 0, respBufSize); return &b }}

// serve runs the handler for one request (the runtime's end).
func (s *Session) serve(st *stream, h *reqHead) {
	defer s.active.Add(-1)
	ctx, cancel := context.WithCancel(s.baseCtx)
	defer cancel()
	st.mu.Lock()
	aborted := st.sendErr != nil
	st.cancel = cancel
	st.mu.Unlock()
	if aborted {
		return
	}
	w := &responseWriter{st: st, header: make(http.Header), method: h.method}
	u, err := url.ParseRequestURI(h.uri)
	if err != nil {
		w.header.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "bad request URI %q: %v\n", h.uri, err)
		w.finish()
		return
	}
	// Built on the stack and copied once by WithContext: one Request allocation, not two.
	r0 := http.Request{
		Method:        h.method,
		URL:           u,
		Proto:         "HTTP/2.0",
		ProtoMajor:    2,
		Header:        h.header,
		Host:          h.host,
		RemoteAddr:    s.remoteAddr,
		RequestURI:    h.uri,
		ContentLength: h.contentLength,
		Body:          http.NoBody,
	}
	r := r0.WithContext(ctx)
	st.mu.Lock()
	hasBody := !st.recvEnd || len(st.chunks) > 0
	st.mu.Unlock()
	if hasBody {
		b := &serverBody{st: st, req: r}
		r.Body = b
		r.Trailer = announcedTrailer(h.header)
	} else {
		r.ContentLength = 0
	}
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				buf := make([]byte, 16<<10)
				buf = buf[:runtime.Stack(buf, false)]
				s.cfg.Log.Error("tunnel: handler panicked", "path", h.uri, "panic", fmt.Sprint(p), "stack", string(buf))
			}
			st.reset(resetInternal, "the runtime's handler failed", errors.New("handler panicked"))
			return
		}
		w.finish()
	}()
	s.handler.ServeHTTP(w, r)
}

// serverBody is a request body as the runtime's handler reads it.
type serverBody struct {
	st  *stream
	req *http.Request
}

func (b *serverBody) Read(p []byte) (int, error) {
	n, err := b.st.read(p)
	if err == io.EOF && b.req.Trailer != nil {
		b.st.mu.Lock()
		for k, vv := range b.st.trailer {
			b.req.Trailer[k] = vv
		}
		b.st.mu.Unlock()
	}
	return n, err
}

func (b *serverBody) Close() error {
	b.st.closeRead()
	return nil
}

// responseWriter is the runtime handler's http.ResponseWriter for a tunnelled request. It
// supports http.Flusher and, through http.ResponseController, read and write deadlines.
type responseWriter struct {
	st       *stream
	method   string
	header   http.Header
	status   int
	headSent bool
	noBody   bool   // a HEAD request, or a status without a body
	buf      []byte // body bytes not yet sent
	bufp     *[]byte
	err      error
	finished bool
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) {
	if w.status != 0 || w.finished {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		return // informational answers are not passed through
	}
	w.status = code
	w.noBody = w.method == http.MethodHead || code == http.StatusNoContent || code == http.StatusNotModified
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.finished {
		return 0, errWriteAfterReturn
	}
	if w.noBody {
		if w.method == http.MethodHead {
			return len(p), nil
		}
		return 0, http.ErrBodyNotAllowed
	}
	if w.err != nil {
		return 0, w.err
	}
	if len(w.buf)+len(p) <= respBufSize {
		if w.buf == nil {
			w.getBuf()
		}
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	if err := w.send(p, false); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *responseWriter) WriteString(s string) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if len(w.buf)+len(s) <= respBufSize && w.status != 0 && !w.noBody && w.err == nil && !w.finished {
		if w.buf == nil {
			w.getBuf()
		}
		w.buf = append(w.buf, s...)
		return len(s), nil
	}
	return w.Write([]byte(s))
}

func (w *responseWriter) getBuf() {
	w.bufp = respBufPool.Get().(*[]byte)
	w.buf = (*w.bufp)[:0]
}

// putBuf returns the buffer once its bytes were queued (queueing copies them).
func (w *responseWriter) putBuf() {
	if w.bufp != nil {
		*w.bufp = w.buf[:0]
		respBufPool.Put(w.bufp)
		w.bufp, w.buf = nil, nil
	}
}

// Flush sends what the handler wrote so far.
func (w *responseWriter) Flush() { w.FlushError() }

// FlushError sends what the handler wrote so far.
func (w *responseWriter) FlushError() error {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil || w.finished {
		return w.err
	}
	return w.send(nil, false)
}

func (w *responseWriter) SetReadDeadline(t time.Time) error {
	w.st.setReadDeadline(t)
	return nil
}

func (w *responseWriter) SetWriteDeadline(t time.Time) error {
	w.st.setWriteDeadline(t)
	return nil
}

var errWriteAfterReturn = errors.New("tunnel: write after the handler returned")

// declaredTrailers are the keys the handler announced in its Trailer header.
func declaredTrailers(h http.Header) []string {
	var keys []string
	for _, v := range h["Trailer"] {
		for k := range strings.SplitSeq(v, ",") {
			if k = strings.TrimSpace(k); k != "" {
				keys = append(keys, http.CanonicalHeaderKey(k))
			}
		}
	}
	return keys
}

// announcedTrailer is the Trailer map of a request or response whose head announced
// trailers: the keys, with values filled in when the trailers arrive; nil when it announced none.
func announcedTrailer(h http.Header) http.Header {
	keys := declaredTrailers(h)
	if len(keys) == 0 {
		return nil
	}
	t := make(http.Header, len(keys))
	for _, k := range keys {
		t[k] = nil
	}
	return t
}

// head is the response head as it goes out: the handler's header minus trailers.
func (w *responseWriter) head(contentLength int64) *respHead {
	h := w.header
	declared := declaredTrailers(h)
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) || len(declared) > 0 {
			h = h.Clone()
			for k := range h {
				if strings.HasPrefix(k, http.TrailerPrefix) {
					delete(h, k)
				}
			}
			for _, k := range declared {
				delete(h, k)
			}
			break
		}
	}
	if cl := h.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
			contentLength = n
		}
	}
	return &respHead{status: w.status, contentLength: contentLength, header: h}
}

// sniff sets a Content-Type from the first bytes of the body, as net/http does.
func (w *responseWriter) sniff(p []byte) {
	if w.noBody || len(p) == 0 {
		return
	}
	if _, ok := w.header["Content-Type"]; ok {
		return
	}
	if w.header.Get("Transfer-Encoding") != "" {
		return
	}
	w.header.Set("Content-Type", http.DetectContentType(p))
}

// send sends the head if it has not gone yet, then the held-back body and p.
func (w *responseWriter) send(p []byte, end bool) error {
	st := w.st
	if !w.headSent {
		w.headSent = true
		if len(w.buf) > 0 {
			w.sniff(w.buf)
		} else {
			w.sniff(p)
		}
		hd := w.head(-1)
		if err := st.s.queue(true, frame{typ: frameHead, id: st.id, enc: hd}); err != nil {
			w.err = err
			return err
		}
	}
	if len(w.buf) > 0 {
		err := st.write(w.buf, end && len(p) == 0)
		w.buf = w.buf[:0]
		if err != nil {
			w.err = err
			return err
		}
		if end && len(p) == 0 {
			return nil
		}
	}
	if len(p) > 0 || end {
		if err := st.write(p, end); err != nil {
			w.err = err
			return err
		}
	}
	return nil
}

// finish ends the answer when the handler returned: a handler that wrote little sends head,
// body and end together, with a Content-Length.
func (w *responseWriter) finish() {
	if w.finished {
		return
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	st := w.st
	defer func() {
		w.finished = true
		w.putBuf()
		st.mu.Lock()
		pending := !st.recvEnd
		st.mu.Unlock()
		if pending { // the rest of the request body is not needed: say so, and stop it
			st.reset(resetDone, "", errBodyClosed)
		}
	}()
	if w.err != nil {
		st.reset(resetInternal, "the runtime could not send its answer", w.err)
		return
	}
	trailer := w.trailers()
	if !w.headSent && len(trailer) == 0 {
		w.headSent = true
		w.sniff(w.buf)
		if !w.noBody && w.header.Get("Content-Length") == "" && w.header.Get("Transfer-Encoding") == "" {
			w.header["Content-Length"] = []string{strconv.Itoa(len(w.buf))}
		}
		hd := w.head(int64(len(w.buf)))
		st.mu.Lock()
		if st.sendErr != nil {
			st.mu.Unlock()
			return
		}
		st.sendEnd = true
		st.sendWin -= len(w.buf)
		done := st.doneLocked()
		st.mu.Unlock()
		var err error
		if len(w.buf) == 0 {
			err = st.s.queue(true, frame{typ: frameHead, flags: flagEnd, id: st.id, enc: hd})
		} else {
			err = st.s.queue(true, frame{typ: frameHead, id: st.id, enc: hd}, frame{typ: frameData, flags: flagEnd, id: st.id, payload: w.buf})
		}
		if err == nil && done {
			st.s.remove(st)
		}
		return
	}
	if len(trailer) == 0 {
		w.send(nil, true)
		return
	}
	if err := w.send(nil, false); err == nil {
		st.endWith(trailer)
	}
}

// trailers collects the trailer values the handler set: announced keys and
// http.TrailerPrefix keys.
func (w *responseWriter) trailers() http.Header {
	var t http.Header
	add := func(k string, vv []string) {
		if t == nil {
			t = make(http.Header)
		}
		t[k] = vv
	}
	for _, k := range declaredTrailers(w.header) {
		if vv, ok := w.header[k]; ok {
			add(k, vv)
		}
	}
	for k, vv := range w.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			add(http.CanonicalHeaderKey(name), vv)
		}
	}
	return t
}
