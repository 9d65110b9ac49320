package wc

import (
	"slices"
	"strings"
)

// sortIndexes sorts idx, indexes into words, by words[idx[j]] in byte order.
func sortIndexes(idx []int, words []string) {
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(words[a], words[b]) })
}
