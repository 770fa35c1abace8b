package store

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"sync"
	"time"
)

// ID prefixes name the kind of object an ID refers to.
const (
	PrefixAccount = "acc"
	PrefixUser    = "usr"
	PrefixAPIKey  = "key"
	PrefixSession = "ses"
	PrefixAudit   = "aud"
)

const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

var (
	idMu   sync.Mutex
	lastMS int64
	seq    uint16
)

// NewID returns "<prefix>_" followed by 26 lowercase Crockford base32 characters: 48 bits of
// milliseconds, a 16-bit sequence within the millisecond and 66 random bits. IDs of one prefix
// sort by creation time, which is what cursor pagination relies on.
func NewID(prefix string) string {
	ms := time.Now().UnixMilli()
	idMu.Lock()
	if ms <= lastMS {
		ms = lastMS
		seq++
		if seq == 0 { // 65,536 IDs in one millisecond: borrow the next one
			ms++
		}
	} else {
		seq = 0
	}
	lastMS = ms
	s := seq
	idMu.Unlock()

	var b [16]byte
	binary.BigEndian.PutUint64(b[0:8], uint64(ms)<<16|uint64(s))
	rand.Read(b[8:])
	// 128 bits -> 26 base32 characters (130 bits, top 2 zero).
	hi := binary.BigEndian.Uint64(b[0:8])
	lo := binary.BigEndian.Uint64(b[8:16])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	var sb strings.Builder
	sb.Grow(len(prefix) + 27)
	sb.WriteString(prefix)
	sb.WriteByte('_')
	sb.Write(out[:])
	return sb.String()
}
