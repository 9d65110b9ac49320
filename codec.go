package jobgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
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
// passes over data.
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

// checkDuplicateKeys walks data, which encoding/json already accepted as one JSON value, and
// reports the first object holding two keys that fold to the same field name, with the path
// of that object.
func checkDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers are skipped, not parsed
	var path []string
	return walkValue(dec, &path)
}

func walkValue(dec *json.Decoder, path *[]string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar
	}
	switch d {
	case '{':
		seen := make(map[string]bool)
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key, ok := tok.(string)
			if !ok {
				return errors.New("object key is not a string")
			}
			fold := foldKey(key)
			if seen[fold] {
				return fmt.Errorf("duplicate key %q in %s", Truncate(key), jsonPath(*path))
			}
			seen[fold] = true
			*path = append(*path, pathKey(key))
			if err := walkValue(dec, path); err != nil {
				return err
			}
			*path = (*path)[:len(*path)-1]
		}
	case '[':
		for i := 0; dec.More(); i++ {
			*path = append(*path, "["+strconv.Itoa(i)+"]")
			if err := walkValue(dec, path); err != nil {
				return err
			}
			*path = (*path)[:len(*path)-1]
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// foldKey maps every key that encoding/json would match to the same struct field (equal under
// Unicode simple case folding, as bytes.EqualFold) to one string: each rune becomes the smallest
// rune of its folding orbit.
func foldKey(s string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, s)
}

func jsonPath(path []string) string { return "$" + strings.Join(path, "") }

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

// Clone returns a deep copy of g, through its JSON form. A nil g gives a *ValidationError with
// RuleNilGraph.
func (g *JobGraph) Clone() (*JobGraph, error) {
	if g == nil {
		return nil, errNilGraph()
	}
	data, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	return Decode(data)
}

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
