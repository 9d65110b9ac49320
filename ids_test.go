package jobgraph_test

import (
	"encoding"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

var lowerHex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

// abstractID is what every 16-byte ID type offers.
type abstractID interface {
	~[16]byte
	fmt.Stringer
	IsZero() bool
	encoding.TextMarshaler
}

// checkAbstractID runs the common checks for one 16-byte ID kind.
func checkAbstractID[T abstractID, PT interface {
	*T
	encoding.TextUnmarshaler
}](t *testing.T, kind string, newID func() T, parse func(string) (T, error)) {
	t.Run(kind, func(t *testing.T) {
		// A fixed value prints as Flink prints an AbstractID: upper long then lower long in hex.
		var known T
		for i := range known {
			known[i] = byte(i)
		}
		assert.Equal(t, "000102030405060708090a0b0c0d0e0f", known.String())
		var zero T
		assert.True(t, zero.IsZero())
		assert.Equal(t, "00000000000000000000000000000000", zero.String())
		assert.False(t, known.IsZero())

		// Random IDs: 32 lower-case hex characters, distinct, and Parse round-trips.
		a, b := newID(), newID()
		assert.NotEqual(t, a, b)
		assert.False(t, a.IsZero())
		require.Regexp(t, lowerHex32, a.String())
		got, err := parse(a.String())
		require.NoError(t, err)
		assert.Equal(t, a, got)

		// Upper case is accepted too.
		got, err = parse("000102030405060708090A0B0C0D0E0F")
		require.NoError(t, err)
		assert.Equal(t, known, got)

		// Wrong length and non-hex input name the kind and return the zero value.
		for _, tc := range []struct{ in, want string }{
			{"", fmt.Sprintf(`jobgraph: %s "": want 32 hexadecimal characters, got 0 characters`, kind)},
			{"abc", fmt.Sprintf(`jobgraph: %s "abc": want 32 hexadecimal characters, got 3 characters`, kind)},
			{known.String() + "0", fmt.Sprintf(`jobgraph: %s "%s0": want 32 hexadecimal characters, got 33 characters`, kind, known)},
			{"000102030405060708090a0b0c0d0e0", fmt.Sprintf(`jobgraph: %s "000102030405060708090a0b0c0d0e0": want 32 hexadecimal characters, got 31 characters`, kind)},
		} {
			got, err := parse(tc.in)
			require.EqualError(t, err, tc.want)
			assert.True(t, got.IsZero(), "%q", tc.in)
		}
		for _, in := range []string{
			"0102zz00000000000000000000000000", // hex.Decode fails after two good bytes
			"g0000000000000000000000000000000",
			"0000000000000000000000000000000-",
			" 0000000000000000000000000000000",
		} {
			got, err := parse(in)
			require.Error(t, err, "%q", in)
			assert.Contains(t, err.Error(), fmt.Sprintf(`jobgraph: %s %q: not hexadecimal`, kind, in))
			assert.True(t, got.IsZero(), "a failed parse of %q must not return partial bytes, got %v", in, got)
		}

		// MarshalText / UnmarshalText round trip; bad text is refused.
		text, err := a.MarshalText()
		require.NoError(t, err)
		assert.Equal(t, a.String(), string(text))
		var back T
		require.NoError(t, PT(&back).UnmarshalText(text))
		assert.Equal(t, a, back)
		err = PT(&back).UnmarshalText([]byte("nope"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), kind)

		// In JSON the ID is a string, also as a map key.
		data, err := json.Marshal(map[T]T{known: a})
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf(`{"000102030405060708090a0b0c0d0e0f":%q}`, a.String()), string(data))
		var m map[T]T
		require.NoError(t, json.Unmarshal(data, &m))
		assert.Equal(t, map[T]T{known: a}, m)
		require.Error(t, json.Unmarshal([]byte(`"xyz"`), PT(&back)))
	})
}

