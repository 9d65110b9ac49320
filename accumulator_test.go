package jobgraph_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

// maxInt is a host-defined accumulator: the largest int added.
type maxInt struct {
	mu  sync.Mutex
	v   int
	set bool
}

func (m *maxInt) Add(v int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.set || v > m.v {
		m.v, m.set = v, true
	}
}

func (m *maxInt) value() (int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.v, m.set
}

func (m *maxInt) Kind() string { return "test.MaxInt" }

func (m *maxInt) LocalValue() any { v, _ := m.value(); return v }

func (m *maxInt) Merge(other jobgraph.Accumulator) error {
	o, ok := other.(*maxInt)
	if !ok {
		return fmt.Errorf("test.MaxInt: cannot merge a %s", other.Kind())
	}
	if v, set := o.value(); set {
		m.Add(v)
	}
	return nil
}

func (m *maxInt) MarshalJSON() ([]byte, error) {
	v, set := m.value()
	if !set {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

func (m *maxInt) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	var v int
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	m.Add(v)
	return nil
}

// failing is an accumulator whose value never encodes.
type failing struct{ jobgraph.IntCounter }

func (f *failing) Kind() string                 { return "test.Failing" }
func (f *failing) MarshalJSON() ([]byte, error) { return nil, errors.New("cannot encode") }

func init() {
	if err := jobgraph.RegisterAccumulator(func() jobgraph.Accumulator { return new(maxInt) }); err != nil {
		panic(err)
	}
}

func TestIntCounterAddAndMerge(t *testing.T) {
	var a, b jobgraph.IntCounter
	a.Add(3)
	a.Add(4)
	b.Add(-10)
	require.NoError(t, a.Merge(&b))
	assert.Equal(t, -3, a.Value())
	assert.Equal(t, -10, b.Value(), "Merge leaves other alone")
	assert.Equal(t, -3, a.LocalValue())
	assert.Equal(t, "IntCounter", a.Kind())
	require.NoError(t, a.Merge(&a))
	assert.Equal(t, -6, a.Value(), "merging into itself doubles")
}

func TestLongCounterAddAndMerge(t *testing.T) {
	var a, b jobgraph.LongCounter
	a.Add(math.MaxInt64 - 5)
	b.Add(2)
	require.NoError(t, a.Merge(&b))
	assert.Equal(t, int64(math.MaxInt64-3), a.Value())
	assert.Equal(t, int64(math.MaxInt64-3), a.LocalValue())
	data, err := json.Marshal(&a)
	require.NoError(t, err)
	assert.Equal(t, "9223372036854775804", string(data), "int64 survives JSON exactly")
}

func TestDoubleCounterAddAndMerge(t *testing.T) {
	var a, b jobgraph.DoubleCounter
	a.Add(0.5)
	a.Add(0.25)
	b.Add(2)
	require.NoError(t, a.Merge(&b))
	assert.Equal(t, 2.75, a.Value())
	assert.Equal(t, 2.75, a.LocalValue())
}

func TestHistogramAddAndMerge(t *testing.T) {
	var a, b jobgraph.Histogram
	assert.Equal(t, map[int]int{}, a.Value())
	for _, v := range []int{3, 5, 3, -1} {
		a.Add(v)
	}
	b.Add(5)
	b.Add(7)
	require.NoError(t, a.Merge(&b))
	assert.Equal(t, map[int]int{-1: 1, 3: 2, 5: 2, 7: 1}, a.Value())
	assert.Equal(t, map[int]int{5: 1, 7: 1}, b.Value())
	got := a.Value()
	got[3] = 100
	assert.Equal(t, 2, a.Value()[3], "Value is a copy")
}

func TestListAccumulatorAddAndMerge(t *testing.T) {
	var a, b jobgraph.ListAccumulator[string]
	assert.Nil(t, a.Value())
	a.Add("x")
	a.Add("y")
	b.Add("z")
	require.NoError(t, a.Merge(&b))
	assert.Equal(t, []string{"x", "y", "z"}, a.Value())
	assert.Equal(t, []string{"x", "y", "z"}, a.LocalValue())
	require.NoError(t, a.Merge(&a))
	assert.Equal(t, []string{"x", "y", "z", "x", "y", "z"}, a.Value())
}

func TestHostDefinedAccumulatorAddAndMerge(t *testing.T) {
	a, b := new(maxInt), new(maxInt)
	a.Add(3)
	b.Add(9)
	b.Add(-2)
	require.NoError(t, a.Merge(b))
	assert.Equal(t, 9, a.LocalValue())
}

func TestMergeOfDifferentTypesIsATypeError(t *testing.T) {
	var ic jobgraph.IntCounter
	var lc jobgraph.LongCounter
	err := ic.Merge(&lc)
	require.ErrorIs(t, err, jobgraph.ErrAccumulatorTypeMismatch)
	assert.EqualError(t, err, "two types under one name: IntCounter and LongCounter")
	assert.Equal(t, 0, ic.Value(), "nothing changed")

	// Same kind, other Go type: the error names the Go types.
	var ls jobgraph.ListAccumulator[string]
	var li jobgraph.ListAccumulator[int]
	err = ls.Merge(&li)
	require.ErrorIs(t, err, jobgraph.ErrAccumulatorTypeMismatch)
	assert.EqualError(t, err, "two types under one name: *jobgraph.ListAccumulator[string] and *jobgraph.ListAccumulator[int]")

	for _, a := range []jobgraph.Accumulator{new(jobgraph.LongCounter), new(jobgraph.DoubleCounter), new(jobgraph.Histogram)} {
		err := a.Merge(&ic)
		require.ErrorIs(t, err, jobgraph.ErrAccumulatorTypeMismatch, a.Kind())
		assert.EqualError(t, err, "two types under one name: "+a.Kind()+" and IntCounter")
	}
}

// Every accumulator's JSON decodes to the same value.
func TestAccumulatorJSONRoundTrip(t *testing.T) {
	ic := new(jobgraph.IntCounter)
	ic.Add(42)
	lc := new(jobgraph.LongCounter)
	lc.Add(-7)
	dc := new(jobgraph.DoubleCounter)
	dc.Add(1.5)
	h := new(jobgraph.Histogram)
	h.Add(10)
	h.Add(3)
	h.Add(3)
	l := new(jobgraph.ListAccumulator[string])
	l.Add("a")
	l.Add("b")
	m := new(maxInt)
	m.Add(5)
	for _, c := range []struct {
		acc  jobgraph.Accumulator
		json string
	}{
		{ic, `42`}, {lc, `-7`}, {dc, `1.5`}, {h, `{"10":1,"3":2}`}, {l, `["a","b"]`},
		{new(jobgraph.ListAccumulator[int]), `[]`}, {m, `5`},
	} {
		s := jobgraph.SerializeAccumulator(c.acc)
		assert.Equal(t, jobgraph.SerializedAccumulator{Kind: c.acc.Kind(), Value: json.RawMessage(c.json)}, s)
		back, err := s.Accumulator()
		require.NoError(t, err, c.acc.Kind())
		assert.Equal(t, c.json, string(jobgraph.SerializeAccumulator(back).Value), c.acc.Kind())
	}

	// A ListAccumulator comes back, in any process, as a list of JSON elements.
	back, err := jobgraph.SerializeAccumulator(l).Accumulator()
	require.NoError(t, err)
	assert.Equal(t, []json.RawMessage{json.RawMessage(`"a"`), json.RawMessage(`"b"`)}, back.LocalValue())

	// JSON has no NaN or infinities; a DoubleCounter spells them as strings.
	for _, c := range []struct {
		v    float64
		json string
	}{{math.NaN(), `"NaN"`}, {math.Inf(1), `"+Inf"`}, {math.Inf(-1), `"-Inf"`}} {
		v := c.v
		d := new(jobgraph.DoubleCounter)
		d.Add(v)
		s := jobgraph.SerializeAccumulator(d)
		require.Nil(t, s.Failure)
		assert.Equal(t, c.json, string(s.Value))
		back, err := s.Accumulator()
		require.NoError(t, err)
		got := back.(*jobgraph.DoubleCounter).Value()
		if math.IsNaN(v) {
			assert.True(t, math.IsNaN(got))
		} else {
			assert.Equal(t, v, got)
		}
	}
}

func TestSerializedAccumulatorFailures(t *testing.T) {
	s := jobgraph.SerializeAccumulator(new(failing))
	assert.Equal(t, jobgraph.SerializedAccumulator{Kind: "test.Failing",
		Failure: &jobgraph.ErrorInfo{Message: "encoding the test.Failing: json: error calling MarshalJSON for type *jobgraph_test.failing: cannot encode"}}, s)
	_, err := s.Accumulator()
	assert.EqualError(t, err, s.Failure.Message)

	_, err = jobgraph.SerializedAccumulator{Kind: "nope", Value: json.RawMessage(`1`)}.Accumulator()
	require.ErrorIs(t, err, jobgraph.ErrUnknownAccumulatorKind)
	assert.EqualError(t, err, `accumulator kind not registered: "nope" (register it with jobgraph.RegisterAccumulator)`)

	_, err = jobgraph.SerializedAccumulator{Kind: "IntCounter", Value: json.RawMessage(`"x"`)}.Accumulator()
	assert.EqualError(t, err, "decoding the IntCounter: json: cannot unmarshal string into Go value of type int64")
}

func TestRegisterAccumulatorRejectsBadFactories(t *testing.T) {
	for _, c := range []struct {
		newAcc func() jobgraph.Accumulator
		err    string
	}{
		{nil, "jobgraph: RegisterAccumulator: nil factory"},
		{func() jobgraph.Accumulator { return nil }, "jobgraph: RegisterAccumulator: the factory returned nil"},
		{func() jobgraph.Accumulator { return new(emptyKind) }, "jobgraph: RegisterAccumulator: *jobgraph_test.emptyKind has an empty Kind"},
		{func() jobgraph.Accumulator { return new(maxInt) }, `jobgraph: RegisterAccumulator: kind "test.MaxInt" (*jobgraph_test.maxInt) is already registered`},
		{func() jobgraph.Accumulator { return new(jobgraph.IntCounter) }, `jobgraph: RegisterAccumulator: kind "IntCounter" (*jobgraph.IntCounter) is already registered`},
	} {
		assert.EqualError(t, jobgraph.RegisterAccumulator(c.newAcc), c.err)
	}
	assert.False(t, jobgraph.IsAccumulatorKindRegistered(""))
	assert.True(t, jobgraph.IsAccumulatorKindRegistered("test.MaxInt"))
}

type emptyKind struct{ jobgraph.IntCounter }

func (*emptyKind) Kind() string { return "" }

// mismatchFailure is the failure of an IntCounter name that a LongCounter used too.
var mismatchFailure = &jobgraph.ErrorInfo{
	Message: "two types under one name: IntCounter and LongCounter",
	Codes:   []string{"jobgraph.accumulator-type-mismatch"},
}

func ints(vs ...int) map[string]jobgraph.SerializedAccumulator {
	out := map[string]jobgraph.SerializedAccumulator{}
	for i, v := range vs {
		c := new(jobgraph.IntCounter)
		c.Add(v)
		out[fmt.Sprintf("c%d", i)] = jobgraph.SerializeAccumulator(c)
	}
	return out
}

func TestMergeAccumulatorsMergesPerName(t *testing.T) {
	assert.Nil(t, jobgraph.MergeAccumulators())
	assert.Nil(t, jobgraph.MergeAccumulators(nil, map[string]jobgraph.SerializedAccumulator{}))

	list := func(vs ...string) jobgraph.SerializedAccumulator {
		l := new(jobgraph.ListAccumulator[string])
		for _, v := range vs {
			l.Add(v)
		}
		return jobgraph.SerializeAccumulator(l)
	}
	a := ints(1, 2)
	a["names"] = list("a", "b")
	b := ints(10)
	b["names"] = list("c")
	c := ints(100, 200, 300)
	got := jobgraph.MergeAccumulators(a, b, c)
	assert.Equal(t, map[string]jobgraph.SerializedAccumulator{
		"c0":    {Kind: "IntCounter", Value: json.RawMessage(`111`)},
		"c1":    {Kind: "IntCounter", Value: json.RawMessage(`202`)},
		"c2":    {Kind: "IntCounter", Value: json.RawMessage(`300`)},
		"names": {Kind: "ListAccumulator", Value: json.RawMessage(`["a","b","c"]`)},
	}, got)
	n, err := jobgraph.AccumulatorValue[int](got, "c0")
	require.NoError(t, err)
	assert.Equal(t, 111, n)
	names, err := jobgraph.AccumulatorValue[[]string](got, "names")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, names)
}

