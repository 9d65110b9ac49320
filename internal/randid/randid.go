// Package randid makes the random 16-byte identifiers every endpoint mints per job (JobIDs,
// AllocationIDs, ExecutionGraphIDs, leader sessions, slot requests) from math/rand/v2's global
// generator rather than crypto/rand. Flink's AbstractID is random too, from a java.util.Random;
// the IDs are names and fencing tokens, never secrets (a transport's TLS is what keeps a peer
// out), so what they need is to be unique, and 128 bits of a ChaCha8 stream the runtime seeds
// from the operating system are. The global generator is safe for concurrent use and costs a
// few nanoseconds, where crypto/rand's read was a system call's worth per ID on every job.
package randid

import (
	"encoding/binary"
	"math/rand/v2"
)

// New returns 16 random bytes. Safe for concurrent use.
func New() [16]byte {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], rand.Uint64())
	binary.BigEndian.PutUint64(b[8:], rand.Uint64())
	return b
}

// NewUUID returns a random (version 4, RFC 9562 variant) UUID's 16 bytes: New with the version
// and variant bits set, as github.com/google/uuid's New sets them. Safe for concurrent use.
func NewUUID() [16]byte {
	b := New()
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return b
}
