package jobgraph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The JSON form of a JobGraph is what encoding/json produces from the struct (json.Marshal(g)):
// IDs as 32 hex characters, enumerations by Flink's names (e.g. "ALL_TO_ALL", "BLOCKING"),
// durations in nanoseconds, the task config in base64. Decode reads it back; encoding a decoded
// graph gives the same bytes. HA stores persist this form.
//
// Absent fields decode as their zero value, and Decode applies no builder default: a vertex
// without "slotSharingGroup" has no slot-sharing group, whereas AddVertex would have put it in
// DefaultSlotSharingGroup (the encoder wrote "default" for such a vertex, so a graph keeps its
// groups across a round trip, and plans persisted before the default existed keep their meaning).

// Decode reads a JobGraph from its JSON form. It refuses unknown fields, trailing data, unknown
// enumeration names, malformed IDs, duplicate keys in any object (encoding/json would keep the
// last silently; keys are compared as encoding/json matches them to fields, case-insensitively)
// and nil vertices, edges or data sets, with an error that says what and where (strings from
// the input through Truncate); it never panics, whatever the input. A duplicate key gives
// `jobgraph: decode: duplicate key "name" in $.vertices[1]`, the path in JSONPath notation.
// A decoded graph is not yet validated: call Validate before running it. Decoding costs two
// passes over data (the second, for duplicate keys, allocates next to nothing).
func Decode(data []byte) (*JobGraph, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var g JobGraph
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("jobgraph: decode: %w", err)
	}
	// Only JSON whitespace may follow. (dec.More would miss a stray '}' or ']'.)
	if len(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")) > 0 {
		return nil, fmt.Errorf("jobgraph: decode: trailing data after the job graph")
	}
	if err := checkDuplicateKeys(data); err != nil {
		return nil, fmt.Errorf("jobgraph: decode: %w", err)
	}
	if err := g.checkNil(); err != nil {
		return nil, fmt.Errorf("jobgraph: decode: %w", err)
	}
	return &g, nil
}

// checkDuplicateKeys scans data, which encoding/json already accepted as one JSON value, and
// reports the first object holding two keys that encoding/json would match to the same field
// (equal under bytes.EqualFold once unescaped), with the JSONPath of that object. It allocates
// only for keys with escapes and for the error: Decode runs on every submission (Clone). Run on
// a document encoding/json rejected it stops early, never reading past the end.
func checkDuplicateKeys(data []byte) error {
	s := keyScanner{data: data}
	return s.value()
}

type keyScanner struct {
	data []byte
	pos  int
	path []pathStep // the steps down to the current value
	keys [][]byte   // the (unescaped) keys of the open objects, innermost last
}

// pathStep is one step of a JSONPath: an object member (key) or an array element (index).
type pathStep struct {
	key   []byte
	index int // -1 for a member
}

func (s *keyScanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

// str reads the string at pos (its opening quote) and returns its contents, unescaped.
func (s *keyScanner) str() []byte {
	start := s.pos + 1
	escaped := false
	i := start
	for ; i < len(s.data) && s.data[i] != '"'; i++ {
		if s.data[i] == '\\' {
			escaped = true
			i++
		}
	}
	raw := s.data[start:i]
	s.pos = i + 1
	if !escaped {
		return raw
	}
	var out string
	if err := json.Unmarshal(s.data[start-1:i+1], &out); err != nil {
		return raw // cannot happen: encoding/json accepted the document
	}
	return []byte(out)
}

func (s *keyScanner) value() error {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return nil
	}
	switch s.data[s.pos] {
	case '{':
		return s.object()
	case '[':
		s.pos++
		for i := 0; ; i++ {
			s.skipSpace()
			if s.pos >= len(s.data) {
				return nil
			}
			if s.data[s.pos] == ']' {
				s.pos++
				return nil
			}
			if s.data[s.pos] == ',' {
				s.pos++
			}
			s.path = append(s.path, pathStep{index: i})
			if err := s.value(); err != nil {
				return err
			}
			s.path = s.path[:len(s.path)-1]
		}
	case '"':
		s.str()
	default: // a number, true, false or null
		for s.pos < len(s.data) && !strings.ContainsRune(",}] \t\r\n", rune(s.data[s.pos])) {
			s.pos++
		}
	}
	return nil
}

