package wc

import (
	"unicode"
	"unicode/utf8"
)

// asciiWord[c] reports whether the ASCII byte c is a word character: a letter, a digit or '_'.
// unicode.IsLetter and unicode.IsDigit agree with this on ASCII.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
	}
	return t
}()

// isWordRune is the definition of a word character for any rune.
func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// nextWord returns the bounds of the first word of data at or after i, data[start:end]; start ==
// end == len(data) when there is none. ASCII bytes take a table lookup; only bytes ≥ 0x80 are
// decoded (utf8.DecodeRune: an invalid byte is RuneError of width 1, a separator).
func nextWord(data []byte, i int) (start, end int) {
	n := len(data)
	// uint(i) < uint(n) also proves i ≥ 0, so data[i] needs no bounds check.
	for uint(i) < uint(n) {
		if c := data[i]; c < utf8.RuneSelf {
			if asciiWord[c] {
				break
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		if isWordRune(r) {
			break
		}
		i += size
	}
	start = i
	for uint(i) < uint(n) {
		if c := data[i]; c < utf8.RuneSelf {
			if !asciiWord[c] {
				break
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		if !isWordRune(r) {
			break
		}
		i += size
	}
	return start, i
}

// ForEachWord calls fn with every word of data, in order. The slice fn gets aliases data and is
// valid only during the call.
func ForEachWord(data []byte, fn func(word []byte)) {
	for i := 0; ; {
		s, e := nextWord(data, i)
		if s == e {
			return
		}
		fn(data[s:e])
		i = e
	}
}

// Words returns the words of data as strings, in order. It allocates one string per word: for
// tests and small inputs; count with a Counter.
func Words(data []byte) []string {
	var words []string
	ForEachWord(data, func(w []byte) { words = append(words, string(w)) })
	return words
}

// Counter counts words. Counting a word it has seen before does not allocate: the map is only
// looked up with m[string(b)] (which the compiler does without converting), and the counts live in
// a slice. Counting straight into a map[string]int with m[string(b)]++ would allocate the key on
// every call (Go 1.26 converts the key of a map assignment, even an existing one).
// The zero value is an empty Counter, ready to use. Not safe for concurrent use.
type Counter struct {
	index  map[string]int // word → position in words and counts
	words  []string       // in first-seen order
	counts []int
}

// AddText tokenizes data and counts every word in it once.
func (c *Counter) AddText(data []byte) {
	if c.index == nil {
		c.index = make(map[string]int)
	}
	for i := 0; ; {
		s, e := nextWord(data, i)
		if s == e {
			return
		}
		w := data[s:e]
		if k, ok := c.index[string(w)]; ok {
			c.counts[k]++
		} else {
			c.insert(string(w), 1)
		}
		i = e
	}
}

// Add counts word n more times.
func (c *Counter) Add(word string, n int) {
	if k, ok := c.index[word]; ok {
		c.counts[k] += n
		return
	}
	if c.index == nil {
		c.index = make(map[string]int)
	}
	c.insert(word, n)
}

func (c *Counter) insert(word string, n int) {
	c.index[word] = len(c.words)
	c.words = append(c.words, word)
	c.counts = append(c.counts, n)
}

// Len is the number of distinct words.
func (c *Counter) Len() int { return len(c.words) }

// Total is the number of words counted, every occurrence: the sum of the counts.
func (c *Counter) Total() int {
	n := 0
	for _, k := range c.counts {
		n += k
	}
	return n
}

// Each calls fn with every distinct word and its count, in the order the words were first seen.
// It stops early when fn returns an error, and returns that error.
func (c *Counter) Each(fn func(word string, count int) error) error {
	for k, w := range c.words {
		if err := fn(w, c.counts[k]); err != nil {
			return err
		}
	}
	return nil
}

// Map returns the counts as a new map.
func (c *Counter) Map() map[string]int {
	m := make(map[string]int, len(c.words))
	for k, w := range c.words {
		m[w] = c.counts[k]
	}
	return m
}
