package keygroup_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
)

// The expected values are Flink's MathUtils.murmurHash, computed by a Java program that runs
// Flink's algorithm (openjdk 17) and again by an independent Python transcription; both agreed.
// By hand for 0: 0·c1 = 0, both rotations and c2 leave 0, 0·5 + 0xe6546b64 = 0xe6546b64,
// XOR the length 4 = 0xe6546b60, then the finalizer.
func TestMurmurHashMatchesFlink(t *testing.T) {
	for _, tc := range []struct {
		code                 int32
		hash, kg128, kg32768 int
	}{
		{0, 593689054, 94, 31198},
		{1, 68075478, 86, 16342},
		{-1, 1982413648, 80, 15184},
		{2, 1085422463, 127, 15231},
		{42, 1134849565, 29, 28189},
		{1000, 3506311, 7, 135},
		{math.MaxInt32, 1653689534, 62, 19646},
		{math.MinInt32, 1718298732, 108, 10348},
		{0x12345678, 331494558, 30, 13470},
	} {
		assert.Equal(t, int32(tc.hash), keygroup.MurmurHash(tc.code), "murmurHash(%d)", tc.code)
		assert.Equal(t, tc.kg128, keygroup.AssignToKeyGroup(tc.code, 128), "key group of %d at 128", tc.code)
		assert.Equal(t, tc.kg32768, keygroup.AssignToKeyGroup(tc.code, 32768), "key group of %d at 32768", tc.code)
	}
}

// Expected hash codes are Java's String.hashCode, Long.hashCode and Arrays.hashCode(byte[]), and
// the key groups Flink's, all printed by the same Java program.
func TestHashCodesMatchJava(t *testing.T) {
	for _, tc := range []struct {
		s     string
		hash  int32
		kg128 int
	}{
		{"", 0, 94},
		{"a", 97, 81},
		{"hello", 99162322, 35},
		{"key-42", -1134722900, 44},
		{"Flink", 67968320, 127},
		{"日本", 835047, 95},          // two BMP code units
		{"\U0001F600", 1772899, 54}, // one surrogate pair: 31·0xD83D + 0xDE00
	} {
		assert.Equal(t, tc.hash, keygroup.HashString(tc.s), "String.hashCode(%q)", tc.s)
		assert.Equal(t, tc.kg128, keygroup.AssignToKeyGroup(keygroup.HashString(tc.s), 128), "key group of %q", tc.s)
	}
	for _, tc := range []struct {
		v     int64
		hash  int32
		kg128 int
	}{
		{0, 0, 94},
		{1, 1, 86},
		{-1, 0, 94},
		{1 << 32, 1, 86},
		{math.MaxInt64, math.MinInt32, 108},
		{math.MinInt64, math.MinInt32, 108},
		{10_000_000_000, 1410065410, 109},
	} {
		assert.Equal(t, tc.hash, keygroup.HashInt64(tc.v), "Long.hashCode(%d)", tc.v)
		assert.Equal(t, tc.kg128, keygroup.AssignToKeyGroup(keygroup.HashInt64(tc.v), 128), "key group of %d", tc.v)
	}
	assert.Equal(t, int32(1), keygroup.HashBytes(nil))
	assert.Equal(t, int32(30817), keygroup.HashBytes([]byte{1, 2, 3}))
	assert.Equal(t, int32(930), keygroup.HashBytes([]byte{0xff, 0})) // 0xff is -1 as a Java byte
	assert.Equal(t, int32(-7), keygroup.HashInt32(-7))
}

// Integer keys 0..9 at max parallelism 128: key group and subtask at p = 4, 2, 8, from the Java
// program (Integer.hashCode is the value).
func TestAssignKeyToParallelOperatorMatchesFlink(t *testing.T) {
	want := []struct{ kg, op4, op2, op8 int }{
		{94, 2, 1, 5}, {86, 2, 1, 5}, {127, 3, 1, 7}, {113, 3, 1, 7}, {7, 0, 0, 0},
		{126, 3, 1, 7}, {18, 0, 0, 1}, {113, 3, 1, 7}, {15, 0, 0, 0}, {51, 1, 0, 3},
	}
	for k, w := range want {
		h := keygroup.HashInt32(int32(k))
		assert.Equal(t, w.kg, keygroup.AssignToKeyGroup(h, 128), "key %d", k)
		assert.Equal(t, w.op4, keygroup.AssignKeyToParallelOperator(h, 128, 4), "key %d p=4", k)
		assert.Equal(t, w.op2, keygroup.AssignKeyToParallelOperator(h, 128, 2), "key %d p=2", k)
		assert.Equal(t, w.op8, keygroup.AssignKeyToParallelOperator(h, 128, 8), "key %d p=8", k)
	}
}

