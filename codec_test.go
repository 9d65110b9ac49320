package jobgraph_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

func TestRichGraphCoversEverything(t *testing.T) {
	// Guard for the round-trip tests below: the rich graph really has every result type, both
	// patterns, several inputs and outputs.
	g := richGraph()
	types := map[jobgraph.ResultPartitionType]bool{}
	patterns := map[jobgraph.DistributionPattern]bool{}
	maxIn, maxOut := 0, 0
	for _, v := range g.Vertices {
		for _, ds := range v.Results {
			types[ds.ResultType] = true
		}
		for _, e := range v.Inputs {
			patterns[e.DistributionPattern] = true
		}
		maxIn, maxOut = max(maxIn, len(v.Inputs)), max(maxOut, len(v.Results))
	}
	assert.Len(t, types, 7)
	assert.Len(t, patterns, 2)
	assert.GreaterOrEqual(t, maxIn, 2)
	assert.GreaterOrEqual(t, maxOut, 2)
	require.NoError(t, g.Validate())
}

func TestJSONRoundTrip(t *testing.T) {
	g := richGraph()
	data, err := json.Marshal(g)
	require.NoError(t, err)

	back, err := jobgraph.Decode(data)
	require.NoError(t, err)
	require.Equal(t, g, back)
	require.NoError(t, back.Validate())

	again, err := json.Marshal(back)
	require.NoError(t, err)
	require.Equal(t, string(data), string(again), "encoding a decoded graph gives the same bytes")

	// A builder-made graph with random IDs round-trips too.
	b := jobgraph.New("built", jobgraph.Batch)
	s := b.AddVertex("s", "src", 3)
	c := b.AddVertex("c", "cnt", 2)
	b.Connect(s, c, jobgraph.AllToAll, jobgraph.Blocking).ShipStrategy = "HASH"
	data, err = json.Marshal(b)
	require.NoError(t, err)
	back, err = jobgraph.Decode(data)
	require.NoError(t, err)
	require.Equal(t, b, back)

	// Indented JSON with surrounding whitespace decodes to the same graph.
	data, err = json.MarshalIndent(g, "", "  ")
	require.NoError(t, err)
	back, err = jobgraph.Decode([]byte("\n\t " + string(data) + " \r\n"))
	require.NoError(t, err)
	require.Equal(t, g, back)
}

func TestJSONForm(t *testing.T) {
	// The exact form HA stores persist.
	g := &jobgraph.JobGraph{
		JobID: jid(1), Name: "wc", Type: jobgraph.Batch,
		Vertices: []*jobgraph.JobVertex{
			{ID: vid(2), Name: "src", Parallelism: 2, Invokable: "read", Config: []byte("hi"),
				Results: []*jobgraph.IntermediateDataSet{{ID: dsid(3), ResultType: jobgraph.Blocking}}},
			{ID: vid(4), Name: "cnt", Parallelism: 2, MaxParallelism: 16, Invokable: "count",
				Resources:        jobgraph.ResourceProfile{CPUCores: 0.5},
				SlotSharingGroup: "ssg",
				Inputs:           []*jobgraph.JobEdge{{Source: dsid(3), Target: vid(4), DistributionPattern: jobgraph.AllToAll, ShipStrategy: "HASH"}}},
		},
		Checkpointing:    jobgraph.CheckpointingSettings{Interval: time.Second},
		SavepointRestore: jobgraph.SavepointRestoreSettings{Path: "/sp", RestoreMode: jobgraph.Claim},
		RestartStrategy:  jobgraph.FixedDelayRestart(3, 10*time.Millisecond),
		FailoverStrategy: jobgraph.FailoverRegion,
	}
	const want = `{"jobId":"00000000000000000000000000000001","name":"wc","type":"BATCH","vertices":[` +
		`{"id":"00000000000000000000000000000002","name":"src","parallelism":2,"invokable":"read","config":"aGk=",` +
		`"results":[{"id":"00000000000000000000000000000003","resultType":"BLOCKING"}]},` +
		`{"id":"00000000000000000000000000000004","name":"cnt","parallelism":2,"maxParallelism":16,"invokable":"count",` +
		`"resources":{"cpuCores":0.5},"slotSharingGroup":"ssg",` +
		`"inputs":[{"source":"00000000000000000000000000000003","target":"00000000000000000000000000000004","distributionPattern":"ALL_TO_ALL","shipStrategy":"HASH"}]}],` +
		`"checkpointing":{"interval":1000000000},"savepointRestore":{"path":"/sp","restoreMode":"CLAIM"},` +
		`"restartStrategy":{"type":"fixed-delay","fixedDelayAttempts":3,"fixedDelay":10000000},"failoverStrategy":"region"}`
	data, err := json.Marshal(g)
	require.NoError(t, err)
	assert.Equal(t, want, string(data))

	// Zero settings are left out entirely.
	minimal := &jobgraph.JobGraph{JobID: jid(1), Vertices: []*jobgraph.JobVertex{{ID: vid(2), Parallelism: 1, Invokable: "x"}}}
	data, err = json.Marshal(minimal)
	require.NoError(t, err)
	assert.Equal(t, `{"jobId":"00000000000000000000000000000001","name":"","type":"STREAMING","vertices":[`+
		`{"id":"00000000000000000000000000000002","name":"","parallelism":1,"invokable":"x"}]}`, string(data))
}

