package wc

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWords(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", nil},
		{"only separators", " \t\n.,;:()[]{}-+*/=<>!?\"'`", nil},
		{"ascii word at EOF", "end", []string{"end"}},
		{"ascii words", "func main() { fmt.Println(x) }", []string{"func", "main", "fmt", "Println", "x"}},
		{"case-sensitive", "Go go GO", []string{"Go", "go", "GO"}},
		{"digits and letters", "0x1F 3.14 x1 42", []string{"0x1F", "3", "14", "x1", "42"}},
		{"underscores", "_ __init__ foo_bar _x y_", []string{"_", "__init__", "foo_bar", "_x", "y_"}},
		{"punctuation", "a-b a.b a'b a\"b a/b a\\b", []string{"a", "b", "a", "b", "a", "b", "a", "b", "a", "b", "a", "b"}},
		{"latin letters", "héllo, wörld! naïve", []string{"héllo", "wörld", "naïve"}},
		{"cjk and kana", "日本語 テスト，中文。", []string{"日本語", "テスト", "中文"}},
		{"greek and a math symbol", "Ω≈ω", []string{"Ω", "ω"}},
		{"non-ASCII digits (Nd)", "٣٤ x٣", []string{"٣٤", "x٣"}},
		{"superscript two is No, not a digit", "x² y", []string{"x", "y"}},
		{"roman numeral is Nl, not a digit", "x\u216By", []string{"x", "y"}},
		{"combining mark is Mn, not a letter", "cafe\u0301s", []string{"cafe", "s"}},
		{"no-break space separates", "a\u00a0b", []string{"a", "b"}},
		{"emoji separates", "a😀b", []string{"a", "b"}},
		{"encoded U+FFFD separates", "a\uFFFDb", []string{"a", "b"}},
		{"invalid bytes separate", "\xff\xfebad\xffword", []string{"bad", "word"}},
		{"truncated rune separates", "ab\xe6\x97cd", []string{"ab", "cd"}},
		{"overlong encoding separates", "a\xc0\xafb", []string{"a", "b"}},
		{"surrogate half separates", "a\xed\xa0\x80b", []string{"a", "b"}},
		{"truncated rune at EOF", "ab\xe6\x97", []string{"ab"}},
		{"non-ASCII word at EOF", "only日本", []string{"only日本"}},
		{"non-ASCII word at start", "é+", []string{"é"}},
		{"mixed", "\tπ_r² = 3.14159;\n", []string{"π_r", "3", "14159"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Words([]byte(tt.in)))
			assert.Equal(t, tt.want, referenceWords([]byte(tt.in)))
		})
	}
}

// referenceWords is the definition written as plainly as possible: decode every rune, no table.
func referenceWords(data []byte) []string {
	var words []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			words = append(words, cur.String())
			cur.Reset()
		}
	}
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' {
			cur.Write(data[:size])
		} else {
			flush()
		}
		data = data[size:]
	}
	flush()
	return words
}

func FuzzWords(f *testing.F) {
	for _, s := range []string{"", "a", "héllo wörld", "\xff\xfeab\xe6\x97", "日本語_1 ٣", "x\u0301y", "a😀b\uFFFD"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want := referenceWords(data)
		require.Equal(t, want, Words(data))
		var c Counter
		c.AddText(data)
		wantCounts := map[string]int{}
		for _, w := range want {
			wantCounts[w]++
		}
		require.Equal(t, wantCounts, c.Map())
	})
}

func TestCounter(t *testing.T) {
	var c Counter
	c.AddText([]byte("b a b\xffc b"))
	c.Add("a", 10)
	c.Add("new", 2)
	assert.Equal(t, 4, c.Len())
	assert.Equal(t, map[string]int{"a": 11, "b": 3, "c": 1, "new": 2}, c.Map())

	var got []WordCount
	require.NoError(t, c.Each(func(w string, n int) error { got = append(got, WordCount{w, n}); return nil }))
	assert.Equal(t, []WordCount{{"b", 3}, {"a", 11}, {"c", 1}, {"new", 2}}, got, "first-seen order")

	var zero Counter
	zero.Add("x", 1) // the zero value works for Add too
	assert.Equal(t, map[string]int{"x": 1}, zero.Map())
}

func TestCounterDoesNotAllocateForSeenWords(t *testing.T) {
	text := []byte("héllo world_1 日本語 héllo\xffworld_1 x")
	var c Counter
	c.AddText(text)
	allocs := testing.AllocsPerRun(100, func() { c.AddText(text) })
	assert.Zero(t, allocs)
	// AddText ran 1 + 1 (AllocsPerRun's warm-up) + 100 times.
	assert.Equal(t, map[string]int{"héllo": 204, "world_1": 204, "日本語": 102, "x": 102}, c.Map())
}

// BenchmarkTokenize tokenizes (and counts) every 8th .go file of the default input, about a
// eighth of $GOROOT/src, held in memory.
func BenchmarkTokenize(b *testing.B) {
	dir, err := DefaultInputDir()
	if err != nil {
		b.Skip(err)
	}
	files, err := ListInputFiles(dir)
	require.NoError(b, err)
	var data [][]byte
	var total int64
	for i := 0; i < len(files); i += 8 {
		buf, err := readFile(files[i].Path, nil)
		require.NoError(b, err)
		data = append(data, buf)
		total += int64(len(buf))
	}
	b.Run("ForEachWord", func(b *testing.B) {
		b.SetBytes(total)
		n := 0
		for b.Loop() {
			for _, d := range data {
				ForEachWord(d, func([]byte) { n++ })
			}
		}
	})
	b.Run("Counter", func(b *testing.B) {
		b.SetBytes(total)
		b.ReportAllocs()
		for b.Loop() {
			var c Counter
			for _, d := range data {
				c.AddText(d)
			}
		}
	})
	b.Run("MapIncrement", func(b *testing.B) { // m[string(w)]++, for comparison
		b.SetBytes(total)
		b.ReportAllocs()
		for b.Loop() {
			m := map[string]int{}
			for _, d := range data {
				ForEachWord(d, func(w []byte) { m[string(w)]++ })
			}
		}
	})
}
