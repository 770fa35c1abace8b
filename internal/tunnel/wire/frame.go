package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"
)

// Frames. After the handshake both ends exchange frames of a 10-byte header and a payload:
//
//	length  uint32  payload bytes (at most MaxFrameSize)
//	type    uint8   one of the frame* constants
//	flags   uint8   flagEnd, flagAck
//	stream  uint32  the exchange the frame belongs to (0 for connection frames)
//
// An exchange (a "stream") is one HTTP request and its response. Only the control plane opens
// streams: its head frame carries the request, the runtime's head frame on the same stream
// carries the response. Each direction is a head, body data, and an end (flagEnd on the head
// or on a data frame, or a trailer frame). A reset ends both directions at once.
const (
	frameHeaderLen = 10

	frameHead    = 1 // a request or response head; flagEnd: no body follows
	frameData    = 2 // body bytes; flagEnd: the last of the body
	frameTrailer = 3 // trailer fields; ends the body
	frameReset   = 4 // uint32 code, then a message: the stream is over in both directions
	frameWindow  = 5 // uint32 increment: the sender may send that many more body bytes
	framePing    = 6 // 8 opaque bytes, echoed with flagAck

	flagEnd = 1
	flagAck = 1
)

// Reset codes.
const (
	// resetDone: the sender's side of the exchange is complete and it needs no more of the
	// other side's body (a handler that answered without reading the whole request body).
	resetDone = 0
	// resetCancel: the sender gave up on the exchange (the caller went away).
	resetCancel = 1
	// resetRefused: the runtime did not process the request (too many in flight).
	resetRefused = 2
	// resetInternal: the handler failed (panicked) before it finished its answer.
	resetInternal = 3
)

// Limits both ends enforce. A peer exceeding them is broken or hostile: the connection is
// dropped.
const (
	// MaxFrameSize bounds a frame's payload.
	MaxFrameSize = 1 << 20
	// MaxHeadSize bounds an encoded request or response head (the same as net/http's
	// DefaultMaxHeaderBytes).
	MaxHeadSize = 1 << 20
	// StreamWindow is how many body bytes one end may send on a stream before the other
	// end returns credit; it bounds what a stream buffers.
	StreamWindow = 1 << 20
	// MaxConcurrentStreams bounds the requests in flight on one tunnel connection.
	MaxConcurrentStreams = 1000
	// maxDataFrame is the largest data frame a writer sends: large enough that bodies cost
	// few frames, small enough that one body does not hold up other streams' frames long.
	maxDataFrame = 256 << 10
	maxResetMsg  = 1 << 10
)

// errProtocol marks a peer that broke the framing rules.
var errProtocol = errors.New("tunnel protocol error")

func protocolErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errProtocol, fmt.Sprintf(format, args...))
}

func appendFrameHeader(b []byte, length int, typ, flags byte, stream uint32) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(length))
	b = append(b, typ, flags)
	return binary.BigEndian.AppendUint32(b, stream)
}

// reqHead is a request as it travels: what the runtime needs to rebuild an *http.Request.
type reqHead struct {
	method        string
	uri           string // escaped path and query, as in an HTTP/1.1 request line
	host          string
	contentLength int64 // -1: unknown
	header        http.Header
}

// respHead is a response as it travels.
type respHead struct {
	status        int
	contentLength int64 // -1: unknown
	header        http.Header
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendFields(b []byte, h http.Header) []byte {
	n := 0
	for _, vv := range h {
		n += len(vv)
	}
	b = binary.AppendUvarint(b, uint64(n))
	for k, vv := range h {
		for _, v := range vv {
			b = appendString(b, k)
			b = appendString(b, v)
		}
	}
	return b
}

func (h *reqHead) append(b []byte) []byte {
	b = appendString(b, h.method)
	b = appendString(b, h.uri)
	b = appendString(b, h.host)
	b = binary.AppendVarint(b, h.contentLength)
	return appendFields(b, h.header)
}

func (h *respHead) append(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(h.status))
	b = binary.AppendVarint(b, h.contentLength)
	return appendFields(b, h.header)
}