func TestDecodeErrors(t *testing.T) {
	valid, err := json.Marshal(richGraph())
	require.NoError(t, err)
	replace := func(old, new string) string {
		t.Helper()
		require.Contains(t, string(valid), old)
		return strings.Replace(string(valid), old, new, 1)
	}

	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty input", ``, "jobgraph: decode: EOF"},
		{"not JSON", `jobgraph`, "jobgraph: decode: invalid character"},
		{"truncated", string(valid[:len(valid)/2]), "jobgraph: decode: unexpected EOF"},
		{"array", `[]`, "jobgraph: decode: json: cannot unmarshal array"},
		{"unknown top-level field", `{"jobId":"00000000000000000000000000000001","bogus":1}`, `jobgraph: decode: json: unknown field "bogus"`},
		{"unknown vertex field", replace(`"parallelism":4,`, `"parallelism":4,"slots":3,`), `unknown field "slots"`},
		{"unknown edge field", replace(`"shipStrategy":"REBALANCE"`, `"shipStrategy":"REBALANCE","weight":1`), `unknown field "weight"`},
		{"trailing object", string(valid) + ` {}`, "jobgraph: decode: trailing data after the job graph"},
		{"trailing number", string(valid) + "\n1", "jobgraph: decode: trailing data after the job graph"},
		{"trailing brace", string(valid) + `}`, "jobgraph: decode: trailing data after the job graph"},
		{"trailing bracket", string(valid) + ` ]`, "jobgraph: decode: trailing data after the job graph"},
		{"trailing garbage", string(valid) + `x`, "jobgraph: decode: trailing data after the job graph"},
		{"bad job ID", replace(`"jobId":"00000000000000000000000000000001"`, `"jobId":"xyz"`),
			`jobgraph: JobID "xyz": want 32 hexadecimal characters, got 3 characters`},
		{"job ID not hex", replace(`"jobId":"00000000000000000000000000000001"`, `"jobId":"0000000000000000000000000000000g"`),
			`jobgraph: JobID "0000000000000000000000000000000g": not hexadecimal`},
		{"job ID a number", replace(`"jobId":"00000000000000000000000000000001"`, `"jobId":1`), "cannot unmarshal number"},
		{"bad vertex ID", replace(`"id":"0000000000000000000000000000000a"`, `"id":"0a"`), `jobgraph: JobVertexID "0a"`},
		{"bad data set ID", replace(`"source":"00000000000000000000000000000001"`, `"source":"1"`), `jobgraph: IntermediateDataSetID "1"`},
		{"unknown distribution pattern", replace(`"ALL_TO_ALL"`, `"ALL_TO_SOME"`),
			`jobgraph: unknown DistributionPattern "ALL_TO_SOME" (want one of [ALL_TO_ALL POINTWISE])`},
		{"unknown result type", replace(`"BLOCKING"`, `"BLOCKED"`), `jobgraph: unknown ResultPartitionType "BLOCKED"`},
		{"unknown job type", replace(`"STREAMING"`, `"MICRO_BATCH"`), `jobgraph: unknown JobType "MICRO_BATCH"`},
		{"lower-case enum name", replace(`"STREAMING"`, `"streaming"`), `jobgraph: unknown JobType "streaming"`},
		{"unknown restore mode", replace(`"CLAIM"`, `"RECLAIM"`), `jobgraph: unknown RestoreMode "RECLAIM"`},
		{"enum as a number", replace(`"STREAMING"`, `0`), "cannot unmarshal number"},
		{"config not base64", replace(`"config":"AAEC/w=="`, `"config":"!!"`), "illegal base64"},
		{"parallelism a string", replace(`"parallelism":4,`, `"parallelism":"4",`), "cannot unmarshal string"},
		{"duration with a unit", replace(`"interval":10000000000`, `"interval":"10s"`), "cannot unmarshal string"},
		{"null vertex", `{"vertices":[null]}`, "jobgraph: decode: invalid job graph: nil-entry: vertex #0 is nil"},
		{"null vertex after a good one", replace(`"vertices":[`, `"vertices":[{"id":"000000000000000000000000000000ff","name":"x","parallelism":1,"invokable":"x"},null,`),
			"vertex #1 is nil"},
		{"null input", replace(`"inputs":[`, `"inputs":[null,`), `input #0 is nil`},
		{"null result", replace(`"results":[`, `"results":[null,`), `result #0 is nil`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g *jobgraph.JobGraph
			require.NotPanics(t, func() { g, err = jobgraph.Decode([]byte(tc.in)) })
			require.Error(t, err)
			assert.Nil(t, g)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), "jobgraph: decode: "), err.Error())
		})
	}

	// A nil entry is reported as a *ValidationError through the decode error.
	_, err = jobgraph.Decode([]byte(`{"vertices":[null]}`))
	var ve *jobgraph.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, jobgraph.RuleNilEntry, ve.Rule)
	assert.True(t, errors.Is(err, jobgraph.ErrInvalidJobGraph))

	// Decode does not validate: a structurally fine but invalid graph decodes, and Validate says why.
	g, err := jobgraph.Decode([]byte(`{"vertices":[{"id":"00000000000000000000000000000001","parallelism":0,"invokable":"x"}],"jobId":"00000000000000000000000000000002"}`))
	require.NoError(t, err)
	requireValidationError(t, g.Validate(), jobgraph.RuleParallelism)
	g, err = jobgraph.Decode([]byte(`{}`))
	require.NoError(t, err)
	requireValidationError(t, g.Validate(), jobgraph.RuleEmptyGraph)
}