// One name with two types fails alone, with a clear text; the other names merge on.
func TestMergeAccumulatorsTypeMismatchFailsThatNameOnly(t *testing.T) {
	lc := new(jobgraph.LongCounter)
	lc.Add(5)
	second := ints(2)
	second["c0"] = jobgraph.SerializeAccumulator(lc)
	second["ok"] = ints(7)["c0"]
	first := ints(1)
	first["ok"] = ints(3)["c0"]
	third := ints(4) // after the failure, later snapshots of the name are skipped

	got := jobgraph.MergeAccumulators(first, second, third)
	assert.Equal(t, map[string]jobgraph.SerializedAccumulator{
		"c0": {Kind: "IntCounter", Failure: mismatchFailure},
		"ok": {Kind: "IntCounter", Value: json.RawMessage(`10`)},
	}, got)
	_, err := jobgraph.AccumulatorValue[int](got, "c0")
	assert.EqualError(t, err, `accumulator "c0": two types under one name: IntCounter and LongCounter`)
	assert.ErrorIs(t, err, jobgraph.ErrAccumulatorTypeMismatch, "the sentinel travels as a code")
	ok, err := jobgraph.AccumulatorValue[int](got, "ok")
	require.NoError(t, err)
	assert.Equal(t, 10, ok)

	// A kind this process has no factory for fails the name.
	failed := jobgraph.MergeAccumulators(
		map[string]jobgraph.SerializedAccumulator{"x": {Kind: "nope", Value: json.RawMessage(`1`)}},
		map[string]jobgraph.SerializedAccumulator{"x": ints(1)["c0"]},
	)
	assert.Equal(t, map[string]jobgraph.SerializedAccumulator{
		"x": {Kind: "nope", Failure: &jobgraph.ErrorInfo{
			Message: `accumulator kind not registered: "nope" (register it with jobgraph.RegisterAccumulator)`,
			Codes:   []string{"jobgraph.unknown-accumulator-kind"}}},
	}, failed)
	assert.ErrorIs(t, failed["x"].Err(), jobgraph.ErrUnknownAccumulatorKind)

	// A snapshot that failed in its task fails the name with its own failure.
	boom := &jobgraph.ErrorInfo{Message: "encoding the IntCounter: boom"}
	failed = jobgraph.MergeAccumulators(ints(1), map[string]jobgraph.SerializedAccumulator{"c0": {Kind: "IntCounter", Failure: boom}})
	assert.Equal(t, map[string]jobgraph.SerializedAccumulator{"c0": {Kind: "IntCounter", Failure: boom}}, failed)
}

