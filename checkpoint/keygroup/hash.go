package keygroup

import "unicode/utf16"

// The hash codes below are the 32-bit "hashCode" AssignToKeyGroup takes. They are Java's, so a key
// a Go job and a Flink job both use lands in the same key group in both, and state written by one
// can be read key group by key group by the other's conventions.

// HashString is Java's String.hashCode of s: h = 31·h + c over the UTF-16 code units c of s,
// starting at 0, in int32 arithmetic. s is read as UTF-8; an invalid byte counts as U+FFFD (what
// Go's range over a string yields), so only valid UTF-8 strings are guaranteed to match Java's.
func HashString(s string) int32 {
	var h int32
	for _, r := range s {
		if r1, r2 := utf16.EncodeRune(r); r1 != '\uFFFD' || r2 != '\uFFFD' {
			h = 31*h + r1
			h = 31*h + r2
			continue
		}
		h = 31*h + r
	}
	return h
}

// HashBytes is Java's java.util.Arrays.hashCode(byte[]) of b: h = 31·h + b over the bytes read as
// signed, starting at 1. Where we differ: Flink refuses arrays as keys (their hashCode is the
// object's identity), so no Flink value exists to match; this is the content hash Flink's users
// reach for when they wrap a byte array.
func HashBytes(b []byte) int32 {
	h := int32(1)
	for _, c := range b {
		h = 31*h + int32(int8(c))
	}
	return h
}

// HashInt64 is Java's Long.hashCode of v: the low 32 bits of v XOR (v >>> 32).
func HashInt64(v int64) int32 {
	u := uint64(v)
	return int32(uint32(u ^ u>>32))
}

// HashInt32 is Java's Integer.hashCode of v: v itself.
func HashInt32(v int32) int32 { return v }