func TestClone(t *testing.T) {
	g := richGraph()
	c, err := g.Clone()
	require.NoError(t, err)
	require.Equal(t, g, c)
	require.NotSame(t, g, c)

	// Mutate every level of the clone; the original must not move.
	c.Name = "changed"
	c.JobID = jid(99)
	c.Checkpointing.Interval = time.Hour
	c.RestartStrategy = jobgraph.NoRestart()
	c.Vertices[0].Name = "changed"
	c.Vertices[0].Config[0] = 42
	c.Vertices[0].Resources.CPUCores = 64
	c.Vertices[0].Results[0].ResultType = jobgraph.HybridFull
	c.Vertices[0].Results[0].RecordCodec = "changed"
	c.Vertices[0].Results = append(c.Vertices[0].Results, &jobgraph.IntermediateDataSet{ID: dsid(50)})
	c.Vertices[1].Inputs[0].ShipStrategy = "changed"
	c.Vertices[1].Inputs[0].Source = dsid(60)
	c.Vertices[3].Inputs = c.Vertices[3].Inputs[:1]
	c.Vertices = append(c.Vertices, &jobgraph.JobVertex{ID: vid(70), Parallelism: 1, Invokable: "x"})
	c.Vertices[2] = nil

	require.Equal(t, richGraph(), g)
	require.NoError(t, g.Validate())

	// An append to one cloned vertex's slices never writes into another's.
	c2, err := g.Clone()
	require.NoError(t, err)
	c2.Vertices[0].Results = append(c2.Vertices[0].Results, &jobgraph.IntermediateDataSet{ID: dsid(51)})
	c2.Vertices[1].Inputs = append(c2.Vertices[1].Inputs, edge(dsid(52), vid(11), jobgraph.Pointwise, ""))
	c2.Vertices[0].Config = append(c2.Vertices[0].Config, 7)
	want := richGraph()
	want.Vertices[0].Results = append(want.Vertices[0].Results, &jobgraph.IntermediateDataSet{ID: dsid(51)})
	want.Vertices[1].Inputs = append(want.Vertices[1].Inputs, edge(dsid(52), vid(11), jobgraph.Pointwise, ""))
	want.Vertices[0].Config = append(want.Vertices[0].Config, 7)
	require.Equal(t, want, c2)

	// A graph that cannot be encoded cannot be cloned.
	bad := richGraph()
	bad.Vertices[0].Results[0].ResultType = jobgraph.ResultPartitionType(99)
	_, err = bad.Clone()
	require.Error(t, err)
	// A record codec name that is not UTF-8 is copied through JSON, which replaces it.
	bad = richGraph()
	bad.Vertices[0].Results[0].RecordCodec = "\xff"
	c3, err := bad.Clone()
	require.NoError(t, err)
	assert.Equal(t, "\ufffd", c3.Vertices[0].Results[0].RecordCodec)
	// Nor can one with a nil entry.
	bad = richGraph()
	bad.Vertices = append(bad.Vertices, nil)
	_, err = bad.Clone()
	require.Error(t, err)
}