func TestMergeAccumulatorsOfAHostDefinedKind(t *testing.T) {
	snap := func(vs ...int) map[string]jobgraph.SerializedAccumulator {
		m := new(maxInt)
		for _, v := range vs {
			m.Add(v)
		}
		return map[string]jobgraph.SerializedAccumulator{"max": jobgraph.SerializeAccumulator(m)}
	}
	got := jobgraph.MergeAccumulators(snap(3, 1), snap(), snap(8, 2))
	assert.Equal(t, map[string]jobgraph.SerializedAccumulator{"max": {Kind: "test.MaxInt", Value: json.RawMessage(`8`)}}, got)
}

func TestAccumulatorValueErrors(t *testing.T) {
	accs := ints(1, 2)
	_, err := jobgraph.AccumulatorValue[int](accs, "missing")
	require.ErrorIs(t, err, jobgraph.ErrAccumulatorNotFound)
	assert.EqualError(t, err, `accumulator "missing": accumulator not found (the job has: "c0", "c1")`)
	_, err = jobgraph.AccumulatorValue[int](nil, "missing")
	assert.EqualError(t, err, `accumulator "missing": accumulator not found (the job has: none)`)
	_, err = jobgraph.AccumulatorValue[string](accs, "c0")
	assert.EqualError(t, err, `accumulator "c0": decoding the IntCounter into *string: json: cannot unmarshal number into Go value of type string`)
}