// decoder reads a head's payload; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = protocolErr("malformed head: %s", what)
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string(what string) string {
	n := d.uvarint(what)
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail(what + " longer than the head")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) fields() http.Header {
	n := d.uvarint("field count")
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b))/2 { // every field takes at least two bytes
		d.fail("field count larger than the head")
		return nil
	}
	h := make(http.Header, n)
	// One string holds every name and value (they are slices of it) and one array every
	// value slice: three allocations for the whole header instead of three per field.
	all := string(d.b)
	vals := make([]string, n)
	for i := range n {
		k := d.substring(all, "field name")
		v := d.substring(all, "field value")
		if d.err != nil {
			return nil
		}
		valid, canonical := checkFieldName(k)
		if !valid {
			d.fail(fmt.Sprintf("field name %q is not an HTTP token", k))
			return nil
		}
		if !validFieldValue(v) {
			d.fail(fmt.Sprintf("field %s has a value with a control character", k))
			return nil
		}
		if !canonical {
			k = textproto.CanonicalMIMEHeaderKey(k)
		}
		if vv, ok := h[k]; ok {
			h[k] = append(vv, v)
			continue
		}
		vals[i] = v
		h[k] = vals[i : i+1 : i+1]
	}
	return h
}

// substring is string, for a decoder whose remaining bytes are the tail of all: the result
// is a slice of all instead of a copy.
func (d *decoder) substring(all, what string) string {
	n := d.uvarint(what)
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail(what + " longer than the head")
		return ""
	}
	off := len(all) - len(d.b)
	d.b = d.b[n:]
	return all[off : off+int(n)]
}

func (d *decoder) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail(fmt.Sprintf("%d bytes after the fields", len(d.b)))
	}
	return d.err
}

func decodeReqHead(b []byte) (*reqHead, error) {
	d := decoder{b: b}
	h := &reqHead{
		method:        d.string("method"),
		uri:           d.string("request URI"),
		host:          d.string("host"),
		contentLength: d.varint("content length"),
	}
	h.header = d.fields()
	if err := d.done(); err != nil {
		return nil, err
	}
	if !validFieldName(h.method) {
		return nil, protocolErr("method %q is not an HTTP token", h.method)
	}
	if h.uri == "" || !validFieldValue(h.uri) || strings.ContainsAny(h.uri, " \t") {
		return nil, protocolErr("request URI %q is empty or holds spaces or control characters", h.uri)
	}
	if !validFieldValue(h.host) {
		return nil, protocolErr("host %q holds a control character", h.host)
	}
	if h.contentLength < -1 {
		return nil, protocolErr("content length %d is below -1", h.contentLength)
	}
	return h, nil
}

func decodeRespHead(b []byte) (*respHead, error) {
	d := decoder{b: b}
	status := d.uvarint("status")
	h := &respHead{contentLength: d.varint("content length")}
	h.header = d.fields()
	if err := d.done(); err != nil {
		return nil, err
	}
	if status < 100 || status > 999 {
		return nil, protocolErr("status %d is not a three-digit HTTP status", status)
	}
	h.status = int(status)
	if h.contentLength < -1 {
		return nil, protocolErr("content length %d is below -1", h.contentLength)
	}
	return h, nil
}

func decodeTrailer(b []byte) (http.Header, error) {
	d := decoder{b: b}
	h := d.fields()
	return h, d.done()
}

// validFieldName reports whether s is an HTTP token (RFC 9110 section 5.6.2).
func validFieldName(s string) bool {
	valid, _ := checkFieldName(s)
	return valid
}

// checkFieldName reports whether s is an HTTP token and whether it is already in the
// canonical form of textproto.CanonicalMIMEHeaderKey (as the keys of an http.Header are), so
// that decoding need not canonicalize it again.
func checkFieldName(s string) (valid, canonical bool) {
	if s == "" {
		return false, false
	}
	canonical = true
	upper := true // the next letter must be upper case
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || !isTokenChar[c] {
			return false, false
		}
		switch {
		case 'a' <= c && c <= 'z':
			canonical = canonical && !upper
		case 'A' <= c && c <= 'Z':
			canonical = canonical && upper
		}
		upper = c == '-'
	}
	return true, canonical
}

// validFieldValue reports whether s holds no CR, LF, NUL or other control character but
// horizontal tab.
func validFieldValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

var isTokenChar = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()