func rng(start, end int) keygroup.KeyGroupRange {
	return keygroup.KeyGroupRange{Start: start, End: end}
}

// Expected ranges computed by hand: start = ⌈i·max/p⌉, end = ⌈(i+1)·max/p⌉ − 1.
func TestComputeKeyGroupRangeForOperatorIndex(t *testing.T) {
	for _, tc := range []struct {
		max, p int
		want   []keygroup.KeyGroupRange
	}{
		{128, 1, []keygroup.KeyGroupRange{rng(0, 127)}},
		{128, 2, []keygroup.KeyGroupRange{rng(0, 63), rng(64, 127)}},
		// 128/3 = 42.67: ⌈42.67⌉ = 43, ⌈85.33⌉ = 86.
		{128, 3, []keygroup.KeyGroupRange{rng(0, 42), rng(43, 85), rng(86, 127)}},
		{128, 4, []keygroup.KeyGroupRange{rng(0, 31), rng(32, 63), rng(64, 95), rng(96, 127)}},
		// 128/5 = 25.6: ⌈25.6⌉ = 26, ⌈51.2⌉ = 52, ⌈76.8⌉ = 77, ⌈102.4⌉ = 103; sizes 26 26 25 26 25.
		{128, 5, []keygroup.KeyGroupRange{rng(0, 25), rng(26, 51), rng(52, 76), rng(77, 102), rng(103, 127)}},
		{128, 8, []keygroup.KeyGroupRange{rng(0, 15), rng(16, 31), rng(32, 47), rng(48, 63), rng(64, 79), rng(80, 95), rng(96, 111), rng(112, 127)}},
		// 32768/7 = 4681.14: ⌈4681.14⌉ = 4682, ⌈9362.29⌉ = 9363, ⌈14043.43⌉ = 14044,
		// ⌈18724.57⌉ = 18725, ⌈23405.71⌉ = 23406, ⌈28086.86⌉ = 28087.
		{32768, 7, []keygroup.KeyGroupRange{rng(0, 4681), rng(4682, 9362), rng(9363, 14043), rng(14044, 18724), rng(18725, 23405), rng(23406, 28086), rng(28087, 32767)}},
		{10, 10, []keygroup.KeyGroupRange{rng(0, 0), rng(1, 1), rng(2, 2), rng(3, 3), rng(4, 4), rng(5, 5), rng(6, 6), rng(7, 7), rng(8, 8), rng(9, 9)}},
		// 10/3 = 3.33: ⌈3.33⌉ = 4, ⌈6.67⌉ = 7.
		{10, 3, []keygroup.KeyGroupRange{rng(0, 3), rng(4, 6), rng(7, 9)}},
		{1, 1, []keygroup.KeyGroupRange{rng(0, 0)}},
	} {
		for i, w := range tc.want {
			got, err := keygroup.ComputeKeyGroupRangeForOperatorIndex(tc.max, tc.p, i)
			require.NoError(t, err)
			assert.Equal(t, w, got, "max %d p %d index %d", tc.max, tc.p, i)
		}
		all, err := keygroup.KeyGroupPartitions(tc.max, tc.p)
		require.NoError(t, err)
		assert.Equal(t, tc.want, all, "max %d p %d", tc.max, tc.p)
	}
	// The last subtask at the upper bound.
	got, err := keygroup.ComputeKeyGroupRangeForOperatorIndex(32768, 32768, 32767)
	require.NoError(t, err)
	assert.Equal(t, rng(32767, 32767), got)
}