func TestAbstractIDs(t *testing.T) {
	checkAbstractID(t, "JobID", jobgraph.NewJobID, jobgraph.ParseJobID)
	checkAbstractID(t, "JobVertexID", jobgraph.NewJobVertexID, jobgraph.ParseJobVertexID)
	checkAbstractID(t, "IntermediateDataSetID", jobgraph.NewIntermediateDataSetID, jobgraph.ParseIntermediateDataSetID)
	checkAbstractID(t, "AllocationID", jobgraph.NewAllocationID, jobgraph.ParseAllocationID)
	checkAbstractID(t, "JobMasterID", jobgraph.NewJobMasterID, jobgraph.ParseJobMasterID)
	checkAbstractID(t, "ResourceManagerID", jobgraph.NewResourceManagerID, jobgraph.ParseResourceManagerID)
	checkAbstractID(t, "ExecutionGraphID", jobgraph.NewExecutionGraphID, jobgraph.ParseExecutionGraphID)
}

func TestResourceID(t *testing.T) {
	id := jobgraph.NewResourceID("taskexecutor")
	assert.Regexp(t, `^taskexecutor-[0-9a-f]{12}$`, id.String())
	assert.NotEqual(t, id, jobgraph.NewResourceID("taskexecutor"))
	assert.Equal(t, "tm-1", jobgraph.ResourceID("tm-1").String())
}

func TestExecutionVertexIDAndPartitionIDString(t *testing.T) {
	assert.Equal(t, "0000000000000000000000000000000a_3",
		jobgraph.ExecutionVertexID{JobVertexID: vid(10), Subtask: 3}.String())
	assert.Equal(t, "00000000000000000000000000000007#12",
		jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: dsid(7), PartitionIndex: 12}.String())
}

func TestExecutionAttemptID(t *testing.T) {
	var eg jobgraph.ExecutionGraphID
	eg[0] = 0xab
	id := jobgraph.ExecutionAttemptID{
		ExecutionGraphID:  eg,
		ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: vid(10), Subtask: 3},
		AttemptNumber:     2,
	}
	const text = "ab000000000000000000000000000000_0000000000000000000000000000000a_3_2"
	assert.Equal(t, text, id.String())

	got, err := jobgraph.ParseExecutionAttemptID(text)
	require.NoError(t, err)
	assert.Equal(t, id, got)

	// Random IDs round-trip too, and upper-case hex parses to the same ID.
	rnd := jobgraph.ExecutionAttemptID{
		ExecutionGraphID:  jobgraph.NewExecutionGraphID(),
		ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: jobgraph.NewJobVertexID(), Subtask: 9999},
		AttemptNumber:     0,
	}
	got, err = jobgraph.ParseExecutionAttemptID(rnd.String())
	require.NoError(t, err)
	assert.Equal(t, rnd, got)
	got, err = jobgraph.ParseExecutionAttemptID(strings.ToUpper(text))
	require.NoError(t, err)
	assert.Equal(t, id, got)

	const g = "ab000000000000000000000000000000"
	const v = "0000000000000000000000000000000a"
	for _, tc := range []struct {
		name, in, wantSubstr string
	}{
		{"empty", "", `jobgraph: ExecutionAttemptID "": want <executionGraph>_<vertex>_<subtask>_<attempt>`},
		{"three parts", g + "_" + v + "_3", `want <executionGraph>_<vertex>_<subtask>_<attempt>`},
		{"five parts", text + "_1", `want <executionGraph>_<vertex>_<subtask>_<attempt>`},
		{"bad graph ID", "xx_" + v + "_3_2", `jobgraph: ExecutionGraphID "xx": want 32 hexadecimal characters`},
		{"bad vertex ID", g + "_" + strings.Repeat("z", 32) + "_3_2", `jobgraph: JobVertexID "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz": not hexadecimal`},
		{"subtask not a number", g + "_" + v + "_x_2", `bad subtask index "x"`},
		{"negative subtask", g + "_" + v + "_-1_2", `bad subtask index "-1"`},
		{"empty subtask", g + "_" + v + "__2", `bad subtask index ""`},
		{"attempt not a number", g + "_" + v + "_3_y", `bad attempt number "y"`},
		{"negative attempt", g + "_" + v + "_3_-2", `bad attempt number "-2"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := jobgraph.ParseExecutionAttemptID(tc.in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantSubstr)
		})
	}

	data, err := json.Marshal(id)
	require.NoError(t, err)
	assert.Equal(t, `{"executionGraphId":"ab000000000000000000000000000000",`+
		`"executionVertexId":{"jobVertexId":"0000000000000000000000000000000a","subtask":3},"attemptNumber":2}`, string(data))
	var back jobgraph.ExecutionAttemptID
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, id, back)
}