func TestJobResultWithAccumulatorsJSONRoundTrip(t *testing.T) {
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	h := new(jobgraph.Histogram)
	h.Add(4)
	r := jobgraph.JobResult{
		JobID: jid(1), Name: "job", Status: jobgraph.JobStatusFinished, NetRuntime: time.Second,
		ExceptionHistory: []jobgraph.ExceptionHistoryEntry{{Message: "boom", Timestamp: at, Subtask: -1}},
		Accumulators: map[string]jobgraph.SerializedAccumulator{
			"words":  {Kind: "LongCounter", Value: json.RawMessage(`12345678901234`)},
			"len":    jobgraph.SerializeAccumulator(h),
			"broken": {Kind: "IntCounter", Failure: mismatchFailure},
		},
	}
	data, err := json.Marshal(r)
	require.NoError(t, err)
	assert.Equal(t, `{"jobId":"00000000000000000000000000000001","name":"job","status":"FINISHED","netRuntime":1000000000,`+
		`"exceptionHistory":[{"message":"boom","timestamp":"2024-05-01T12:00:00Z","subtask":-1}],`+
		`"accumulators":{"broken":{"kind":"IntCounter","failure":{"message":"two types under one name: IntCounter and LongCounter","codes":["jobgraph.accumulator-type-mismatch"]}},`+
		`"len":{"kind":"Histogram","value":{"4":1}},"words":{"kind":"LongCounter","value":12345678901234}}}`, string(data))
	var back jobgraph.JobResult
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, r, back)
	_, err = jobgraph.AccumulatorValue[int](back.Accumulators, "broken")
	assert.ErrorIs(t, err, jobgraph.ErrAccumulatorTypeMismatch, "after the round trip too")
	words, err := jobgraph.AccumulatorValue[int64](back.Accumulators, "words")
	require.NoError(t, err)
	assert.Equal(t, int64(12345678901234), words)
	hist, err := jobgraph.AccumulatorValue[map[int]int](back.Accumulators, "len")
	require.NoError(t, err)
	assert.Equal(t, map[int]int{4: 1}, hist)
}