// Clone gives exactly what Decode gives for the graph's JSON form, errors included, for the
// graphs it copies field by field and for those it sends through JSON.
func TestCloneIsTheJSONRoundTrip(t *testing.T) {
	roundTrip := func(g *jobgraph.JobGraph) (*jobgraph.JobGraph, error) {
		data, err := json.Marshal(g)
		if err != nil {
			return nil, err
		}
		return jobgraph.Decode(data)
	}
	negZero := math.Copysign(0, -1)
	cases := map[string]func(g *jobgraph.JobGraph){
		"rich":           func(g *jobgraph.JobGraph) {},
		"nil vertices":   func(g *jobgraph.JobGraph) { g.Vertices = nil },
		"empty vertices": func(g *jobgraph.JobGraph) { g.Vertices = []*jobgraph.JobVertex{} },
		"empty config, inputs and results": func(g *jobgraph.JobGraph) {
			g.Vertices[0].Config = []byte{}
			g.Vertices[1].Inputs = []*jobgraph.JobEdge{}
			g.Vertices[1].Results = []*jobgraph.IntermediateDataSet{}
		},
		"negative zero floats": func(g *jobgraph.JobGraph) {
			g.Vertices[0].Resources.CPUCores = negZero
			g.RestartStrategy.ExponentialDelayBackoffMultiplier = negZero
			g.RestartStrategy.ExponentialDelayJitterFactor = negZero
		},
		"empty coordinator config":    func(g *jobgraph.JobGraph) { g.Vertices[0].OperatorCoordinatorConfig = []byte{} },
		"invalid UTF-8 coordinator":   func(g *jobgraph.JobGraph) { g.Vertices[1].OperatorCoordinator = "enum\xff" },
		"invalid UTF-8 name":          func(g *jobgraph.JobGraph) { g.Vertices[2].Name = "bad\xffname" },
		"invalid UTF-8 job name":      func(g *jobgraph.JobGraph) { g.Name = "\xfe" },
		"invalid UTF-8 ship strategy": func(g *jobgraph.JobGraph) { g.Vertices[3].Inputs[1].ShipStrategy = "\xc0" },
		"invalid UTF-8 savepoint":     func(g *jobgraph.JobGraph) { g.SavepointRestore.Path = "\xff/sp" },
		"NaN cores":                   func(g *jobgraph.JobGraph) { g.Vertices[1].Resources.CPUCores = math.NaN() },
		"infinite multiplier":         func(g *jobgraph.JobGraph) { g.RestartStrategy.ExponentialDelayBackoffMultiplier = math.Inf(1) },
		"invalid job type":            func(g *jobgraph.JobGraph) { g.Type = jobgraph.JobType(9) },
		"invalid restore mode":        func(g *jobgraph.JobGraph) { g.SavepointRestore.RestoreMode = jobgraph.RestoreMode(9) },
		"invalid pattern": func(g *jobgraph.JobGraph) {
			g.Vertices[1].Inputs[0].DistributionPattern = jobgraph.DistributionPattern(9)
		},
		"nil edge":     func(g *jobgraph.JobGraph) { g.Vertices[1].Inputs[0] = nil },
		"nil data set": func(g *jobgraph.JobGraph) { g.Vertices[0].Results[1] = nil },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			g := richGraph()
			change(g)
			want, wantErr := roundTrip(g)
			got, err := g.Clone()
			if wantErr != nil {
				require.Error(t, err)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, want, got)
			for i, v := range got.Vertices {
				assert.Equal(t, math.Signbit(want.Vertices[i].Resources.CPUCores), math.Signbit(v.Resources.CPUCores), "vertex %d", i)
			}
			assert.Equal(t, math.Signbit(want.RestartStrategy.ExponentialDelayBackoffMultiplier), math.Signbit(got.RestartStrategy.ExponentialDelayBackoffMultiplier))
			assert.Equal(t, math.Signbit(want.RestartStrategy.ExponentialDelayJitterFactor), math.Signbit(got.RestartStrategy.ExponentialDelayJitterFactor))
		})
	}
}