func TestComputeKeyGroupRangeForOperatorIndexErrors(t *testing.T) {
	for _, tc := range []struct {
		max, p, i int
		msg       string
	}{
		{128, 0, 0, "parallelism 0 is outside [1, 32768]"},
		{128, -1, 0, "parallelism -1 is outside [1, 32768]"},
		{0, 1, 0, "max parallelism 0 is outside [1, 32768]"},
		{32769, 1, 0, "max parallelism 32769 is outside [1, 32768]"},
		{128, 129, 0, "parallelism 129 is above the max parallelism 128"},
		{128, 4, 4, "operator index 4 is outside [0, 4)"},
		{128, 4, -1, "operator index -1 is outside [0, 4)"},
	} {
		got, err := keygroup.ComputeKeyGroupRangeForOperatorIndex(tc.max, tc.p, tc.i)
		require.Error(t, err, "max %d p %d i %d", tc.max, tc.p, tc.i)
		assert.Contains(t, err.Error(), tc.msg)
		assert.True(t, got.IsEmpty())
	}
	_, err := keygroup.KeyGroupPartitions(128, 200)
	assert.ErrorContains(t, err, "parallelism 200 is above the max parallelism 128")
}

// Programming errors on the hot path panic with a message naming the value.
func TestHotPathPanicsOnBadArguments(t *testing.T) {
	assert.PanicsWithValue(t, "keygroup: max parallelism 0 is outside [1, 32768]", func() { keygroup.AssignToKeyGroup(1, 0) })
	assert.PanicsWithValue(t, "keygroup: key group 128 is outside [0, 128)", func() { keygroup.ComputeOperatorIndexForKeyGroup(128, 4, 128) })
	assert.PanicsWithValue(t, "keygroup: parallelism 5 is above the max parallelism 4", func() { keygroup.AssignKeyToParallelOperator(1, 4, 5) })
}

// Flink's computeDefaultMaxParallelism: roundUpToPowerOfTwo(p + p/2) within [128, 32768]; the root
// package's DefaultMaxParallelism is reused, with Flink's precondition on p.
func TestComputeDefaultMaxParallelism(t *testing.T) {
	for _, tc := range []struct{ p, want int }{
		{1, 128}, {85, 128}, {86, 256}, {171, 256}, {172, 512}, {21845, 32768}, {21846, 32768}, {32768, 32768},
	} {
		got, err := keygroup.ComputeDefaultMaxParallelism(tc.p)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "p %d", tc.p)
		assert.Equal(t, jobgraph.DefaultMaxParallelism(tc.p), got)
	}
	for _, p := range []int{0, -3, 32769} {
		_, err := keygroup.ComputeDefaultMaxParallelism(p)
		assert.Error(t, err, "p %d", p)
	}
	assert.Equal(t, 32768, keygroup.UpperBoundMaxParallelism)
	assert.Equal(t, 128, keygroup.DefaultLowerBoundMaxParallelism)
}

func TestKeyGroupRange(t *testing.T) {
	r := rng(3, 7)
	assert.Equal(t, 5, r.NumberOfKeyGroups())
	assert.True(t, r.Contains(3))
	assert.True(t, r.Contains(7))
	assert.False(t, r.Contains(2))
	assert.False(t, r.Contains(8))
	var got []int
	for kg := range r.All() {
		got = append(got, kg)
	}
	assert.Equal(t, []int{3, 4, 5, 6, 7}, got)
	for kg := range r.All() {
		if kg == 4 {
			break // stopping early must not panic
		}
	}
	assert.Equal(t, rng(5, 7), r.Intersection(rng(5, 20)))
	assert.Equal(t, rng(3, 4), r.Intersection(rng(0, 4)))
	assert.Equal(t, keygroup.EmptyKeyGroupRange, r.Intersection(rng(8, 9)))
	assert.Equal(t, "[3, 7]", r.String())

	e := keygroup.EmptyKeyGroupRange
	assert.True(t, e.IsEmpty())
	assert.Equal(t, 0, e.NumberOfKeyGroups())
	assert.False(t, e.Contains(0))
	assert.Equal(t, "[]", e.String())
	for range e.All() {
		t.Fatal("empty range yields a key group")
	}
	assert.False(t, keygroup.KeyGroupRange{}.IsEmpty(), "the zero value is key group 0")

	n, err := keygroup.NewKeyGroupRange(2, 1)
	require.NoError(t, err)
	assert.Equal(t, keygroup.EmptyKeyGroupRange, n)
	n, err = keygroup.NewKeyGroupRange(2, 9)
	require.NoError(t, err)
	assert.Equal(t, rng(2, 9), n)
	_, err = keygroup.NewKeyGroupRange(-1, 9)
	assert.ErrorContains(t, err, "start -1 is negative")
}