func (s *keyScanner) object() error {
	s.pos++ // '{'
	base := len(s.keys)
	defer func() { s.keys = s.keys[:base] }()
	for {
		s.skipSpace()
		if s.pos >= len(s.data) {
			return nil
		}
		switch s.data[s.pos] {
		case '}':
			s.pos++
			return nil
		case ',':
			s.pos++
			s.skipSpace()
		}
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return nil
		}
		key := s.str()
		for _, k := range s.keys[base:] {
			if bytes.EqualFold(k, key) {
				return fmt.Errorf("duplicate key %q in %s", Truncate(string(key)), s.jsonPath())
			}
		}
		s.keys = append(s.keys, key)
		s.skipSpace()
		s.pos++ // ':'
		s.path = append(s.path, pathStep{key: key, index: -1})
		if err := s.value(); err != nil {
			return err
		}
		s.path = s.path[:len(s.path)-1]
	}
}

func (s *keyScanner) jsonPath() string {
	var b strings.Builder
	b.WriteString("$")
	for _, st := range s.path {
		if st.index >= 0 {
			b.WriteString("[" + strconv.Itoa(st.index) + "]")
			continue
		}
		b.WriteString(pathKey(string(st.key)))
	}
	return b.String()
}

// pathKey is key as a JSONPath step: ".key" for an identifier, else `["key"]`. (Decode walks
// only documents whose keys all named fields, so in practice it is always ".key".)
func pathKey(key string) string {
	ident := key != ""
	for i, r := range key {
		if !(r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))) {
			ident = false
			break
		}
	}
	if ident {
		return "." + Truncate(key)
	}
	return "[" + strconv.Quote(Truncate(key)) + "]"
}

// Clone returns a deep copy of g: the graph Decode gives for g's JSON form, with the same errors
// (a nil g gives a *ValidationError with RuleNilGraph; a nil vertex, edge or data set, an
// enumeration value without a name or a NaN or infinite float cannot be encoded). A graph whose
// strings are valid UTF-8 and whose values all encode is copied field by field, without JSON
// (the Dispatcher clones every submission: this costs a few allocations instead of an encode and
// a decode); any other graph goes through JSON, which replaces invalid UTF-8 and reports what
// cannot be encoded. The copy shares no memory with g.
func (g *JobGraph) Clone() (*JobGraph, error) {
	if g == nil {
		return nil, errNilGraph()
	}
	if c, ok := g.copyPlain(); ok {
		return c, nil
	}
	data, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	return Decode(data)
}