// Clone copies a graph whose values all encode without JSON: one allocation for the graph, and
// one per kind of object (vertices, edges, data sets, the three pointer slices, config bytes).
func TestCloneOfAPlainGraphAllocatesPerKindNotPerObject(t *testing.T) {
	g := richGraph()
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := g.Clone(); err != nil {
			t.Fatal(err)
		}
	})
	assert.Equal(t, 8.0, allocs)
}

// copyPlain (Clone's copy without JSON) copies structs by value and deep-copies the fields listed
// here; it checks the strings and floats listed here before it copies. A field of a kind that
// needs either (a string, a float, a slice, a map, a pointer, an interface) added to any type of
// the graph fails this test until copyPlain handles it and the list says so.
func TestCloneCopiesEveryField(t *testing.T) {
	handled := []string{
		"JobGraph.Name string", "JobGraph.Vertices slice",
		"JobGraph.SavepointRestore.Path string", "JobGraph.RestartStrategy.Type string",
		"JobGraph.RestartStrategy.ExponentialDelayBackoffMultiplier float64",
		"JobGraph.RestartStrategy.ExponentialDelayJitterFactor float64", "JobGraph.FailoverStrategy string",
		"JobGraph.ParallelismOverrides map",
		"JobVertex.Name string", "JobVertex.Invokable string", "JobVertex.Config slice",
		"JobVertex.OperatorCoordinator string", "JobVertex.OperatorCoordinatorConfig slice",
		"JobVertex.Resources.CPUCores float64", "JobVertex.SlotSharingGroup string",
		"JobVertex.CoLocationGroup string", "JobVertex.Inputs slice", "JobVertex.Results slice",
		"JobEdge.ShipStrategy string", "IntermediateDataSet.RecordCodec string",
	}
	var found []string
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name := prefix + "." + f.Name
			switch k := f.Type.Kind(); k {
			case reflect.Struct:
				walk(name, f.Type)
			case reflect.String, reflect.Float32, reflect.Float64, reflect.Slice, reflect.Map, reflect.Pointer,
				reflect.Interface, reflect.Array, reflect.Chan, reflect.Func, reflect.Complex64, reflect.Complex128:
				if k == reflect.Array && f.Type.Elem().Kind() == reflect.Uint8 {
					continue // the IDs: [16]byte, copied by value
				}
				found = append(found, name+" "+k.String())
			}
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[jobgraph.JobGraph](), reflect.TypeFor[jobgraph.JobVertex](),
		reflect.TypeFor[jobgraph.JobEdge](), reflect.TypeFor[jobgraph.IntermediateDataSet]()} {
		walk(typ.Name(), typ)
	}
	assert.ElementsMatch(t, handled, found)
}