func TestCloneAccumulatorsSharesNothing(t *testing.T) {
	assert.Nil(t, jobgraph.CloneAccumulators(nil))
	orig := ints(12)
	c := jobgraph.CloneAccumulators(orig)
	assert.Equal(t, orig, c)
	c["c0"].Value[0] = '9'
	assert.Equal(t, "12", string(orig["c0"].Value))
}

// The task adds while its TaskExecutor encodes snapshots (run with -race).
func TestAccumulatorsAreSafeForConcurrentUse(t *testing.T) {
	ic, dc, h, l := new(jobgraph.IntCounter), new(jobgraph.DoubleCounter), new(jobgraph.Histogram), new(jobgraph.ListAccumulator[int])
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 250 {
				ic.Add(1)
				dc.Add(1)
				h.Add(i % 2)
				l.Add(i)
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			for _, a := range []jobgraph.Accumulator{ic, dc, h, l} {
				_ = jobgraph.SerializeAccumulator(a)
			}
		}
	})
	wg.Wait()
	assert.Equal(t, 1000, ic.Value())
	assert.Equal(t, 1000.0, dc.Value())
	assert.Equal(t, map[int]int{0: 500, 1: 500}, h.Value())
	assert.Len(t, l.Value(), 1000)
}

// panicky is a host kind whose Merge and UnmarshalJSON panic on a value of 13.
type panicky struct{ jobgraph.IntCounter }