// copyPlain copies g field by field and reports true when the copy equals what a JSON round
// trip gives; it reports false, and copies nothing, for a graph the round trip would change or
// refuse. What the round trip does to a plain graph, copyPlain does too: an empty Config,
// OperatorCoordinatorConfig, Inputs or Results becomes nil (omitempty), a negative zero float
// becomes zero (omitempty drops it). Vertices keeps the difference between nil ("null") and empty ("[]").
// TestCloneCopiesEveryField fails when a field is added that needs a line here.
func (g *JobGraph) copyPlain() (*JobGraph, bool) {
	if !plainString(g.Name) || !jobTypes.valid(g.Type) || !plainString(g.SavepointRestore.Path) ||
		!restoreModes.valid(g.SavepointRestore.RestoreMode) || !plainString(string(g.RestartStrategy.Type)) ||
		!plainFloat(g.RestartStrategy.ExponentialDelayBackoffMultiplier) ||
		!plainFloat(g.RestartStrategy.ExponentialDelayJitterFactor) || !plainString(string(g.FailoverStrategy)) {
		return nil, false
	}
	var edges, sets, config int
	for _, v := range g.Vertices {
		if v == nil || !plainString(v.Name) || !plainString(v.Invokable) || !plainString(v.SlotSharingGroup) ||
			!plainString(v.CoLocationGroup) || !plainString(v.OperatorCoordinator) || !plainFloat(v.Resources.CPUCores) {
			return nil, false
		}
		for _, e := range v.Inputs {
			if e == nil || !distributionPatterns.valid(e.DistributionPattern) || !plainString(e.ShipStrategy) {
				return nil, false
			}
		}
		for _, ds := range v.Results {
			if ds == nil || !resultPartitionTypes.valid(ds.ResultType) || !plainString(ds.RecordCodec) {
				return nil, false
			}
		}
		edges, sets, config = edges+len(v.Inputs), sets+len(v.Results), config+len(v.Config)+len(v.OperatorCoordinatorConfig)
	}
	c := *g
	c.ParallelismOverrides = nil
	if len(g.ParallelismOverrides) > 0 {
		c.ParallelismOverrides = maps.Clone(g.ParallelismOverrides)
	}
	c.RestartStrategy.ExponentialDelayBackoffMultiplier = g.RestartStrategy.ExponentialDelayBackoffMultiplier + 0
	c.RestartStrategy.ExponentialDelayJitterFactor = g.RestartStrategy.ExponentialDelayJitterFactor + 0
	if g.Vertices == nil {
		return &c, true
	}
	// One allocation per kind of object; each slice handed out is capped (s[i:j:j]), so an
	// append to one vertex's Inputs can never write into the next vertex's.
	vs := make([]JobVertex, len(g.Vertices))
	c.Vertices = make([]*JobVertex, len(g.Vertices))
	var edgeSlab []JobEdge
	var edgePtrs []*JobEdge
	if edges > 0 {
		edgeSlab, edgePtrs = make([]JobEdge, 0, edges), make([]*JobEdge, 0, edges)
	}
	var setSlab []IntermediateDataSet
	var setPtrs []*IntermediateDataSet
	if sets > 0 {
		setSlab, setPtrs = make([]IntermediateDataSet, 0, sets), make([]*IntermediateDataSet, 0, sets)
	}
	var configSlab []byte
	if config > 0 {
		configSlab = make([]byte, 0, config)
	}
	for i, v := range g.Vertices {
		cv := &vs[i]
		*cv = *v
		cv.Resources.CPUCores = v.Resources.CPUCores + 0 // -0 → 0, as omitempty drops it
		cv.Config, cv.OperatorCoordinatorConfig, cv.Inputs, cv.Results = nil, nil, nil, nil
		if n := len(v.Config); n > 0 {
			start := len(configSlab)
			configSlab = append(configSlab, v.Config...)
			cv.Config = configSlab[start : start+n : start+n]
		}
		if n := len(v.OperatorCoordinatorConfig); n > 0 {
			start := len(configSlab)
			configSlab = append(configSlab, v.OperatorCoordinatorConfig...)
			cv.OperatorCoordinatorConfig = configSlab[start : start+n : start+n]
		}
		if n := len(v.Inputs); n > 0 {
			start := len(edgePtrs)
			for _, e := range v.Inputs {
				edgeSlab = append(edgeSlab, *e)
				edgePtrs = append(edgePtrs, &edgeSlab[len(edgeSlab)-1])
			}
			cv.Inputs = edgePtrs[start : start+n : start+n]
		}
		if n := len(v.Results); n > 0 {
			start := len(setPtrs)
			for _, ds := range v.Results {
				setSlab = append(setSlab, *ds)
				setPtrs = append(setPtrs, &setSlab[len(setSlab)-1])
			}
			cv.Results = setPtrs[start : start+n : start+n]
		}
		c.Vertices[i] = cv
	}
	return &c, true
}

// plainString reports whether s survives a JSON round trip unchanged (encoding/json replaces
// invalid UTF-8).
func plainString(s string) bool { return utf8.ValidString(s) }

// plainFloat reports whether f can be encoded (encoding/json refuses NaN and infinities).
func plainFloat(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// errNilGraph is the error for a nil *JobGraph.
func errNilGraph() error { return &ValidationError{Rule: RuleNilGraph, Detail: "the job graph is nil"} }

// checkNil reports a nil g, or the first nil vertex, edge or data set.
func (g *JobGraph) checkNil() error {
	if g == nil {
		return errNilGraph()
	}
	for i, v := range g.Vertices {
		if v == nil {
			return &ValidationError{Rule: RuleNilEntry, Detail: fmt.Sprintf("vertex #%d is nil", i)}
		}
		for j, e := range v.Inputs {
			if e == nil {
				return &ValidationError{Rule: RuleNilEntry, Vertex: v.ID, VertexName: v.Name, Detail: fmt.Sprintf("input #%d is nil", j)}
			}
		}
		for j, ds := range v.Results {
			if ds == nil {
				return &ValidationError{Rule: RuleNilEntry, Vertex: v.ID, VertexName: v.Name, Detail: fmt.Sprintf("result #%d is nil", j)}
			}
		}
	}
	return nil
}