// Decode refuses a key given twice in any object, naming the key and the object's path;
// encoding/json alone would keep the last value silently. Keys match fields case-insensitively,
// so "name" and "Name" are the same key.
func TestDecodeRejectsDuplicateKeys(t *testing.T) {
	valid, err := json.Marshal(richGraph())
	require.NoError(t, err)
	replace := func(old, new string) string {
		t.Helper()
		require.Contains(t, string(valid), old)
		return strings.Replace(string(valid), old, new, 1)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"top level", `{"jobId":"00000000000000000000000000000001","name":"a","name":"b"}`,
			`jobgraph: decode: duplicate key "name" in $`},
		{"top level, case folded", `{"name":"a","jobId":"00000000000000000000000000000001","NAME":"b"}`,
			`jobgraph: decode: duplicate key "NAME" in $`},
		{"vertex", replace(`"parallelism":4,`, `"parallelism":4,"parallelism":1,`),
			`jobgraph: decode: duplicate key "parallelism" in $.vertices[0]`},
		{"edge of the second vertex", replace(`"shipStrategy":"REBALANCE"`, `"shipStrategy":"REBALANCE","Target":"00000000000000000000000000000001"`),
			`jobgraph: decode: duplicate key "Target" in $.vertices[1].inputs[0]`},
		{"data set", replace(`"resultType":"PIPELINED_BOUNDED"`, `"resultType":"PIPELINED_BOUNDED","id":"00000000000000000000000000000063"`),
			`jobgraph: decode: duplicate key "id" in $.vertices[0].results[0]`},
		{"resources", replace(`"cpuCores":`, `"cpuCores":1,"cpuCores":`), `jobgraph: decode: duplicate key "cpuCores" in $.vertices[0].resources`},
		{"checkpointing", replace(`"interval":10000000000`, `"interval":10000000000,"interval":1`),
			`jobgraph: decode: duplicate key "interval" in $.checkpointing`},
		{"the vertices array twice", `{"vertices":[],"vertices":[]}`, `jobgraph: decode: duplicate key "vertices" in $`},
		{"escaped key", `{"n\u0061me":"a","name":"b"}`, `jobgraph: decode: duplicate key "name" in $`},
		{"escaped key, case folded", `{"name":"a","N\u0041ME":"b"}`, `jobgraph: decode: duplicate key "NAME" in $`},
		{"second vertex, spaced out", " {\"vertices\" : [ {\"id\":\"00000000000000000000000000000001\"} ,\n {\"invokable\" : \"a\" , \"Invokable\" : \"b\"} ] } ",
			`jobgraph: decode: duplicate key "Invokable" in $.vertices[1]`},
		{"strings that look like keys", `{"name":"\"name\":","savepointRestore":{"path":"{\"path\":1,"}, "Name":"x"}`,
			`jobgraph: decode: duplicate key "Name" in $`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g *jobgraph.JobGraph
			require.NotPanics(t, func() { g, err = jobgraph.Decode([]byte(tc.in)) })
			assert.Nil(t, g)
			assert.EqualError(t, err, tc.want)
		})
	}
	// The same key in different objects is no duplicate.
	_, err = jobgraph.Decode(valid)
	require.NoError(t, err)
}

// Strings from the input are cut in decode errors: a 1 MB ID or enumeration name gives a short
// message.
func TestDecodeErrorsAreShort(t *testing.T) {
	long := strings.Repeat("z", 1<<20)
	cut := strings.Repeat("z", 64) + "…(1048576 bytes)"
	for _, tc := range []struct{ in, want string }{
		{`{"jobId":"` + long + `"}`, `jobgraph: decode: jobgraph: JobID "` + cut + `": want 32 hexadecimal characters, got 1048576 characters`},
		{`{"type":"` + long + `"}`, `jobgraph: decode: jobgraph: unknown JobType "` + cut + `" (want one of [STREAMING BATCH])`},
	} {
		_, err := jobgraph.Decode([]byte(tc.in))
		assert.EqualError(t, err, tc.want)
	}
	_, err := jobgraph.ParseExecutionAttemptID(long)
	assert.EqualError(t, err, `jobgraph: ExecutionAttemptID "`+cut+`": want <executionGraph>_<vertex>_<subtask>_<attempt>`)
}