func (p *panicky) Kind() string { return "test.Panicky" }
func (p *panicky) Merge(other jobgraph.Accumulator) error {
	if o, ok := other.(*panicky); ok && o.Value() == 13 {
		panic("unlucky merge")
	}
	return p.IntCounter.Merge(&other.(*panicky).IntCounter)
}
func (p *panicky) UnmarshalJSON(data []byte) error {
	if string(data) == "666" {
		panic("unlucky value")
	}
	return p.IntCounter.UnmarshalJSON(data)
}

func init() {
	if err := jobgraph.RegisterAccumulator(func() jobgraph.Accumulator { return new(panicky) }); err != nil {
		panic(err)
	}
}

// The JobMaster merges on its main loop what TaskExecutors sent: a host kind that panics fails
// its name, and nothing else.
func TestMergeAccumulatorsRecoversHostPanics(t *testing.T) {
	snap := func(v string) map[string]jobgraph.SerializedAccumulator {
		return map[string]jobgraph.SerializedAccumulator{"p": {Kind: "test.Panicky", Value: json.RawMessage(v)}, "ok": ints(1)["c0"]}
	}
	got := jobgraph.MergeAccumulators(snap(`1`), snap(`13`))
	assert.Equal(t, &jobgraph.ErrorInfo{Message: "merging the test.Panicky panicked: unlucky merge"}, got["p"].Failure)
	assert.Equal(t, `2`, string(got["ok"].Value))
	got = jobgraph.MergeAccumulators(snap(`1`), snap(`666`))
	assert.Equal(t, &jobgraph.ErrorInfo{Message: "decoding the test.Panicky panicked: unlucky value"}, got["p"].Failure)
}

// Whatever a TaskExecutor sends, merging never panics, and each name has a value or a failure.
func FuzzMergeAccumulators(f *testing.F) {
	for _, kind := range []string{"IntCounter", "LongCounter", "DoubleCounter", "Histogram", "ListAccumulator", "test.MaxInt", "nope"} {
		for _, v := range []string{`1`, `-3`, `1.5`, `"NaN"`, `{"3":2}`, `["a",1]`, `null`, ``, `{`, `99999999999999999999`} {
			f.Add(kind, []byte(v), kind, []byte(`2`))
		}
	}
	f.Fuzz(func(t *testing.T, kind1 string, v1 []byte, kind2 string, v2 []byte) {
		got := jobgraph.MergeAccumulators(
			map[string]jobgraph.SerializedAccumulator{"x": {Kind: kind1, Value: v1}},
			map[string]jobgraph.SerializedAccumulator{"x": {Kind: kind2, Value: v2}},
		)
		s, ok := got["x"]
		require.True(t, ok)
		if s.Failure == nil {
			require.True(t, json.Valid(s.Value), "%q", s.Value)
		} else {
			require.Nil(t, s.Value)
		}
	})
}
